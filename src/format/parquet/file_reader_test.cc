// Round trips through the project's writer and the reader: random schemas (every
// primitive type, nested structs, lists and maps, optional and required at every
// level) and random rows (nulls at every level, empty lists and maps) are written with
// every codec, with and without dictionaries, in several row groups; the rows read
// back must equal what was written, and copying them through the reader into a new
// FileWriter must give a file that reads the same.
#include "format/parquet/file_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <tuple>

#include "common/testing/status_assertions.h"
#include "format/parquet/file_writer.h"
#include "format/parquet/json_rows.h"
#include "format/parquet/output_stream.h"
#include "format/parquet/test_rows.h"

namespace icestream::format::parquet {
namespace {

using testing::RowGen;
using testing::Value;

std::string WriteRows(const iceberg::Schema& schema, const std::vector<Value>& rows,
                      WriterOptions o) {
  std::string bytes;
  StringOutputStream out(&bytes);
  auto w = FileWriter::Make(schema, &out, o);
  EXPECT_OK(w);
  for (const Value& r : rows) {
    testing::ShredRow((*w)->schema(), r, **w);
    EXPECT_OK((*w)->EndRecord());
  }
  auto m = (*w)->Close();
  EXPECT_OK(m);
  return bytes;
}

// All rows of a file as JSON lines.
std::string ReadJson(const std::string& file, Status* error = nullptr) {
  std::string out;
  auto r = ParquetFileReader::Open(file);
  if (!r.ok()) {
    if (error) *error = r.status();
    return "open failed: " + r.status().ToString();
  }
  for (int g = 0; g < (*r)->num_row_groups(); ++g) {
    Status st = AppendJsonRows(**r, g, &out);
    if (!st.ok()) {
      if (error) *error = st;
      return "read failed: " + st.ToString();
    }
  }
  return out;
}

// Copies every row of `file` into a new file of `schema`.
Result<std::string> Copy(const std::string& file, const iceberg::Schema& schema, WriterOptions o) {
  ASSIGN_OR_RETURN(auto reader, ParquetFileReader::Open(file));
  std::string bytes;
  StringOutputStream out(&bytes);
  ASSIGN_OR_RETURN(auto w, FileWriter::Make(schema, &out, o));
  RETURN_IF_ERROR(reader->CopyRows(w.get()));
  ASSIGN_OR_RETURN(FileMetrics m, w->Close());
  (void)m;
  return bytes;
}

class RoundTripTest : public ::testing::TestWithParam<std::tuple<Codec, bool>> {};

TEST_P(RoundTripTest, RandomSchemasAndRows) {
  const auto [codec, dictionary] = GetParam();
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    RowGen gen(seed * 7919 + static_cast<uint32_t>(codec) * 31 + (dictionary ? 1 : 0));
    iceberg::Schema schema = gen.Schema(16 + gen.Int(6));
    std::vector<Value> rows;
    std::string expected;
    const int n = 300 + gen.Int(400);
    for (int i = 0; i < n; ++i) {
      rows.push_back(gen.Row(schema));
      expected += testing::ExpectedRow(schema, rows.back());
    }
    WriterOptions o;
    o.codec = codec;
    o.dictionary = dictionary;
    o.page_size = 2048;           // several pages per chunk (dictionary pages, then PLAIN fallback)
    o.row_group_size = 16 << 10;  // several row groups
    o.max_row_group_rows = 128;
    o.max_page_levels = 100;
    o.dictionary_page_size_limit = 600;  // chunks that switch from dictionary to PLAIN pages
    std::string a = WriteRows(schema, rows, o);
    ASSERT_OK_AND_ASSIGN(auto reader, ParquetFileReader::Open(a));
    EXPECT_GT(reader->num_row_groups(), 1) << "seed " << seed;
    EXPECT_EQ(reader->num_rows(), n);
    EXPECT_EQ(reader->schema().iceberg_schema().fields, schema.fields) << "field ids, names, types";
    EXPECT_TRUE(reader->FindKeyValue("iceberg.schema").has_value());
    if (dictionary) {
      // Some chunk holds dictionary pages followed by PLAIN ones (the writer's fallback).
      bool mixed = false;
      for (const auto& rg : reader->metadata().row_groups) {
        for (const auto& c : rg.columns) {
          int kinds = 0;
          for (const auto& e : c.meta_data.encoding_stats) {
            if (e.page_type == PageType::kDataPage) ++kinds;
          }
          mixed = mixed || kinds == 2;
        }
      }
      EXPECT_TRUE(mixed) << "seed " << seed;
    }
    std::string got = ReadJson(a);
    ASSERT_EQ(got, expected) << "seed " << seed;

    // Copy into a file with other options; it must read the same.
    WriterOptions o2;
    o2.codec = codec == Codec::kZstd ? Codec::kSnappy : Codec::kZstd;
    o2.dictionary = !dictionary;
    o2.row_group_size = 64 << 10;
    ASSERT_OK_AND_ASSIGN(auto b, Copy(a, schema, o2));
    ASSERT_EQ(ReadJson(b), expected) << "seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, RoundTripTest,
                         ::testing::Combine(::testing::Values(Codec::kUncompressed, Codec::kSnappy,
                                                              Codec::kGzip, Codec::kZstd),
                                            ::testing::Bool()));

TEST(FileReaderTest, CopiesIntoARowGroupBuilder) {
  RowGen gen(99);
  iceberg::Schema schema = gen.Schema(10);
  std::vector<Value> rows;
  std::string expected;
  for (int i = 0; i < 200; ++i) {
    rows.push_back(gen.Row(schema));
    expected += testing::ExpectedRow(schema, rows.back());
  }
  std::string a = WriteRows(schema, rows, WriterOptions());
  ASSERT_OK_AND_ASSIGN(auto reader, ParquetFileReader::Open(a));
  std::string bytes;
  StringOutputStream out(&bytes);
  ASSERT_OK_AND_ASSIGN(auto w, FileWriter::Make(schema, &out, WriterOptions()));
  ASSERT_OK_AND_ASSIGN(auto builder, w->NewRowGroupBuilder());
  ASSERT_OK(reader->CopyRowGroup(0, builder.get()));
  EXPECT_EQ(builder->num_rows(), 200);
  RowGroupData data;
  ASSERT_OK(builder->Finish(&data));
  ASSERT_OK(w->AppendRowGroup(&data));
  ASSERT_OK(w->Close());
  EXPECT_EQ(ReadJson(bytes), expected);
}

// A file's row groups placed as they are in another file (compaction's first merge):
// the rows read back unchanged, and the merged file's metrics are those of a writer that
// decodes and writes the same rows again (bounds, value, null and NaN counts), on random
// schemas with every type, nested and repeated columns, each codec, with and without
// dictionaries.
TEST(FileReaderTest, RowGroupsPlacedAsTheyAreKeepRowsAndMetrics) {
  auto bits = [](const std::optional<std::string>& b) -> std::optional<double> {
    if (!b || (b->size() != 4 && b->size() != 8)) return std::nullopt;
    if (b->size() == 4) {
      float f;
      std::memcpy(&f, b->data(), 4);
      return f;
    }
    double d;
    std::memcpy(&d, b->data(), 8);
    return d;
  };
  int placed = 0;
  for (Codec codec : {Codec::kUncompressed, Codec::kSnappy, Codec::kZstd}) {
    for (bool dictionary : {false, true}) {
      for (uint32_t seed = 1; seed <= 4; ++seed) {
        RowGen gen(seed * 104729 + static_cast<uint32_t>(codec) * 13 + (dictionary ? 7 : 0));
        iceberg::Schema schema = gen.Schema(14 + gen.Int(6));
        WriterOptions o;
        o.codec = codec;
        o.dictionary = dictionary;
        o.page_size = 2048;
        o.row_group_size = 16 << 10;
        o.max_row_group_rows = 128;
        o.dictionary_page_size_limit = 600;
        std::vector<std::string> inputs;
        std::vector<std::map<int32_t, int64_t>> nans;
        std::string expected;
        for (int f = 0; f < 3; ++f) {
          std::string bytes;
          StringOutputStream out(&bytes);
          ASSERT_OK_AND_ASSIGN(auto w, FileWriter::Make(schema, &out, o));
          const int n = 50 + gen.Int(300);
          for (int i = 0; i < n; ++i) {
            Value r = gen.Row(schema);
            expected += testing::ExpectedRow(schema, r);
            testing::ShredRow(w->schema(), r, *w);
            ASSERT_OK(w->EndRecord());
          }
          ASSERT_OK_AND_ASSIGN(FileMetrics m, w->Close());
          std::map<int32_t, int64_t> nan;
          for (const auto& c : m.columns) {
            if (c.nan_count) nan[c.field_id] = *c.nan_count;
          }
          inputs.push_back(std::move(bytes));
          nans.push_back(std::move(nan));
        }
        std::string as_is, decoded;
        StringOutputStream as_is_out(&as_is), decoded_out(&decoded);
        ASSERT_OK_AND_ASSIGN(auto a, FileWriter::Make(schema, &as_is_out, o));
        ASSERT_OK_AND_ASSIGN(auto d, FileWriter::Make(schema, &decoded_out, o));
        for (size_t f = 0; f < inputs.size(); ++f) {
          ASSERT_OK_AND_ASSIGN(auto reader, ParquetFileReader::Open(inputs[f]));
          Status st = a->AppendFileAsIs(*reader, nans[f]);
          if (st.code() == StatusCode::kFailedPrecondition) {
            // Chunks without bounds (e.g. all NaN): the rows are copied instead.
            ASSERT_OK(reader->CopyRows(a.get()));
          } else {
            ASSERT_OK(st);
            ++placed;
          }
          ASSERT_OK(reader->CopyRows(d.get()));
        }
        ASSERT_OK_AND_ASSIGN(FileMetrics ma, a->Close());
        ASSERT_OK_AND_ASSIGN(FileMetrics md, d->Close());
        ASSERT_EQ(ReadJson(as_is), expected) << "seed " << seed;
        EXPECT_EQ(ma.record_count, md.record_count);
        ASSERT_EQ(ma.columns.size(), md.columns.size());
        for (size_t i = 0; i < ma.columns.size(); ++i) {
          const ColumnMetrics &x = ma.columns[i], &y = md.columns[i];
          SCOPED_TRACE("seed " + std::to_string(seed) + " leaf " + std::to_string(i));
          EXPECT_EQ(x.value_count, y.value_count);
          EXPECT_EQ(x.null_count, y.null_count);
          EXPECT_EQ(x.nan_count, y.nan_count);
          // A zero bound of a float column is -0.0 below and +0.0 above in Parquet's
          // statistics (parquet.thrift ColumnOrder), whatever the zero's sign was.
          auto same = [&](const std::optional<std::string>& p,
                          const std::optional<std::string>& q) {
            if (p == q) return true;
            auto u = bits(p), v = bits(q);
            return u && v && *u == 0 && *v == 0;
          };
          EXPECT_TRUE(same(x.lower_bound, y.lower_bound));
          EXPECT_TRUE(same(x.upper_bound, y.upper_bound));
        }
      }
    }
  }
  EXPECT_GT(placed, 50) << "almost every file must be placed as it is";
}

TEST(FileReaderTest, AFileOfAnotherSchemaIsNotPlacedAsItIs) {
  RowGen gen(5);
  iceberg::Schema schema = gen.Schema(8);
  std::vector<Value> rows;
  std::string expected;
  for (int i = 0; i < 40; ++i) {
    rows.push_back(gen.Row(schema));
    expected += testing::ExpectedRow(schema, rows.back());
  }
  std::string a = WriteRows(schema, rows, WriterOptions());
  ASSERT_OK_AND_ASSIGN(auto reader, ParquetFileReader::Open(a));
  iceberg::Schema wider = schema;
  wider.fields.push_back({1000, "added", false, iceberg::Primitive(iceberg::TypeId::kLong), ""});
  std::string bytes;
  StringOutputStream out(&bytes);
  ASSERT_OK_AND_ASSIGN(auto w, FileWriter::Make(wider, &out, WriterOptions()));
  EXPECT_STATUS(kFailedPrecondition, w->AppendFileAsIs(*reader, {}));
  // Nothing was written: the rows copied after it are the file's only ones.
  ASSERT_OK(reader->CopyRows(w.get()));
  ASSERT_OK_AND_ASSIGN(FileMetrics m, w->Close());
  EXPECT_EQ(m.record_count, 40);
  ASSERT_OK_AND_ASSIGN(auto back, ParquetFileReader::Open(bytes));
  EXPECT_EQ(back->num_rows(), 40);
  EXPECT_EQ(back->num_row_groups(), 1);
}

TEST(FileReaderTest, EmptyFileAndEmptyRowGroups) {
  iceberg::Schema schema;
  schema.fields.push_back({1, "a", false, iceberg::Primitive(iceberg::TypeId::kLong), ""});
  std::string a = WriteRows(schema, {}, WriterOptions());
  ASSERT_OK_AND_ASSIGN(auto reader, ParquetFileReader::Open(a));
  EXPECT_EQ(reader->num_rows(), 0);
  EXPECT_EQ(reader->num_row_groups(), 0);
  ASSERT_OK_AND_ASSIGN(auto b, Copy(a, schema, WriterOptions()));
  EXPECT_EQ(ReadJson(b), "");
}

// A copy of 100,000 rows (many pages per column, a list column's levels across page
// boundaries) reads back as the original. (This was a timed smoke test of the copy's
// speed; speed is bench/'s to measure, not a test's.)
TEST(FileReaderTest, ACopyOfManyPagesReadsBackAsTheOriginal) {
  iceberg::Schema schema;
  using iceberg::TypeId;
  schema.fields.push_back({1, "id", true, iceberg::Primitive(TypeId::kLong), ""});
  schema.fields.push_back({2, "name", false, iceberg::Primitive(TypeId::kString), ""});
  schema.fields.push_back({3, "score", false, iceberg::Primitive(TypeId::kDouble), ""});
  schema.fields.push_back(
      {4, "tags", false, iceberg::List(5, false, iceberg::Primitive(TypeId::kString)), ""});
  RowGen gen(5);
  std::vector<Value> rows;
  for (int i = 0; i < 100000; ++i) rows.push_back(gen.Row(schema));
  WriterOptions o;
  o.page_size = 16 << 10;
  std::string a = WriteRows(schema, rows, o);
  ASSERT_OK_AND_ASSIGN(std::string b, Copy(a, schema, o));
  const std::string original = ReadJson(a);
  ASSERT_FALSE(original.empty());
  EXPECT_TRUE(ReadJson(b) == original);
}

}  // namespace
}  // namespace icestream::format::parquet
