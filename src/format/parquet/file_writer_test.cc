// Tests of the file writer: file layout (magic, footer length), row groups placed from
// independent builders, Iceberg metrics, deterministic output with the page worker,
// and rollback of aborted records. Readers of the bytes live in tests/interop/.
#include "format/parquet/file_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/bytes.h"
#include "common/testing/status_assertions.h"
#include "format/parquet/output_stream.h"
#include "format/parquet/row_group_builder.h"
#include "format/parquet/test_hex.h"
#include "iceberg/schema/schema_json.h"

namespace icestream::format::parquet {
namespace {

using iceberg::TypeId;

iceberg::Schema TestSchema() {
  iceberg::Schema s;
  s.fields.push_back({1, "id", true, iceberg::Primitive(TypeId::kLong), ""});
  s.fields.push_back({2, "name", false, iceberg::Primitive(TypeId::kString), ""});
  s.fields.push_back({3, "score", false, iceberg::Primitive(TypeId::kDouble), ""});
  s.fields.push_back(
      {4, "tags", false, iceberg::List(5, true, iceberg::Primitive(TypeId::kString)), ""});
  return s;
}

// Row i: id i, name "n<i%7>" (null every 5th), score i/2 (NaN every 4th), tags [] or ["t"].
void AddRow(RecordSink& w, int64_t i) {
  w.column(0).AddInt64(0, i);
  if (i % 5 == 0) {
    w.column(1).AddNull(0, 0);
  } else {
    w.column(1).AddBytes(0, "n" + std::to_string(i % 7));
  }
  w.column(2).AddDouble(0, i % 4 == 0 ? NAN : static_cast<double>(i) / 2);
  if (i % 2 == 0) {
    w.column(3).AddNull(0, 1);  // empty list
  } else {
    w.column(3).AddBytes(0, "t");
  }
}

struct Written {
  std::string bytes;
  FileMetrics metrics;
};

Written Write(WriterOptions options, int64_t rows) {
  Written out;
  StringOutputStream sink(&out.bytes);
  auto w = FileWriter::Make(TestSchema(), &sink, options);
  EXPECT_OK(w);
  for (int64_t i = 0; i < rows; ++i) {
    AddRow(**w, i);
    EXPECT_OK((*w)->EndRecord());
  }
  auto m = (*w)->Close();
  EXPECT_OK(m);
  out.metrics = *m;
  return out;
}

void ExpectLayout(const std::string& f) {
  ASSERT_GE(f.size(), 12u);
  EXPECT_EQ(f.substr(0, 4), "PAR1");
  EXPECT_EQ(f.substr(f.size() - 4), "PAR1");
  uint32_t footer = GetFixed32(f.data() + f.size() - 8);
  EXPECT_LE(footer + 12u, f.size());
}

TEST(FileWriterTest, LayoutAndMetrics) {
  WriterOptions o;
  o.row_group_size = 4096;  // several row groups
  o.page_size = 512;        // several pages per chunk
  Written w = Write(o, 1000);
  ExpectLayout(w.bytes);
  const FileMetrics& m = w.metrics;
  EXPECT_EQ(m.record_count, 1000);
  EXPECT_EQ(m.file_size, static_cast<int64_t>(w.bytes.size()));
  ASSERT_GT(m.split_offsets.size(), 1u);
  EXPECT_EQ(m.split_offsets[0], 4);
  for (size_t i = 1; i < m.split_offsets.size(); ++i)
    EXPECT_GT(m.split_offsets[i], m.split_offsets[i - 1]);
  ASSERT_EQ(m.columns.size(), 4u);
  const ColumnMetrics& id = m.columns[0];
  EXPECT_EQ(id.field_id, 1);
  EXPECT_EQ(id.value_count, 1000);
  EXPECT_EQ(id.null_count, 0);
  EXPECT_FALSE(id.nan_count.has_value());
  EXPECT_BYTES_EQ("00 00 00 00 00 00 00 00", *id.lower_bound);
  EXPECT_BYTES_EQ("e7 03 00 00 00 00 00 00", *id.upper_bound);
  const ColumnMetrics& name = m.columns[1];
  EXPECT_EQ(name.null_count, 200);
  EXPECT_EQ(*name.lower_bound, "n0");
  EXPECT_EQ(*name.upper_bound, "n6");
  const ColumnMetrics& score = m.columns[2];
  EXPECT_EQ(score.nan_count, 250);
  double hi;
  std::memcpy(&hi, score.upper_bound->data(), 8);
  EXPECT_EQ(hi, 999.0 / 2);
  const ColumnMetrics& tag = m.columns[3];
  EXPECT_EQ(tag.field_id, 5);
  EXPECT_GT(tag.column_size, 0);
  EXPECT_FALSE(tag.value_count.has_value());  // inside a list: sizes only (Iceberg Java)
  EXPECT_FALSE(tag.lower_bound.has_value());
  int64_t sizes = 0;
  for (const auto& c : m.columns) sizes += c.column_size;
  EXPECT_LT(sizes, m.file_size);
}

TEST(FileWriterTest, RowGroupsAreCutWhilePagesAreStillOpen) {
  // Pages far larger than the row-group target: the row group is cut on the size of the
  // pages being filled, not only of pages already cut (memory stays near row_group_size).
  WriterOptions o;
  o.row_group_size = 4096;
  o.page_size = 1 << 30;
  Written w = Write(o, 1000);
  ExpectLayout(w.bytes);
  EXPECT_EQ(w.metrics.record_count, 1000);
  EXPECT_GT(w.metrics.split_offsets.size(), 1u);  // one, before the open pages counted
}

TEST(FileWriterTest, EmptyFileIsValid) {
  Written w = Write(WriterOptions(), 0);
  ExpectLayout(w.bytes);
  EXPECT_EQ(w.metrics.record_count, 0);
  EXPECT_TRUE(w.metrics.split_offsets.empty());
  EXPECT_FALSE(w.metrics.columns[0].lower_bound.has_value());
}

TEST(FileWriterTest, PageWorkerDoesNotChangeTheBytes) {
  for (Codec codec : {Codec::kZstd, Codec::kSnappy, Codec::kGzip, Codec::kUncompressed}) {
    WriterOptions o;
    o.codec = codec;
    o.page_size = 700;
    o.row_group_size = 20000;
    Written one = Write(o, 3000);
    o.threads = 2;
    Written two = Write(o, 3000);
    EXPECT_EQ(one.bytes, two.bytes) << CodecName(codec);
  }
}

TEST(FileWriterTest, RowGroupsFromIndependentBuilders) {
  WriterOptions o;
  Written reference = Write(o, 300);  // rows 0..299 in one row group
  std::string bytes;
  StringOutputStream sink(&bytes);
  ASSERT_OK_AND_ASSIGN(auto w, FileWriter::Make(TestSchema(), &sink, o));
  auto a = w->NewRowGroupBuilder();
  auto b = w->NewRowGroupBuilder();
  ASSERT_OK(a);
  ASSERT_OK(b);
  // Builder b fills rows 100..299 first; a fills 0..99 (with an aborted record).
  for (int64_t i = 100; i < 300; ++i) {
    AddRow(**b, i);
    ASSERT_OK((*b)->EndRecord());
  }
  for (int64_t i = 0; i < 100; ++i) {
    AddRow(**a, i);
    ASSERT_OK((*a)->EndRecord());
    AddRow(**a, 12345);
    (*a)->AbortRecord();
  }
  RowGroupData ga, gb;
  ASSERT_OK((*a)->Finish(&ga));
  ASSERT_OK((*b)->Finish(&gb));
  EXPECT_EQ(ga.num_rows, 100);
  ASSERT_OK(w->AppendRowGroup(&ga));
  ASSERT_OK(w->AppendRowGroup(&gb));
  ASSERT_OK_AND_ASSIGN(auto m, w->Close());
  ExpectLayout(bytes);
  EXPECT_EQ(m.record_count, 300);
  EXPECT_EQ(m.split_offsets.size(), 2u);
  // Same rows and statistics as the single-group file.
  for (size_t c = 0; c < 3; ++c) {
    EXPECT_EQ(m.columns[c].value_count, reference.metrics.columns[c].value_count);
    EXPECT_EQ(m.columns[c].null_count, reference.metrics.columns[c].null_count);
    EXPECT_EQ(m.columns[c].lower_bound, reference.metrics.columns[c].lower_bound);
    EXPECT_EQ(m.columns[c].upper_bound, reference.metrics.columns[c].upper_bound);
  }
}

// Row groups of one builder, each finished into a fresh RowGroupData or into one that
// is used again (its pieces' buffers go back to the builder, as the parallel converter
// does), give the same file: no byte of an earlier group leaks into a later one.
TEST(FileWriterTest, ReusedRowGroupDataGivesTheSameFile) {
  auto write = [](bool reuse) {
    WriterOptions o;
    o.page_size = 512;  // several pages per chunk
    std::string bytes;
    StringOutputStream sink(&bytes);
    auto w = FileWriter::Make(TestSchema(), &sink, o);
    EXPECT_OK(w);
    auto b = (*w)->NewRowGroupBuilder();
    EXPECT_OK(b);
    RowGroupData kept;
    // Leftovers a caller might hand in: more pieces than columns, none of them empty.
    kept.pieces.assign(11, std::string(3000, 'x'));
    for (int64_t g = 0; g < 4; ++g) {
      for (int64_t i = g * 1000; i < g * 1000 + 300 + 200 * g; ++i) {
        AddRow(**b, i);
        EXPECT_OK((*b)->EndRecord());
      }
      RowGroupData fresh;
      RowGroupData* data = reuse ? &kept : &fresh;
      EXPECT_OK((*b)->Finish(data));
      EXPECT_EQ(data->pieces.size(), 8u);
      EXPECT_OK((*w)->AppendRowGroup(data));
    }
    EXPECT_OK((*w)->Close());
    return bytes;
  };
  std::string fresh = write(false), reused = write(true);
  ExpectLayout(fresh);
  EXPECT_EQ(fresh, reused);
}

TEST(FileWriterTest, LargeDistinctValuesKeepPagesAndDictionariesBounded) {
  // 2000 distinct 10 KB strings: the dictionary passes its 1 MiB limit within a few
  // records, the page is cut and the chunk goes on in PLAIN; nothing buffers 20 MB.
  WriterOptions o;
  o.codec = Codec::kUncompressed;
  std::string bytes;
  StringOutputStream sink(&bytes);
  ASSERT_OK_AND_ASSIGN(auto w, FileWriter::Make(TestSchema(), &sink, o));
  for (int i = 0; i < 2000; ++i) {
    w->column(0).AddInt64(0, i);
    w->column(1).AddBytes(0,
                          std::string(10000, static_cast<char>('a' + i % 26)) + std::to_string(i));
    w->column(2).AddDouble(0, i);
    w->column(3).AddNull(0, 1);
    ASSERT_OK(w->EndRecord());
    EXPECT_LE(w->column(1).EstimatedPageBytes(), (1 << 20) + 9 * 10010);
    EXPECT_FALSE(w->column(1).dictionary().plain().size() > (1 << 20) + 9 * 10010u);
  }
  ASSERT_OK_AND_ASSIGN(auto m, w->Close());
  EXPECT_EQ(m.record_count, 2000);
  EXPECT_GT(m.file_size, 20000000);
}

// Aborted records leave no trace, whether a chunk's dictionary takes each value as it
// comes (small) or holds values back until eight records are complete (more than 4,096
// entries): a file with aborted records between the committed ones is byte for byte the
// file of the committed ones alone. (The aborted records repeat committed values, so that
// they add no dictionary entries either way.)
TEST(FileWriterTest, AbortedRecordsLeaveNoTraceInSmallAndLargeDictionaries) {
  WriterOptions o;
  o.codec = Codec::kUncompressed;
  o.page_size = 64 << 10;  // many pages, cut between the same records in both files
  auto row = [](RecordSink& w, int64_t i) {
    // Each value twice in a row: the dictionaries pay (half the values are new) and
    // columns 1 and 2 pass 4,096 entries.
    w.column(0).AddInt64(0, i % 3000);
    w.column(1).AddBytes(0, "name-" + std::to_string(i / 2 * 31 % 7000));
    w.column(2).AddDouble(0, static_cast<double>(i / 2 % 8000) / 4);
    w.column(3).AddBytes(0, "t" + std::to_string(i % 5000));
    w.column(3).AddBytes(1, "u" + std::to_string(i % 7));
  };
  std::string reference, aborted;
  StringOutputStream ref_sink(&reference), sink(&aborted);
  ASSERT_OK_AND_ASSIGN(auto ref, FileWriter::Make(TestSchema(), &ref_sink, o));
  ASSERT_OK_AND_ASSIGN(auto w, FileWriter::Make(TestSchema(), &sink, o));
  for (int64_t i = 0; i < 60000; ++i) {
    row(*ref, i);
    ASSERT_OK(ref->EndRecord());
    row(*w, i);
    ASSERT_OK(w->EndRecord());
    if (i % 3 == 1) {
      row(*w, i - i % 5);  // part of a record, then dropped
      w->AbortRecord();
    }
  }
  EXPECT_GT(w->column(1).dictionary().size(), 4096u);
  EXPECT_GT(w->column(2).dictionary().size(), 4096u);
  ASSERT_OK(ref->Close());
  ASSERT_OK(w->Close());
  EXPECT_TRUE(aborted == reference)
      << "the files differ (" << aborted.size() << " and " << reference.size() << " bytes)";
}

// Data pages of each encoding in a chunk (encoding_stats).
int32_t DataPages(const ColumnMetaData& m, Encoding e) {
  int32_t n = 0;
  for (const auto& s : m.encoding_stats) {
    if (s.page_type == PageType::kDataPage && s.encoding == e) n += s.count;
  }
  return n;
}

// The dictionary tests' random values (xorshift64, one fixed seed: the same draws every run).
struct XorShift64 {
  uint64_t x = 88172645463325252ull;
  uint64_t operator()() {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  }
};

TEST(FileWriterTest, DictionaryStaysWhileValuesRepeatAndStopsWhenTheyDoNot) {
  // 80,000 rows of three double columns: coordinates with two decimals out of 12,000
  // values (96% of the first 1,024 are new, 83% of the first 4,096, 61% of the next: the
  // dictionary pays, and the old rule, "more than half of all values so far distinct",
  // dropped it at row 4,096), uniform draws out of 1,000,000 values, and distinct values.
  iceberg::Schema s;
  for (int i = 1; i <= 3; ++i) {
    s.fields.push_back({i, "c" + std::to_string(i), true, iceberg::Primitive(TypeId::kDouble), ""});
  }
  ASSERT_OK_AND_ASSIGN(ParquetSchema ps, ParquetSchema::Make(s));
  WriterOptions o;
  ASSERT_OK_AND_ASSIGN(auto b, RowGroupBuilder::Make(&ps, &o, false));
  XorShift64 next;
  for (int i = 0; i < 80000; ++i) {
    b->column(0).AddDouble(0, -60.0 + static_cast<double>(next() % 12000) / 100.0);
    b->column(1).AddDouble(0, static_cast<double>(next() % 1000000) / 7.0);
    b->column(2).AddDouble(0, i * 0.5);
    ASSERT_OK(b->EndRecord());
  }
  RowGroupData g;
  ASSERT_OK(b->Finish(&g));
  ASSERT_EQ(g.chunks.size(), 3u);
  const ColumnMetaData& coords = g.chunks[0].meta_data;
  EXPECT_GT(DataPages(coords, Encoding::kRleDictionary), 0);
  EXPECT_EQ(DataPages(coords, Encoding::kPlain) + DataPages(coords, Encoding::kByteStreamSplit), 0);
  // Dictionary-encoded, the coordinates take ~12,000 entries and 14 bits per value.
  EXPECT_LT(coords.total_uncompressed_size, 12000 * 8 + 80000 * 2);
  for (int c = 1; c < 3; ++c) {
    // The first 1,024 rows are (almost) all new values: PLAIN (or split) after them. The
    // dictionary page holds those 1,024 doubles and its header, no more.
    const ColumnMetaData& m = g.chunks[static_cast<size_t>(c)].meta_data;
    EXPECT_LE(DataPages(m, Encoding::kRleDictionary), 1) << c;
    EXPECT_GT(DataPages(m, Encoding::kPlain) + DataPages(m, Encoding::kByteStreamSplit), 0) << c;
    ASSERT_TRUE(m.dictionary_page_offset.has_value()) << c;
    EXPECT_LE(m.data_page_offset - *m.dictionary_page_offset, 1024 * 8 + 64) << c;
  }
}

// Long strings: distinct ones leave the dictionary once it holds a quarter of its limit
// (almost all of them new: it would pass the limit before it paid); 300 values drawn over
// and over keep it, although their dictionary passes that quarter too.
TEST(FileWriterTest, LongDistinctStringsLeaveTheDictionaryAtAQuarterOfItsLimit) {
  iceberg::Schema s;
  s.fields.push_back({1, "unique", true, iceberg::Primitive(TypeId::kString), ""});
  s.fields.push_back({2, "repeated", true, iceberg::Primitive(TypeId::kString), ""});
  ASSERT_OK_AND_ASSIGN(ParquetSchema ps, ParquetSchema::Make(s));
  WriterOptions o;
  o.codec = Codec::kUncompressed;
  ASSERT_OK_AND_ASSIGN(auto b, RowGroupBuilder::Make(&ps, &o, false));
  XorShift64 next;
  auto text = [](uint64_t v) {
    std::string t = std::to_string(v) + ":";
    while (t.size() < 1000) t += std::to_string(v * t.size());
    return t.substr(0, 1000);
  };
  size_t most_unique_entries = 0;
  for (int i = 0; i < 3000; ++i) {
    b->column(0).AddBytes(0, text(next()));
    b->column(1).AddBytes(0, text(next() % 300));
    ASSERT_OK(b->EndRecord());
    most_unique_entries = std::max(most_unique_entries, b->column(0).dictionary().size());
  }
  // A quarter of 1 MiB is 262 values of 1,004 bytes (with their length); checked every
  // eight records.
  EXPECT_GE(most_unique_entries, 262u);
  EXPECT_LE(most_unique_entries, 262u + 8);
  RowGroupData g;
  ASSERT_OK(b->Finish(&g));
  const ColumnMetaData& unique = g.chunks[0].meta_data;
  EXPECT_EQ(DataPages(unique, Encoding::kRleDictionary), 1);
  EXPECT_GT(DataPages(unique, Encoding::kPlain), 0);
  const ColumnMetaData& repeated = g.chunks[1].meta_data;
  EXPECT_GT(DataPages(repeated, Encoding::kRleDictionary), 0);
  EXPECT_EQ(DataPages(repeated, Encoding::kPlain), 0);
  EXPECT_LT(repeated.total_uncompressed_size, 300 * 1004 + 3000 * 2);
}

TEST(FileWriterTest, IcebergSchemaInFooter) {
  Written w = Write(WriterOptions(), 3);
  std::string json = iceberg::SchemaToJson(TestSchema());
  EXPECT_NE(w.bytes.find("iceberg.schema"), std::string::npos);
  EXPECT_NE(w.bytes.find(json), std::string::npos);
}

TEST(FileWriterTest, RejectsBadOptions) {
  std::string bytes;
  StringOutputStream sink(&bytes);
  WriterOptions o;
  o.threads = 3;
  EXPECT_STATUS(kInvalidArgument, FileWriter::Make(TestSchema(), &sink, o));
  o.threads = 1;
  o.page_size = 0;
  EXPECT_STATUS(kInvalidArgument, FileWriter::Make(TestSchema(), &sink, o));
  iceberg::Schema empty_struct;
  empty_struct.fields.push_back({1, "s", false, iceberg::Struct({}), ""});
  EXPECT_STATUS(kInvalidArgument, FileWriter::Make(empty_struct, &sink, WriterOptions()));
}

}  // namespace
}  // namespace icestream::format::parquet
