// Tests of the Thrift compact decoder and metadata parsing: the verified byte examples
// of formats.md A.2, serialize -> parse round trips of every modelled field, skipping
// of unknown fields of every type, and refusal of truncated, over-long and over-deep
// input.
#include <gtest/gtest.h>

#include "common/testing/status_assertions.h"
#include "format/parquet/metadata.h"
#include "format/parquet/test_hex.h"
#include "format/parquet/thrift_compact.h"
#include "format/parquet/thrift_compact_reader.h"

namespace icestream::format::parquet {
namespace {

using testing::Unhex;

TEST(CompactReaderTest, VerifiedExamples) {
  // SchemaElement{type=INT64, repetition=OPTIONAL, name="ts", converted=TIMESTAMP_MICROS,
  // field_id=5, logicalType=TIMESTAMP(true, MICROS)} inside a FileMetaData's schema list.
  std::string elem = Unhex("15 04 25 02 18 02 74 73 25 14 35 0A 1C 8C 11 1C 2C 00 00 00 00 00");
  std::string footer;
  CompactWriter w(&footer);
  w.BeginStruct();
  w.FieldI32(1, 1);
  w.FieldListBegin(2, CType::kStruct, 1);
  footer += elem;
  w.FieldI64(3, 0);
  w.FieldListBegin(4, CType::kStruct, 0);
  w.EndStruct();
  ASSERT_OK_AND_ASSIGN(auto m, ParseFileMetaData(footer));
  ASSERT_EQ(m.schema.size(), 1u);
  const SchemaElement& e = m.schema[0];
  EXPECT_EQ(e.type, PhysicalType::kInt64);
  EXPECT_EQ(e.repetition_type, Repetition::kOptional);
  EXPECT_EQ(e.name, "ts");
  EXPECT_EQ(e.converted_type, ConvertedType::kTimestampMicros);
  EXPECT_EQ(e.field_id, 5);
  EXPECT_EQ(e.logical_type.kind, LogicalType::Kind::kTimestamp);
  EXPECT_TRUE(e.logical_type.adjusted_to_utc);
  EXPECT_EQ(e.logical_type.unit, LogicalType::Unit::kMicros);

  // list<bool>[t,f,t] as field 1 = 19 31 01 02 01; i32 0 as field 8; i32 -1 as field 20 in
  // the long form (05, zigzag id 28).
  const std::string bytes = Unhex("19 31 01 02 01 75 00 05 28 01 00");  // outlives the reader
  CompactReader r(bytes);
  ASSERT_OK(r.BeginStruct());
  int16_t id;
  CType t;
  bool stop;
  ASSERT_OK(r.ReadFieldHeader(&id, &t, &stop));
  EXPECT_EQ(id, 1);
  CType elem_type;
  uint32_t n;
  ASSERT_OK(r.BeginList(&elem_type, &n));
  EXPECT_EQ(n, 3u);
  bool b[3];
  for (bool& x : b) ASSERT_OK(r.ReadBoolElement(&x));
  EXPECT_TRUE(b[0] && !b[1] && b[2]);
  r.EndList();
  ASSERT_OK(r.ReadFieldHeader(&id, &t, &stop));
  EXPECT_EQ(id, 8);
  int32_t i32;
  ASSERT_OK(r.ReadI32(&i32));
  EXPECT_EQ(i32, 0);
  ASSERT_OK(r.ReadFieldHeader(&id, &t, &stop));  // long form: id 20
  EXPECT_EQ(id, 20);
  ASSERT_OK(r.ReadI32(&i32));
  EXPECT_EQ(i32, -1);
}

FileMetaData FullMetaData() {
  FileMetaData m;
  m.version = 2;
  SchemaElement root;
  root.name = "table";
  root.num_children = 2;
  m.schema.push_back(root);
  SchemaElement a;
  a.name = "a";
  a.type = PhysicalType::kFixedLenByteArray;
  a.type_length = 9;
  a.repetition_type = Repetition::kOptional;
  a.converted_type = ConvertedType::kDecimal;
  a.scale = 2;
  a.precision = 20;
  a.field_id = 7;
  a.logical_type = {LogicalType::Kind::kDecimal, 2, 20};
  m.schema.push_back(a);
  SchemaElement b;
  b.name = "b";
  b.type = PhysicalType::kInt32;
  b.repetition_type = Repetition::kRequired;
  b.logical_type.kind = LogicalType::Kind::kInteger;
  b.logical_type.bit_width = 16;
  b.logical_type.is_signed = false;
  m.schema.push_back(b);
  m.num_rows = 1LL << 40;
  RowGroup rg;
  ColumnChunk c;
  c.file_offset = 0;
  c.meta_data.type = PhysicalType::kFixedLenByteArray;
  c.meta_data.encodings = {Encoding::kPlain, Encoding::kRle, Encoding::kRleDictionary};
  c.meta_data.path_in_schema = {"a"};
  c.meta_data.codec = Codec::kZstd;
  c.meta_data.num_values = 123;
  c.meta_data.total_uncompressed_size = 4567;
  c.meta_data.total_compressed_size = 890;
  c.meta_data.data_page_offset = 40;
  c.meta_data.dictionary_page_offset = 4;
  Statistics s;
  s.max = "x";
  s.min = "a";
  s.null_count = 3;
  s.distinct_count = 9;
  s.max_value = "zz";
  s.min_value = "";
  s.is_max_value_exact = false;
  s.is_min_value_exact = true;
  s.nan_count = 0;
  c.meta_data.statistics = s;
  c.meta_data.encoding_stats = {{PageType::kDictionaryPage, Encoding::kPlain, 1},
                                {PageType::kDataPage, Encoding::kRleDictionary, 2}};
  rg.columns = {c, c};
  rg.total_byte_size = 5000;
  rg.num_rows = 1LL << 40;
  rg.file_offset = 4;
  rg.total_compressed_size = 1800;
  rg.ordinal = 0;
  m.row_groups = {rg};
  m.key_value_metadata = {{"iceberg.schema", "{}"}, {"k", ""}};
  m.created_by = "test";
  m.num_leaf_columns = 2;
  return m;
}

TEST(MetadataParseTest, FileMetaDataRoundTrip) {
  FileMetaData m = FullMetaData();
  std::string bytes;
  SerializeFileMetaData(m, &bytes);
  ASSERT_OK_AND_ASSIGN(auto back, ParseFileMetaData(bytes));
  EXPECT_EQ(back, m);
  // Every truncation is a clean corruption error.
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = ParseFileMetaData(std::string_view(bytes).substr(0, n));
    ASSERT_STATUS(kCorruption, r) << n;
    EXPECT_STATUS(kCorruption, r);
  }
}

TEST(MetadataParseTest, PageHeaderRoundTrips) {
  PageHeader v1;
  v1.type = PageType::kDataPage;
  v1.uncompressed_page_size = 100;
  v1.compressed_page_size = 50;
  v1.crc = -5;
  v1.data_page_header =
      DataPageHeader{10, Encoding::kRleDictionary, Encoding::kRle, Encoding::kRle};
  PageHeader v2;
  v2.type = PageType::kDataPageV2;
  v2.uncompressed_page_size = 10;
  v2.compressed_page_size = 10;
  v2.data_page_header_v2 = DataPageHeaderV2{4, 1, 3, Encoding::kDeltaBinaryPacked, 2, 3, false};
  PageHeader dict;
  dict.type = PageType::kDictionaryPage;
  dict.dictionary_page_header = DictionaryPageHeader{7, Encoding::kPlainDictionary, true};
  for (const PageHeader& h : {v1, v2, dict}) {
    std::string bytes;
    SerializePageHeader(h, &bytes);
    bytes += "page body";
    PageHeader back;
    size_t size = 0;
    ASSERT_OK(ParsePageHeader(bytes, &back, &size));
    EXPECT_EQ(back, h);
    EXPECT_EQ(bytes.substr(size), "page body");
  }
}

TEST(MetadataParseTest, SkipsUnknownFieldsOfEveryType) {
  // A page header with unknown fields 9..21 of every wire type before the known ones.
  std::string bytes;
  CompactWriter w(&bytes);
  w.BeginStruct();
  w.FieldBool(9, true);
  w.FieldBool(10, false);
  w.FieldI8(11, -3);
  w.FieldI16(12, 300);
  w.FieldI32(13, -70000);
  w.FieldI64(14, 1LL << 50);
  w.FieldDouble(15, 2.5);
  w.FieldBinary(16, "unknown");
  w.FieldListBegin(17, CType::kStruct, 2);
  for (int i = 0; i < 2; ++i) {
    w.ElemStructBegin();
    w.FieldListBegin(1, CType::kBoolTrue, 3);
    w.ElemBool(true);
    w.ElemBool(false);
    w.ElemBool(true);
    w.EndStruct();
  }
  w.FieldStructBegin(18);
  w.FieldBinary(1, "nested");
  w.EndStruct();
  w.FieldListBegin(19, CType::kBinary, 20);
  for (int i = 0; i < 20; ++i) w.ElemBinary("x");
  w.EndStruct();
  // Insert a map field (id 20) and a set (21) by hand before the stop byte.
  bytes.pop_back();
  bytes += Unhex("1B 02 88 01 61 01 62 01 63 01 64");  // field 20 map<binary,binary>, 2 entries
  bytes += Unhex("1A 25 02 04");                       // field 21 set<i32> {1, 2}
  // Known fields: type 0 (field 1 in the long form: ids go backwards), sizes 1 and 2.
  bytes += Unhex("05 02 00 15 02 15 04 00");
  PageHeader h;
  size_t size;
  Status st = ParsePageHeader(bytes, &h, &size);
  ASSERT_OK(st);
  EXPECT_EQ(h.type, PageType::kDataPage);
  EXPECT_EQ(h.uncompressed_page_size, 1);
  EXPECT_EQ(h.compressed_page_size, 2);
  EXPECT_EQ(size, bytes.size());
}

TEST(MetadataParseTest, RefusesAbsurdLengthsAndDepth) {
  PageHeader h;
  size_t size;
  // Binary field of 2^40 bytes.
  EXPECT_STATUS(kCorruption, ParsePageHeader(Unhex("18 80 80 80 80 80 20 00"), &h, &size));
  // List of a billion elements.
  EXPECT_STATUS(kCorruption, ParsePageHeader(Unhex("19 F5 80 94 EB DC 03 00"), &h, &size));
  // 1000 nested structs in an unknown field.
  std::string deep;
  for (int i = 0; i < 1000; ++i) deep += "\x1C";
  EXPECT_STATUS(kCorruption, ParsePageHeader(deep, &h, &size));
  // A required field missing.
  EXPECT_STATUS(kCorruption, ParsePageHeader(Unhex("15 00 00"), &h, &size));
  // Unknown wire type.
  EXPECT_STATUS(kCorruption, ParsePageHeader(Unhex("1E 00"), &h, &size));
  // Encrypted footer fields are refused as unimplemented.
  std::string enc;
  CompactWriter w(&enc);
  w.BeginStruct();
  w.FieldStructBegin(8);
  w.EndStruct();
  w.EndStruct();
  EXPECT_STATUS(kUnimplemented, ParseFileMetaData(enc));
}

}  // namespace
}  // namespace icestream::format::parquet
