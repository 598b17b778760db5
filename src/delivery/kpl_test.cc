// KPL aggregates built by a test-side encoder (protobuf wire format by hand): user
// records with partition and explicit hash keys come back in order; every damage is
// kCorrupt; anything without the magic is plain.
#include "delivery/kpl.h"

#include <gtest/gtest.h>

#include "common/crypto.h"

namespace icestream::delivery {
namespace {

std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string Field(uint32_t field, std::string_view bytes) {
  return Varint(field << 3 | 2) + Varint(bytes.size()) + std::string(bytes);
}
std::string FieldVarint(uint32_t field, uint64_t v) { return Varint(field << 3) + Varint(v); }

std::string Wrap(const std::string& body) {
  auto md5 = crypto::Md5(body);
  return std::string(kKplMagic) + body +
         std::string(reinterpret_cast<const char*>(md5.data()), md5.size());
}

std::string Aggregate() {
  std::string body = Field(1, "pk-a") + Field(1, "pk-b") + Field(2, "123456789");
  body += Field(3, FieldVarint(1, 1) + Field(3, R"({"n":1})"));
  body += Field(3, FieldVarint(1, 0) + FieldVarint(2, 0) + Field(3, R"({"n":2})") +
                       Field(4, Field(1, "tag") + Field(2, "v")));
  body += Field(3, FieldVarint(1, 0) + Field(3, ""));
  return Wrap(body);
}

TEST(Kpl, UserRecordsComeBackInOrder) {
  std::string agg = Aggregate();
  KplAggregate a = Deaggregate(agg);
  ASSERT_EQ(a.kind, KplAggregate::Kind::kAggregate) << a.error;
  ASSERT_EQ(a.records.size(), 3u);
  EXPECT_EQ(a.records[0].partition_key, "pk-b");
  EXPECT_EQ(a.records[0].data, R"({"n":1})");
  EXPECT_EQ(a.records[1].partition_key, "pk-a");
  EXPECT_EQ(a.records[1].explicit_hash_key, "123456789");
  EXPECT_EQ(a.records[1].data, R"({"n":2})");
  EXPECT_EQ(a.records[2].data, "");
}

TEST(Kpl, PlainRecordsAreLeftAlone) {
  EXPECT_EQ(Deaggregate(R"({"a":1})").kind, KplAggregate::Kind::kPlain);
  EXPECT_EQ(Deaggregate("").kind, KplAggregate::Kind::kPlain);
  EXPECT_EQ(Deaggregate("\xF3\x89\x9A").kind, KplAggregate::Kind::kPlain);  // a prefix of the magic
}

TEST(Kpl, DamageIsCorrupt) {
  std::string good = Aggregate();
  std::string bad_md5 = good;
  bad_md5.back() ^= 1;
  EXPECT_EQ(Deaggregate(bad_md5).kind, KplAggregate::Kind::kCorrupt);
  EXPECT_NE(Deaggregate(bad_md5).error.find("MD5"), std::string::npos);
  std::string flipped = good;
  flipped[10] ^= 0x40;  // inside the protobuf: the MD5 no longer matches
  EXPECT_EQ(Deaggregate(flipped).kind, KplAggregate::Kind::kCorrupt);
  EXPECT_EQ(Deaggregate(std::string(kKplMagic) + "short").kind, KplAggregate::Kind::kCorrupt);
  // Well-formed MD5 over bad protobuf: an index out of the table, a record without data,
  // a length past the end, no records at all.
  EXPECT_EQ(Deaggregate(Wrap(Field(1, "k") + Field(3, FieldVarint(1, 5) + Field(3, "x")))).kind,
            KplAggregate::Kind::kCorrupt);
  EXPECT_EQ(Deaggregate(Wrap(Field(1, "k") + Field(3, FieldVarint(1, 0)))).kind,
            KplAggregate::Kind::kCorrupt);
  EXPECT_EQ(Deaggregate(Wrap(Varint(3 << 3 | 2) + Varint(1000) + "abc")).kind,
            KplAggregate::Kind::kCorrupt);
  EXPECT_EQ(Deaggregate(Wrap(Field(1, "k"))).kind, KplAggregate::Kind::kCorrupt);
  // Every truncation of a good aggregate is refused, never read past.
  for (size_t n = 4; n < good.size(); ++n) {
    EXPECT_NE(Deaggregate(std::string_view(good).substr(0, n)).kind, KplAggregate::Kind::kAggregate)
        << n;
  }
}

}  // namespace
}  // namespace icestream::delivery
