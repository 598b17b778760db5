// Byte-exact tests of the Thrift compact encoder and the Parquet metadata structs,
// against byte strings verified with Apache Thrift's own TCompactProtocol (formats.md
// A.2) and the compact-protocol spec.
#include "format/parquet/thrift_compact.h"

#include <gtest/gtest.h>

#include "format/parquet/metadata.h"
#include "format/parquet/test_hex.h"

namespace icestream::format::parquet {
namespace {

TEST(CompactWriterTest, Varints) {
  std::string out;
  CompactWriter w(&out);
  w.Varint(50399);
  EXPECT_BYTES_EQ("df 89 03", out);
  out.clear();
  w.ZigZag32(0);
  w.ZigZag32(-1);
  w.ZigZag32(1);
  w.ZigZag32(-2);
  w.ZigZag32(INT32_MIN);
  EXPECT_BYTES_EQ("00 01 02 03 ff ff ff ff 0f", out);
  out.clear();
  w.ZigZag64(INT64_MAX);
  EXPECT_BYTES_EQ("fe ff ff ff ff ff ff ff ff 01", out);
}

TEST(CompactWriterTest, FieldsShortAndLongHeaders) {
  std::string out;
  CompactWriter w(&out);
  w.BeginStruct();
  w.FieldI16(4, 3);        // delta 4: 44 06
  w.FieldI32(7, 0);        // delta 3: 35 00
  w.FieldI32(20, -1);      // id 20 after 7: delta 13 fits: d5 01
  w.FieldI64(40, 300);     // delta 20 > 15: long form 06 50 d8 04
  w.FieldI32(2, 1);        // backwards: long form 05 04 02
  w.FieldDouble(3, 1.0);   // 17 then 8 LE bytes
  w.FieldBool(4, true);    // 11
  w.FieldBool(5, false);   // 12
  w.FieldI8(6, -3);        // 13 fd (raw byte)
  w.FieldBinary(7, "ab");  // 18 02 61 62
  w.EndStruct();
  EXPECT_BYTES_EQ(
      "44 06 35 00 d5 01 06 50 d8 04 05 04 02 17 00 00 00 00 00 00 f0 3f 11 12 13 fd 18 02 61 62 00",
      out);
}

TEST(CompactWriterTest, ListsAndNestedStructs) {
  std::string out;
  CompactWriter w(&out);
  w.BeginStruct();
  w.FieldListBegin(1, CType::kBoolTrue, 3);
  w.ElemBool(true);
  w.ElemBool(false);
  w.ElemBool(true);
  w.FieldListBegin(2, CType::kStruct, 20);
  for (int i = 0; i < 20; ++i) {
    w.ElemStructBegin();
    w.FieldI32(1, i);
    w.EndStruct();
  }
  w.FieldStructBegin(3);  // delta 1 from 2, nested ids restart at 0
  w.FieldI32(1, 5);
  w.EndStruct();
  w.FieldI32(4, 1);  // delta 1 from 3: the outer id was restored
  w.EndStruct();
  std::string expect = "19 31 01 02 01 19 fc 14";
  for (int i = 0; i < 20; ++i) {
    char b[16];
    std::snprintf(b, sizeof b, " 15 %02x 00", i * 2);
    expect += b;
  }
  expect += " 1c 15 0a 00 15 02 00";
  EXPECT_BYTES_EQ(expect, out);
}

TEST(MetadataTest, SchemaElementTimestamp) {
  // formats.md A.2 "Verified example", checked against Apache Thrift 0.17.
  SchemaElement e;
  e.type = PhysicalType::kInt64;
  e.repetition_type = Repetition::kOptional;
  e.name = "ts";
  e.converted_type = ConvertedType::kTimestampMicros;
  e.field_id = 5;
  e.logical_type.kind = LogicalType::Kind::kTimestamp;
  e.logical_type.adjusted_to_utc = true;
  std::string out;
  SerializeSchemaElement(e, &out);
  EXPECT_BYTES_EQ("15 04 25 02 18 02 74 73 25 14 35 0a 1c 8c 11 1c 2c 00 00 00 00 00", out);
}

TEST(MetadataTest, SchemaElementDecimalAndUuid) {
  SchemaElement d;
  d.type = PhysicalType::kFixedLenByteArray;
  d.type_length = 16;
  d.repetition_type = Repetition::kRequired;
  d.name = "p";
  d.converted_type = ConvertedType::kDecimal;
  d.scale = 3;
  d.precision = 38;
  d.field_id = 1;
  d.logical_type = {LogicalType::Kind::kDecimal, 3, 38, false};
  std::string out;
  SerializeSchemaElement(d, &out);
  // type 7, len 16, rep 0, name, converted 5, scale 3, precision 38, id 1,
  // logicalType{5: DecimalType{1: scale 3, 2: precision 38}}.
  EXPECT_BYTES_EQ("15 0e 15 20 15 00 18 01 70 25 0a 15 06 15 4c 15 02 1c 5c 15 06 15 4c 00 00 00",
                  out);
  SchemaElement u;
  u.type = PhysicalType::kFixedLenByteArray;
  u.type_length = 16;
  u.repetition_type = Repetition::kOptional;
  u.name = "u";
  u.field_id = 2;
  u.logical_type.kind = LogicalType::Kind::kUuid;
  out.clear();
  SerializeSchemaElement(u, &out);
  // ... field_id (9, long jump from 4: delta 5), logicalType member 14 UUIDType{}.
  EXPECT_BYTES_EQ("15 0e 15 20 15 02 18 01 75 55 04 1c ec 00 00 00", out);
}

TEST(MetadataTest, PageHeaders) {
  PageHeader h;
  h.type = PageType::kDataPage;
  h.uncompressed_page_size = 100;
  h.compressed_page_size = 60;
  h.data_page_header = DataPageHeader{10, Encoding::kRleDictionary, Encoding::kRle, Encoding::kRle};
  std::string out;
  SerializePageHeader(h, &out);
  EXPECT_BYTES_EQ("15 00 15 c8 01 15 78 2c 15 14 15 10 15 06 15 06 00 00", out);
  PageHeader d;
  d.type = PageType::kDictionaryPage;
  d.uncompressed_page_size = 8;
  d.compressed_page_size = 8;
  d.dictionary_page_header = DictionaryPageHeader{2, Encoding::kPlain};
  out.clear();
  SerializePageHeader(d, &out);
  EXPECT_BYTES_EQ("15 04 15 10 15 10 4c 15 04 15 00 00 00", out);
}

}  // namespace
}  // namespace icestream::format::parquet
