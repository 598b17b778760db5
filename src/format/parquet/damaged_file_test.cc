// Damaged input, on purpose (LevelDB's habit): truncated files, every byte flipped in
// turn, hand-made files with absurd lengths and counts. The reader must answer with a
// clean error (kCorruption saying what and where, kResourceExhausted for the read
// budget) or, where a flip only changes a value, with rows; never crash, hang or
// allocate what the bytes claim.
#include <gtest/gtest.h>
#include <zstd.h>

#include <optional>

#include "common/bytes.h"
#include "common/testing/status_assertions.h"
#include "format/parquet/file_reader.h"
#include "format/parquet/file_writer.h"
#include "format/parquet/json_rows.h"
#include "format/parquet/output_stream.h"
#include "format/parquet/test_rows.h"

namespace icestream::format::parquet {
namespace {

using iceberg::NestedField;
using iceberg::TypeId;

// A small file: nested and flat columns, dictionary and PLAIN pages, two row groups.
std::string SmallFile(Codec codec) {
  testing::RowGen gen(42);
  iceberg::Schema schema;
  schema.fields = {
      NestedField{1, "id", true, iceberg::Primitive(TypeId::kLong), ""},
      NestedField{2, "name", false, iceberg::Primitive(TypeId::kString), ""},
      NestedField{3, "tags", false, iceberg::List(4, false, iceberg::Primitive(TypeId::kString)),
                  ""},
      NestedField{
          5, "m", false,
          iceberg::Map(6, iceberg::Primitive(TypeId::kString), 7, false, iceberg::Decimal(20, 3)),
          ""},
      NestedField{
          8, "s", false,
          iceberg::Struct({NestedField{9, "d", false, iceberg::Primitive(TypeId::kDouble), ""}}),
          ""}};
  std::string bytes;
  StringOutputStream out(&bytes);
  WriterOptions o;
  o.codec = codec;
  o.max_row_group_rows = 20;
  auto w = FileWriter::Make(schema, &out, o);
  EXPECT_OK(w);
  for (int i = 0; i < 40; ++i) {
    testing::ShredRow((*w)->schema(), gen.Row(schema), **w);
    EXPECT_OK((*w)->EndRecord());
  }
  EXPECT_OK((*w)->Close());
  return bytes;
}

// Opens, prints every row group and copies every row group into a writer of the file's
// own schema; returns the first error.
Status ReadEverything(std::string_view file, ReaderOptions options = {}) {
  ASSIGN_OR_RETURN(auto r, ParquetFileReader::Open(file, options));
  std::string json;
  for (int g = 0; g < r->num_row_groups(); ++g) RETURN_IF_ERROR(AppendJsonRows(*r, g, &json));
  if (r->schema().parquet_schema() == nullptr) return Status::OK();
  std::string bytes;
  StringOutputStream out(&bytes);
  ASSIGN_OR_RETURN(auto w, FileWriter::Make(r->schema().iceberg_schema(), &out, WriterOptions()));
  RETURN_IF_ERROR(r->CopyRows(w.get()));
  return w->Close().status();
}

TEST(DamagedFileTest, IntactFilesRead) {
  for (Codec c : {Codec::kUncompressed, Codec::kZstd}) {
    Status st = ReadEverything(SmallFile(c));
    EXPECT_OK(st);
  }
}

TEST(DamagedFileTest, EveryTruncationIsCorruption) {
  const std::string f = SmallFile(Codec::kSnappy);
  for (size_t n = 0; n < f.size(); ++n) {
    auto r = ParquetFileReader::Open(std::string_view(f).substr(0, n));
    ASSERT_STATUS(kCorruption, r) << "prefix of " << n << " bytes";
    EXPECT_STATUS(kCorruption, r);
  }
}

TEST(DamagedFileTest, DataCutOutOfTheMiddle) {
  // The footer is intact but the chunks it points at moved: offsets outside the data
  // area or pages that do not parse.
  const std::string f = SmallFile(Codec::kUncompressed);
  const uint32_t footer_len = GetFixed32(f.data() + f.size() - 8);
  const size_t footer_start = f.size() - 8 - footer_len;
  for (size_t cut : {size_t{1}, size_t{7}, size_t{100}}) {
    std::string g =
        f.substr(0, 4) + f.substr(4 + cut, footer_start - 4 - cut) + f.substr(footer_start);
    Status st = ReadEverything(g);
    ASSERT_STATUS(kCorruption, st) << "cut " << cut;
    EXPECT_STATUS(kCorruption, st);
  }
}

TEST(DamagedFileTest, EveryFlippedByteEndsCleanly) {
  for (Codec c : {Codec::kUncompressed, Codec::kGzip, Codec::kZstd}) {
    const std::string f = SmallFile(c);
    const uint32_t footer_len = GetFixed32(f.data() + f.size() - 8);
    const size_t footer_start = f.size() - 8 - footer_len;
    int errors = 0, footer_errors = 0;
    for (size_t i = 0; i < f.size(); ++i) {
      for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
        std::string g = f;
        g[i] = static_cast<char>(g[i] ^ mask);
        ReaderOptions o;
        o.max_row_group_bytes = 64 << 20;
        Status st = ReadEverything(g, o);
        if (!st.ok()) {
          ++errors;
          if (i >= footer_start) ++footer_errors;
          EXPECT_TRUE(st.code() == StatusCode::kCorruption ||
                      st.code() == StatusCode::kUnimplemented ||
                      st.code() == StatusCode::kResourceExhausted ||
                      st.code() == StatusCode::kInvalidArgument)
              << st.ToString();
        }
      }
    }
    // Most damage is noticed (a flipped value byte in an uncompressed page cannot be).
    EXPECT_GT(errors, 0);
    EXPECT_GT(footer_errors, 0);
    std::printf("codec %s: %d of %zu flips detected (%d in the footer)\n",
                std::string(CodecName(c)).c_str(), errors, f.size() * 3, footer_errors);
  }
}

// ---------------------------------------------------------------- hand-made files
struct OneColumn {
  PhysicalType type = PhysicalType::kInt32;
  Repetition repetition = Repetition::kOptional;
  Codec codec = Codec::kUncompressed;
  int64_t num_rows = 3;
  int64_t num_values = 3;
  std::optional<int32_t> field_id = 1;
};

// "PAR1" | pages | footer for one leaf column "a" (field id 1).
std::string MakeFile(const OneColumn& c, const std::string& pages, int64_t dict_offset = 0) {
  FileMetaData m;
  SchemaElement root;
  root.name = "table";
  root.num_children = 1;
  SchemaElement a;
  a.name = "a";
  a.type = c.type;
  a.repetition_type = c.repetition;
  a.field_id = c.field_id;
  if (c.type == PhysicalType::kByteArray) a.converted_type = ConvertedType::kUtf8;
  m.schema = {root, a};
  m.num_rows = c.num_rows;
  RowGroup rg;
  rg.num_rows = c.num_rows;
  rg.total_byte_size = static_cast<int64_t>(pages.size());
  ColumnChunk chunk;
  chunk.meta_data.type = c.type;
  chunk.meta_data.encodings = {Encoding::kPlain};
  chunk.meta_data.path_in_schema = {"a"};
  chunk.meta_data.codec = c.codec;
  chunk.meta_data.num_values = c.num_values;
  chunk.meta_data.total_uncompressed_size = static_cast<int64_t>(pages.size());
  chunk.meta_data.total_compressed_size = static_cast<int64_t>(pages.size());
  chunk.meta_data.data_page_offset = 4;
  if (dict_offset > 0) chunk.meta_data.dictionary_page_offset = dict_offset;
  rg.columns = {chunk};
  m.row_groups = {rg};
  std::string footer;
  SerializeFileMetaData(m, &footer);
  std::string f = "PAR1" + pages + footer;
  AppendFixed32(&f, static_cast<uint32_t>(footer.size()));
  return f + "PAR1";
}

std::string Page(PageHeader h, const std::string& body) {
  std::string out;
  if (h.uncompressed_page_size == 0) h.uncompressed_page_size = static_cast<int32_t>(body.size());
  if (h.compressed_page_size == 0) h.compressed_page_size = static_cast<int32_t>(body.size());
  SerializePageHeader(h, &out);
  return out + body;
}

PageHeader V1(int32_t num_values, Encoding e = Encoding::kPlain) {
  PageHeader h;
  h.type = PageType::kDataPage;
  h.data_page_header = DataPageHeader{num_values, e, Encoding::kRle, Encoding::kRle};
  return h;
}

// Def levels [1,1,1] (u32 length + RLE run of 3 ones) and three INT32 values.
const std::string kDefs = std::string("\x02\x00\x00\x00\x06\x01", 6);
std::string Ints() {
  std::string v;
  for (uint32_t x : {7u, 8u, 9u}) AppendFixed32(&v, x);
  return v;
}

Status ReadJson(const std::string& f, std::string* json, ReaderOptions o = {}) {
  ASSIGN_OR_RETURN(auto r, ParquetFileReader::Open(f, o));
  for (int g = 0; g < r->num_row_groups(); ++g) RETURN_IF_ERROR(AppendJsonRows(*r, g, json));
  return Status::OK();
}

TEST(HandMadeFileTest, BaselineReads) {
  std::string json;
  Status st = ReadJson(MakeFile({}, Page(V1(3), kDefs + Ints())), &json);
  ASSERT_OK(st);
  EXPECT_EQ(json, "{\"a\":7}\n{\"a\":8}\n{\"a\":9}\n");
}

TEST(HandMadeFileTest, ColumnsWithoutPositiveFieldIdsReadAsThemselves) {
  // DuckDB's FIELD_IDS 'auto' starts at 0; other writers set none. Such columns get
  // synthetic ids: shown by cat and copied into the file's own schema, never matched to
  // a table's field.
  for (std::optional<int32_t> id : {std::optional<int32_t>(0), std::optional<int32_t>()}) {
    OneColumn c;
    c.field_id = id;
    std::string f = MakeFile(c, Page(V1(3), kDefs + Ints()));
    std::string json;
    Status st = ReadJson(f, &json);
    ASSERT_OK(st);
    EXPECT_EQ(json, "{\"a\":7}\n{\"a\":8}\n{\"a\":9}\n");
    ASSERT_OK_AND_ASSIGN(auto r, ParquetFileReader::Open(f));
    const iceberg::Schema& own = r->schema().iceberg_schema();
    EXPECT_TRUE(r->schema().is_synthetic(own.fields[0].id));
    std::string copy;
    StringOutputStream out(&copy);
    ASSERT_OK_AND_ASSIGN(auto w, FileWriter::Make(own, &out, WriterOptions()));
    ASSERT_OK(r->CopyRows(w.get()));
    ASSERT_OK(w->Close());
    json.clear();
    ASSERT_OK(ReadJson(copy, &json));
    EXPECT_EQ(json, "{\"a\":7}\n{\"a\":8}\n{\"a\":9}\n");
    // A table schema whose field carries the same number is another field: nulls.
    iceberg::Schema table = own;
    table.fields[0].name = "other";
    std::string copy2;
    StringOutputStream out2(&copy2);
    ASSERT_OK_AND_ASSIGN(auto w2, FileWriter::Make(table, &out2, WriterOptions()));
    ASSERT_OK(r->CopyRows(w2.get()));
    ASSERT_OK(w2->Close());
    json.clear();
    ASSERT_OK(ReadJson(copy2, &json));
    EXPECT_EQ(json, "{\"other\":null}\n{\"other\":null}\n{\"other\":null}\n");
  }
}

TEST(HandMadeFileTest, AbsurdLengthsAndCounts) {
  std::string json;
  auto expect = [&](const std::string& f, StatusCode code, const std::string& what,
                    ReaderOptions o = {}) {
    json.clear();
    Status st = ReadJson(f, &json, o);
    EXPECT_EQ(st.code(), code) << what << ": " << st.ToString();
  };
  // Page body longer than the chunk.
  PageHeader h = V1(3);
  h.compressed_page_size = INT32_MAX;
  h.uncompressed_page_size = INT32_MAX;
  expect(MakeFile({}, Page(h, kDefs + Ints())), StatusCode::kCorruption, "compressed_page_size");
  // A zstd frame whose header says 18 bytes where the page says 2 GiB: refused before
  // anything that large is allocated.
  {
    std::string body = kDefs + Ints();
    std::string z(ZSTD_compressBound(body.size()), '\0');
    z.resize(ZSTD_compress(z.data(), z.size(), body.data(), body.size(), 1));
    PageHeader hz = V1(3);
    hz.uncompressed_page_size = INT32_MAX;
    OneColumn c;
    c.codec = Codec::kZstd;
    expect(MakeFile(c, Page(hz, z)), StatusCode::kCorruption, "zstd size");
    hz.uncompressed_page_size = static_cast<int32_t>(body.size());
    expect(MakeFile(c, Page(hz, z)), StatusCode::kOk, "zstd baseline");
    c.codec = Codec::kGzip;
    expect(MakeFile(c, Page(hz, z)), StatusCode::kCorruption, "zstd bytes under gzip");
    c.codec = Codec::kLz4Raw;
    expect(MakeFile(c, Page(hz, z)), StatusCode::kUnimplemented, "LZ4_RAW");
  }
  // Two billion level entries claimed by a page and the chunk: one RLE run would hold
  // them; the read budget refuses the level arrays.
  {
    OneColumn c;
    c.num_values = INT32_MAX;
    std::string defs = std::string("\x06\x00\x00\x00", 4);
    defs += std::string("\xFE\xFF\xFF\xFF\x0F\x01", 6);  // run of 2^31 - 1 ones
    expect(MakeFile(c, Page(V1(INT32_MAX), defs + Ints())), StatusCode::kResourceExhausted,
           "level entries");
    c.num_values = 3;
    expect(MakeFile(c, Page(V1(INT32_MAX), defs + Ints())), StatusCode::kCorruption,
           "more entries than the chunk");
  }
  // A dictionary of two billion entries.
  {
    PageHeader d;
    d.type = PageType::kDictionaryPage;
    d.dictionary_page_header = DictionaryPageHeader{INT32_MAX, Encoding::kPlain};
    std::string dict = Page(d, Ints());
    std::string data =
        Page(V1(3, Encoding::kRleDictionary), kDefs + std::string("\x02\x03\x24", 3));
    OneColumn c;
    std::string f = MakeFile(c, dict + data, 4);
    // data_page_offset must point past the dictionary page.
    expect(f, StatusCode::kResourceExhausted, "dictionary size");
  }
  // A BYTE_ARRAY value of 2 GiB.
  {
    OneColumn c;
    c.type = PhysicalType::kByteArray;
    std::string v = std::string("\xFF\xFF\xFF\x7F", 4) + "abc";
    expect(MakeFile(c, Page(V1(3), kDefs + v)), StatusCode::kCorruption, "byte array length");
  }
  // Levels above the maximum, a first entry that is not a record start.
  {
    std::string defs = std::string("\x02\x00\x00\x00\x06\x03", 6);  // def 3 > max 1
    expect(MakeFile({}, Page(V1(3), defs + Ints())), StatusCode::kCorruption, "def level 3");
  }
  // Footer length beyond the file; row counts that disagree.
  {
    std::string f = MakeFile({}, Page(V1(3), kDefs + Ints()));
    std::string g = f;
    PutFixed32(g.data() + g.size() - 8, 0xFFFFFFFFu);
    expect(g, StatusCode::kCorruption, "footer length");
    OneColumn c;
    c.num_rows = 4;
    c.num_values = 4;
    expect(MakeFile(c, Page(V1(3), kDefs + Ints())), StatusCode::kCorruption, "row count");
  }
  // A small read budget.
  {
    ReaderOptions o;
    o.max_row_group_bytes = 8;
    expect(MakeFile({}, Page(V1(3), kDefs + Ints())), StatusCode::kResourceExhausted, "budget", o);
  }
  // Encodings and types refused cleanly.
  {
    expect(MakeFile({}, Page(V1(3, Encoding::kBitPacked), kDefs + Ints())),
           StatusCode::kUnimplemented, "BIT_PACKED");
    expect(MakeFile({}, Page(V1(3, static_cast<Encoding>(42)), kDefs + Ints())),
           StatusCode::kUnimplemented, "42");
    OneColumn c;
    c.type = PhysicalType::kInt96;
    std::string f = MakeFile(c, Page(V1(3), kDefs + std::string(36, '\0')));
    ASSERT_OK_AND_ASSIGN(auto r, ParquetFileReader::Open(f));
    EXPECT_EQ(r->schema().skipped().size(), 1u);
    expect(f, StatusCode::kUnimplemented, "INT96 only");
  }
}

TEST(HandMadeFileTest, DataPageV2AndCrc) {
  // v2: levels outside the (here uncompressed) values; CRC checked when set.
  PageHeader h;
  h.type = PageType::kDataPageV2;
  std::string defs("\x06\x01", 2);
  h.data_page_header_v2 = DataPageHeaderV2{3, 0, 3, Encoding::kPlain, 2, 0, false};
  std::string body = defs + Ints();
  std::string json;
  Status st = ReadJson(MakeFile({}, Page(h, body)), &json);
  ASSERT_OK(st);
  EXPECT_EQ(json, "{\"a\":7}\n{\"a\":8}\n{\"a\":9}\n");
  h.crc = 12345;
  json.clear();
  EXPECT_STATUS(kCorruption, ReadJson(MakeFile({}, Page(h, body)), &json));
  h.data_page_header_v2->definition_levels_byte_length = 1000;
  h.crc.reset();
  EXPECT_STATUS(kCorruption, ReadJson(MakeFile({}, Page(h, body)), &json));
}

}  // namespace
}  // namespace icestream::format::parquet
