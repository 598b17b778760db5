#include "stream/sequence_number.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace icestream::stream
