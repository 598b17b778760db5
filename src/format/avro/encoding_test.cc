// Avro binary encoding: the byte vectors of the Avro specification ("Binary Encoding")
// and the decoder's behaviour on damaged input.
#include "format/avro/encoding.h"

#include <gtest/gtest.h>

#include <limits>

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

TEST(AvroEncoding, ZigZagVarintsFromTheSpec) {
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

TEST(AvroEncoding, StringsRecordsArraysUnions) {
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

TEST(AvroEncoding, RoundTripsExtremesAndFloats) {
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

TEST(AvroEncoding, DecoderRefusesDamagedInput) {
  EXPECT_EQ(Decoder("\x80").ReadLong().status().code(), StatusCode::kCorruption);  // truncated
  EXPECT_EQ(Decoder(std::string(11, '\xff')).ReadLong().status().code(), StatusCode::kCorruption);
  // 2^32 does not fit an int.
  EXPECT_EQ(Decoder(LongBytes(1LL << 32)).ReadInt().status().code(), StatusCode::kCorruption);
  EXPECT_EQ(Decoder("\x02").ReadBoolean().status().code(), StatusCode::kCorruption);
  EXPECT_EQ(Decoder("\x01").ReadBytes().status().code(), StatusCode::kCorruption);  // length -1
  EXPECT_EQ(Decoder("\x08" "ab").ReadBytes().status().code(), StatusCode::kCorruption);  // 4 > 2
  EXPECT_EQ(Decoder("abc").ReadDouble().status().code(), StatusCode::kCorruption);
}

TEST(AvroDatum, DecodesNestedValuesWithTheWriterSchema) {
  auto schema = Schema::Parse(R"({"type":"record","name":"r","fields":[
      {"name":"id","type":"long","field-id":1},
      {"name":"tags","type":["null",{"type":"array","items":"string","element-id":3}],"field-id":2},
      {"name":"m","type":{"type":"map","values":"int"}},
      {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
      {"name":"f","type":{"type":"fixed","name":"F","size":2}}]})");
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
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
  auto v = DecodeDatum(root, &d);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(d.at_end());
  EXPECT_EQ(v->Field("id")->integer, 42);
  ASSERT_EQ(v->Field("tags")->type(), AvroType::kArray);
  ASSERT_EQ(v->Field("tags")->children.size(), 2u);
  EXPECT_EQ(v->Field("tags")->children[1].bytes, "y");
  EXPECT_EQ(v->Field("m")->keys, std::vector<std::string>{"k"});
  EXPECT_EQ(v->Field("m")->children[0].integer, 7);
  EXPECT_EQ(v->Field("e")->integer, 1);
  EXPECT_EQ(v->Field("f")->bytes, "zz");
  EXPECT_EQ(v->Field("nope"), nullptr);
}

TEST(AvroDatum, RefusesLyingCountsAndEndlessRecursion) {
  auto arr = Schema::Parse(R"({"type":"array","items":"long"})");
  ASSERT_TRUE(arr.ok());
  std::string s;
  PutLong(&s, 1LL << 40);  // claims 2^40 items in a few bytes
  PutLong(&s, 1);
  Decoder d(s);
  EXPECT_EQ(DecodeDatum((*arr)->root(), &d).status().code(), StatusCode::kCorruption);

  auto nulls = Schema::Parse(R"({"type":"array","items":"null"})");
  ASSERT_TRUE(nulls.ok());
  s.clear();
  PutLong(&s, 1LL << 40);
  Decoder d2(s);
  EXPECT_EQ(DecodeDatum((*nulls)->root(), &d2).status().code(), StatusCode::kCorruption);

  // A record that contains itself without a union encodes infinitely deep values.
  auto rec = Schema::Parse(R"({"type":"record","name":"R","fields":[{"name":"r","type":"R"}]})");
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  Decoder d3("");
  EXPECT_EQ(DecodeDatum((*rec)->root(), &d3).status().code(), StatusCode::kCorruption);
}

TEST(AvroSchema, RejectsMalformedSchemas) {
  EXPECT_FALSE(Schema::Parse("{").ok());
  EXPECT_FALSE(Schema::Parse(R"({"type":"nonsense"})").ok());
  EXPECT_FALSE(Schema::Parse(R"({"type":"record","name":"a"})").ok());
  EXPECT_FALSE(Schema::Parse(R"(["null",["int"]])").ok());
  EXPECT_FALSE(Schema::Parse(R"({"type":"record","name":"a","fields":[
      {"name":"x","type":{"type":"fixed","name":"a","size":1}}]})").ok());
  EXPECT_TRUE(Schema::Parse(R"({"type":"record","name":"n.a","fields":[
      {"name":"x","type":{"type":"fixed","name":"b","size":1}},{"name":"y","type":"n.b"},
      {"name":"z","type":"b"}]})").ok());
}

}  // namespace
}  // namespace icestream::format::avro
