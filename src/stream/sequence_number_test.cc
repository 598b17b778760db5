#include "stream/sequence_number.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace icestream::stream {
namespace {

TEST(SequenceNumberTest, RoundTripAndOrder) {
  auto a = SequenceNumber::ForRecord(123456789012345, 7, 0);
  auto b = SequenceNumber::ForRecord(123456789012345, 7, 1);
  auto c = SequenceNumber::ForRecord(123456789012345, 7, 10);
  std::string sa = a.ToString(), sb = b.ToString(), sc = c.ToString();
  EXPECT_EQ(sa.size(), kSequenceNumberDigits);
  EXPECT_EQ(sa[0], '4');
  EXPECT_LT(sa, sb);
  EXPECT_LT(sb, sc);
  EXPECT_LT(SequenceNumber::ShardStart(123456789012345, 7).ToString(), sa);
  auto p = SequenceNumber::Parse(sc);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->stream_uid, 123456789012345u);
  EXPECT_EQ(p->shard_index, 7u);
  EXPECT_EQ(p->position, 11u);
}

TEST(SequenceNumberTest, RejectsDamage) {
  std::string s = SequenceNumber::ForRecord(100000000000001, 2, 99).ToString();
  EXPECT_FALSE(SequenceNumber::Parse(s.substr(1)));
  EXPECT_FALSE(SequenceNumber::Parse("1"));
  for (size_t i = 1; i < s.size(); ++i) {
    std::string t = s;
    t[i] = t[i] == '9' ? '0' : static_cast<char>(t[i] + 1);
    EXPECT_FALSE(SequenceNumber::Parse(t)) << i;
  }
  std::string x = s;
  x[10] = 'a';
  EXPECT_FALSE(SequenceNumber::Parse(x));
}

// Sequence numbers already handed out stay what they were: these were written by the
// codec before AppendTo went through ShardSequenceWriter.
TEST(SequenceNumberTest, KnownNumbersAreWrittenAsBefore) {
  EXPECT_EQ(SequenceNumber::ForRecord(123456789012345, 7, 0).ToString(),
            "41234567890123450000000007000000000000000000018153800937");
  EXPECT_EQ((SequenceNumber{kMaxStreamUid, UINT32_MAX, 9999999999999999999u}).ToString(),
            "49999999999999994294967295099999999999999999999202135538");
}

// The shard writer writes what AppendTo does, for runs (carries through 9, 99, ...), jumps
// back and forth, and the ends of the position's range.
TEST(ShardSequenceWriterTest, WritesWhatAppendToWrites) {
  std::vector<uint64_t> positions;
  for (uint64_t start : std::initializer_list<uint64_t>{0, 7, 95, 999990, 9999999999999999990u}) {
    for (uint64_t p = start; p < start + 25; ++p) positions.push_back(p);
  }
  for (uint64_t p :
       std::initializer_list<uint64_t>{5, 5, 4, 1000, 10, UINT64_MAX - 1, UINT64_MAX}) {
    positions.push_back(p);
  }
  for (uint64_t uid :
       std::initializer_list<uint64_t>{kMinStreamUid, 123456789012345, kMaxStreamUid}) {
    for (uint32_t shard : {0u, 9u, UINT32_MAX}) {
      ShardSequenceWriter w(uid, shard);
      std::string got, want;
      for (uint64_t p : positions) {
        w.Append(p, &got);
        SequenceNumber{uid, shard, p}.AppendTo(&want);
      }
      ASSERT_EQ(got, want) << uid << " " << shard;
      std::string rec;
      w.AppendRecord(41, &rec);
      EXPECT_EQ(rec, SequenceNumber::ForRecord(uid, shard, 41).ToString());
    }
  }
}

}  // namespace
}  // namespace icestream::stream
