// Transforms and single-value serialization: the spec's test vectors (Appendix B
// bucket hashes, Appendix D bytes) and the floor semantics before 1970.
#include "iceberg/transform.h"

#include <gtest/gtest.h>

#include "common/crypto.h"
#include "common/testing/status_assertions.h"
#include "iceberg/partition_spec.h"

namespace icestream::iceberg {
namespace {

std::string Hex(const std::string& s) { return crypto::Hex(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

std::string UuidBytes(std::string_view canonical) {
  std::string hex;
  for (char c : canonical) {
    if (c != '-') hex += c;
  }
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

TEST(BucketHashTest, SpecAppendixBVectors) {
  EXPECT_EQ(BucketHash(Literal::Int(34)), 2017239379);
  EXPECT_EQ(BucketHash(Literal::Long(34)), 2017239379);
  EXPECT_EQ(BucketHash(Literal::DecimalValue(4, 2, 1420)), -500754589);
  EXPECT_EQ(BucketHash(Literal::Date(17486)), -653330422);  // 2017-11-16
  EXPECT_EQ(BucketHash(Literal::Time(81068000000LL)), -662762989);  // 22:31:08
  EXPECT_EQ(BucketHash(Literal::Timestamp(1510871468000000LL)), -2047944441);
  EXPECT_EQ(BucketHash(Literal::TimestampTz(1510871468000001LL)), -1207196810);
  EXPECT_EQ(BucketHash(Literal::String("iceberg")), 1210000089);
  EXPECT_EQ(BucketHash(Literal::Uuid(UuidBytes("f79c3e09-677c-4bbd-a479-3f349cb785e7"))), 1488055340);
  EXPECT_EQ(BucketHash(Literal::Binary(std::string("\x00\x01\x02\x03", 4))), -188683207);
}

TEST(TransformsTest, TemporalTransformsFloorBefore1970) {
  auto apply = [](Transform t, Literal v) { return **ApplyTransform(t, v); };
  // 2017-11-16T22:31:08Z
  Literal ts = Literal::TimestampTz(1510871468000000LL);
  EXPECT_EQ(apply(Transform::Year(), ts).as_int(), 47);
  EXPECT_EQ(apply(Transform::Month(), ts).as_int(), 47 * 12 + 10);
  EXPECT_EQ(apply(Transform::Day(), ts), Literal::Date(17486));
  EXPECT_EQ(apply(Transform::Hour(), ts).as_int(), 419686);
  // One microsecond before the epoch belongs to 1969-12-31 23:00.
  Literal before = Literal::Timestamp(-1);
  EXPECT_EQ(apply(Transform::Day(), before), Literal::Date(-1));
  EXPECT_EQ(apply(Transform::Hour(), before).as_int(), -1);
  EXPECT_EQ(apply(Transform::Year(), before).as_int(), -1);
  EXPECT_EQ(apply(Transform::Month(), Literal::Date(-1)).as_int(), -1);
  EXPECT_EQ(TransformHumanString(Transform::Hour(), Literal::Int(419686)), "2017-11-16-22");
  EXPECT_EQ(TransformHumanString(Transform::Day(), Literal::Date(17486)), "2017-11-16");
  EXPECT_EQ(TransformHumanString(Transform::Month(), Literal::Int(-1)), "1969-12");
  EXPECT_EQ(TransformHumanString(Transform::Year(), Literal::Int(47)), "2017");
  EXPECT_EQ(TransformHumanString(Transform::Day(), std::nullopt), "null");
}

TEST(TransformsTest, TruncateAndBucketAndNulls) {
  auto apply = [](Transform t, Literal v) { return **ApplyTransform(t, v); };
  EXPECT_EQ(apply(Transform::Truncate(10), Literal::Int(-1)).as_int(), -10);
  EXPECT_EQ(apply(Transform::Truncate(10), Literal::Long(19)).as_long(), 10);
  EXPECT_EQ(apply(Transform::Truncate(50), Literal::DecimalValue(9, 2, 1065)).as_decimal(), 1050);
  EXPECT_EQ(apply(Transform::Truncate(3), Literal::String("i\xc3\xa7" "eberg")).as_bytes(), "i\xc3\xa7" "e");
  EXPECT_EQ(apply(Transform::Truncate(2), Literal::Binary("abc")).as_bytes(), "ab");
  EXPECT_EQ(apply(Transform::Bucket(16), Literal::Int(34)).as_int(), (2017239379 & 0x7FFFFFFF) % 16);
  EXPECT_FALSE(ApplyTransform(Transform::Day(), std::nullopt)->has_value());
  EXPECT_FALSE(ApplyTransform(Transform::Void(), Literal::Int(3))->has_value());
  EXPECT_STATUS(kInvalidArgument, ApplyTransform(Transform::Hour(), Literal::Date(3)));
}

TEST(TransformsTest, ParseAndName) {
  for (std::string n : {"identity", "bucket[16]", "truncate[4]", "year", "month", "day", "hour", "void"}) {
    auto t = ParseTransform(n);
    ASSERT_OK(t) << n;
    EXPECT_EQ(TransformName(*t), n);
  }
  EXPECT_EQ(ParseTransform("bucket[ 8 ]")->param, 8);
  EXPECT_STATUS(kInvalidArgument, ParseTransform("bucket[0]"));
  EXPECT_STATUS(kInvalidArgument, ParseTransform("truncate[x]"));
  EXPECT_EQ(ParseTransform("zorder")->kind, TransformKind::kUnknown);
  EXPECT_EQ(TransformResultType(Transform::Day(), Primitive(TypeId::kTimestamp))->id, TypeId::kDate);
  EXPECT_EQ(TransformResultType(Transform::Bucket(4), Primitive(TypeId::kString))->id, TypeId::kInt);
  EXPECT_STATUS(kInvalidArgument,
                TransformResultType(Transform::Bucket(4), Primitive(TypeId::kDouble)));
}

TEST(SingleValueTest, AppendixDBytes) {
  EXPECT_EQ(Hex(ToBytes(Literal::Boolean(true))), "01");
  EXPECT_EQ(Hex(ToBytes(Literal::Int(1))), "01000000");
  EXPECT_EQ(Hex(ToBytes(Literal::Long(-2))), "feffffffffffffff");
  EXPECT_EQ(Hex(ToBytes(Literal::Float(1.0f))), "0000803f");
  EXPECT_EQ(Hex(ToBytes(Literal::Double(-0.0))), "0000000000000080");
  EXPECT_EQ(ToBytes(Literal::String("iceberg")), "iceberg");
  EXPECT_EQ(Hex(ToBytes(Literal::DecimalValue(4, 2, 1420))), "058c");
  EXPECT_EQ(Hex(ToBytes(Literal::DecimalValue(9, 2, -1))), "ff");
  EXPECT_EQ(Hex(ToBytes(Literal::DecimalValue(9, 2, 128))), "0080");
  EXPECT_EQ(Hex(ToBytes(Literal::DecimalValue(9, 2, -129))), "ff7f");
  for (const Literal& l : {Literal::Boolean(false), Literal::Int(-7), Literal::Long(1LL << 40),
                           Literal::Float(2.5f), Literal::Double(1e300), Literal::Date(-5),
                           Literal::TimestampTz(-1), Literal::String("x"),
                           Literal::DecimalValue(20, 3, -123456789012345LL)}) {
    ASSERT_OK_AND_ASSIGN(auto back, FromBytes(l.type, ToBytes(l)));
    EXPECT_EQ(back, l);
  }
  // A 4-byte bound on a long column (written before an int -> long promotion).
  EXPECT_EQ(FromBytes(Primitive(TypeId::kLong), ToBytes(Literal::Int(-3)))->as_long(), -3);
  EXPECT_STATUS(kInvalidArgument, FromBytes(Primitive(TypeId::kInt), "abc"));
  EXPECT_STATUS(kInvalidArgument, FromBytes(Primitive(TypeId::kUuid), "abc"));
  EXPECT_EQ(DecimalRequiredBytes(9), 4);
  EXPECT_EQ(DecimalRequiredBytes(10), 5);
  EXPECT_EQ(DecimalRequiredBytes(38), 16);
}

TEST(SingleValueTest, OrderingRules) {
  EXPECT_LT(Compare(Literal::Double(-0.0), Literal::Double(0.0)), 0);
  EXPECT_LT(Compare(Literal::String("a"), Literal::String("\xc3\xa9")), 0);  // unsigned bytes
  EXPECT_GT(Compare(Literal::Long(5), Literal::Long(-5)), 0);
  EXPECT_EQ(ToHumanString(Literal::DecimalValue(9, 2, -5)), "-0.05");
  EXPECT_EQ(ToHumanString(Literal::TimestampTz(1510871468000001LL)), "2017-11-16T22:31:08.000001+00:00");
}

TEST(PartitionSpecsTest, TypeAndPath) {
  Schema schema;
  schema.fields = {{1, "id", true, Primitive(TypeId::kLong), ""},
                   {2, "ts", false, Primitive(TypeId::kTimestampTz), ""},
                   {3, "kind", false, Primitive(TypeId::kString), ""}};
  PartitionSpec spec;
  spec.fields = {{2, 1000, "ts_day", Transform::Day()}, {3, 1001, "kind", Transform::Identity()},
                 {1, 1002, "id_bucket", Transform::Bucket(8)}};
  ASSERT_OK(ValidatePartitionSpec(spec, schema));
  ASSERT_OK_AND_ASSIGN(auto type, PartitionType(spec, schema));
  EXPECT_EQ(type[0].type.id, TypeId::kDate);
  EXPECT_EQ(type[0].id, 1000);
  EXPECT_FALSE(type[0].required);
  EXPECT_EQ(PartitionPath(spec, {Literal::Date(17486), Literal::String("a/b c"), std::nullopt}),
            "ts_day=2017-11-16/kind=a%2Fb+c/id_bucket=null");
  PartitionSpec clash = spec;
  clash.fields[0].name = "kind";
  EXPECT_STATUS(kInvalidArgument, ValidatePartitionSpec(clash, schema));
  PartitionSpec wrong;
  wrong.fields = {{3, 1000, "kind_hour", Transform::Hour()}};
  EXPECT_STATUS(kInvalidArgument, ValidatePartitionSpec(wrong, schema));
}

}  // namespace
}  // namespace icestream::iceberg
