// Avro binary encoding: the byte vectors of the Avro specification ("Binary Encoding")
// and the decoder's behaviour on damaged input.
#include "format/avro/encoding.h"

#include <gtest/gtest.h>

#include <limits>

#include "common/testing/status_assertions.h"
#include "format/avro/datum.h"
#include "format/avro/schema.h"

namespace icestream::format::avro {
namespace {

std::string Hex(std::string_view s) {
  static const char* d = "0123456789abcdef";
  std::string h;
  for (unsigned char c : s) {
    if (!h.empty()) h += ' ';
    h += d[c >> 4];
    h += d[c & 15];
  }
  return h;
}

std::string LongBytes(int64_t v) {
  std::string s;
  PutLong(&s, v);
  return s;
}

TEST(AvroEncodingTest, ZigZagVarintsFromTheSpec) {
  EXPECT_EQ(Hex(LongBytes(0)), "00");
  EXPECT_EQ(Hex(LongBytes(-1)), "01");
  EXPECT_EQ(Hex(LongBytes(1)), "02");
  EXPECT_EQ(Hex(LongBytes(-2)), "03");
  EXPECT_EQ(Hex(LongBytes(2)), "04");
  EXPECT_EQ(Hex(LongBytes(-64)), "7f");
  EXPECT_EQ(Hex(LongBytes(64)), "80 01");
  EXPECT_EQ(LongBytes(std::numeric_limits<int64_t>::max()).size(), 10u);
  EXPECT_EQ(LongBytes(std::numeric_limits<int64_t>::min()).size(), 10u);
}

TEST(AvroEncodingTest, StringsRecordsArraysUnions) {
  std::string s;
  PutString(&s, "foo");
  EXPECT_EQ(Hex(s), "06 66 6f 6f");
  // Record {a: long 27, b: string "foo"} (spec example).
  s.clear();
  PutLong(&s, 27);
  PutString(&s, "foo");
  EXPECT_EQ(Hex(s), "36 06 66 6f 6f");
  // Array of longs [3, 27]: one block of 2, then the end marker.
  s.clear();
  PutLong(&s, 2);
  PutLong(&s, 3);
  PutLong(&s, 27);
  PutLong(&s, 0);
  EXPECT_EQ(Hex(s), "04 06 36 00");
  // ["null","string"]: null, then "a".
  s.clear();
  PutUnionBranch(&s, 0);
  PutUnionBranch(&s, 1);
  PutString(&s, "a");
  EXPECT_EQ(Hex(s), "00 02 02 61");
}

TEST(AvroEncodingTest, RoundTripsExtremesAndFloats) {
  std::string s;
  const int64_t longs[] = {0, 1, -1, 63, -64, 64, 1 << 20, -(1LL << 40),
                           std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
  for (int64_t v : longs) PutLong(&s, v);
  PutInt(&s, std::numeric_limits<int32_t>::min());
  PutFloat(&s, -1.5f);
  PutDouble(&s, 3.25);
  PutBoolean(&s, true);
  PutBytes(&s, std::string("\0\xff", 2));
  Decoder d(s);
  for (int64_t v : longs) EXPECT_EQ(*d.ReadLong(), v);
  EXPECT_EQ(*d.ReadInt(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(*d.ReadFloat(), -1.5f);
  EXPECT_EQ(*d.ReadDouble(), 3.25);
  EXPECT_TRUE(*d.ReadBoolean());
  EXPECT_EQ(*d.ReadBytes(), std::string_view("\0\xff", 2));
  EXPECT_TRUE(d.at_end());
}

TEST(AvroEncodingTest, DecoderRefusesDamagedInput) {
  EXPECT_STATUS(kCorruption, Decoder("\x80").ReadLong());  // truncated
  EXPECT_STATUS(kCorruption, Decoder(std::string(11, '\xff')).ReadLong());
  // 2^32 does not fit an int.
  EXPECT_STATUS(kCorruption, Decoder(LongBytes(1LL << 32)).ReadInt());
  EXPECT_STATUS(kCorruption, Decoder("\x02").ReadBoolean());
  EXPECT_STATUS(kCorruption, Decoder("\x01").ReadBytes());  // length -1
  EXPECT_STATUS(kCorruption, Decoder("\x08"
                                     "ab")
                                 .ReadBytes());  // 4 > 2
  EXPECT_STATUS(kCorruption, Decoder("abc").ReadDouble());
}

TEST(AvroDatumTest, DecodesNestedValuesWithTheWriterSchema) {
  auto schema = Schema::Parse(R"({"type":"record","name":"r","fields":[
      {"name":"id","type":"long","field-id":1},
      {"name":"tags","type":["null",{"type":"array","items":"string","element-id":3}],"field-id":2},
      {"name":"m","type":{"type":"map","values":"int"}},
      {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
      {"name":"f","type":{"type":"fixed","name":"F","size":2}}]})");
  ASSERT_OK(schema);
  const Node& root = (*schema)->root();
  EXPECT_EQ(root.fields[0].field_id, 1);
  EXPECT_EQ(root.fields[1].type->branches[1]->element_id, 3);
  std::string s;
  PutLong(&s, 42);
  PutUnionBranch(&s, 1);
  PutLong(&s, -2);  // a block of 2 items with its byte size
  PutLong(&s, 4);
  PutString(&s, "x");
  PutString(&s, "y");
  PutLong(&s, 0);
  PutLong(&s, 1);
  PutString(&s, "k");
  PutInt(&s, 7);
  PutLong(&s, 0);
  PutInt(&s, 1);
  PutFixed(&s, "zz");
  Decoder d(s);
  ASSERT_OK_AND_ASSIGN(auto v, DecodeDatum(root, &d));
  EXPECT_TRUE(d.at_end());
  EXPECT_EQ(v.Field("id")->integer, 42);
  ASSERT_EQ(v.Field("tags")->type(), AvroType::kArray);
  ASSERT_EQ(v.Field("tags")->children.size(), 2u);
  EXPECT_EQ(v.Field("tags")->children[1].bytes, "y");
  EXPECT_EQ(v.Field("m")->keys, std::vector<std::string>{"k"});
  EXPECT_EQ(v.Field("m")->children[0].integer, 7);
  EXPECT_EQ(v.Field("e")->integer, 1);
  EXPECT_EQ(v.Field("f")->bytes, "zz");
  EXPECT_EQ(v.Field("nope"), nullptr);
}

TEST(AvroDatumTest, RefusesLyingCountsAndEndlessRecursion) {
  auto arr = Schema::Parse(R"({"type":"array","items":"long"})");
  ASSERT_OK(arr);
  std::string s;
  PutLong(&s, 1LL << 40);  // claims 2^40 items in a few bytes
  PutLong(&s, 1);
  Decoder d(s);
  EXPECT_STATUS(kCorruption, DecodeDatum((*arr)->root(), &d));

  auto nulls = Schema::Parse(R"({"type":"array","items":"null"})");
  ASSERT_OK(nulls);
  s.clear();
  PutLong(&s, 1LL << 40);
  Decoder d2(s);
  EXPECT_STATUS(kCorruption, DecodeDatum((*nulls)->root(), &d2));

  // A record that contains itself without a union encodes infinitely deep values.
  auto rec = Schema::Parse(R"({"type":"record","name":"R","fields":[{"name":"r","type":"R"}]})");
  ASSERT_OK(rec);
  Decoder d3("");
  EXPECT_STATUS(kCorruption, DecodeDatum((*rec)->root(), &d3));
}

TEST(AvroSchemaTest, RejectsMalformedSchemas) {
  EXPECT_STATUS(kInvalidArgument, Schema::Parse("{"));
  EXPECT_STATUS(kInvalidArgument, Schema::Parse(R"({"type":"nonsense"})"));
  EXPECT_STATUS(kInvalidArgument, Schema::Parse(R"({"type":"record","name":"a"})"));
  EXPECT_STATUS(kInvalidArgument, Schema::Parse(R"(["null",["int"]])"));
  EXPECT_STATUS(kInvalidArgument, Schema::Parse(R"({"type":"record","name":"a","fields":[
      {"name":"x","type":{"type":"fixed","name":"a","size":1}}]})"));
  EXPECT_OK(Schema::Parse(R"({"type":"record","name":"n.a","fields":[
      {"name":"x","type":{"type":"fixed","name":"b","size":1}},{"name":"y","type":"n.b"},
      {"name":"z","type":"b"}]})"));
}

}  // namespace
}  // namespace icestream::format::avro
