// A real Parquet file's metrics as an Iceberg data file: counts, sizes and bounds in the
// single-value serialization, checked against values computed from the rows written.
#include "iceberg/parquet/data_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/testing/status_assertions.h"
#include "format/parquet/output_stream.h"
#include "iceberg/schema/schema_json.h"

namespace icestream::iceberg {
namespace {

namespace pq = format::parquet;

std::string Le64(int64_t v) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &v, 8);
  return s;
}

TEST(ParquetDataFileTest, MetricsOfARealFile) {
  auto schema = SchemaFromJson(R"({"type":"struct","schema-id":0,"fields":[
      {"id":1,"name":"id","required":true,"type":"long"},
      {"id":2,"name":"name","required":false,"type":"string"},
      {"id":3,"name":"x","required":true,"type":"double"}]})");
  ASSERT_OK(schema);
  std::string bytes;
  pq::StringOutputStream out(&bytes);
  ASSERT_OK_AND_ASSIGN(auto w, pq::FileWriter::Make(*schema, &out, pq::WriterOptions{}));
  int64_t nulls = 0, nans = 0;
  for (int64_t i = 10; i < 110; ++i) {
    w->column(0).AddInt64(0, i * 3);
    if (i % 5 == 0) {
      w->column(1).AddNull(0, 0);
      ++nulls;
    } else {
      w->column(1).AddBytes(0, "n" + std::to_string(i % 7));
    }
    if (i % 9 == 0) ++nans;
    w->column(2).AddDouble(0, i % 9 == 0 ? NAN : static_cast<double>(i));
    ASSERT_OK(w->EndRecord());
  }
  ASSERT_OK_AND_ASSIGN(auto m, w->Close());

  DataFile f = ParquetDataFile(m, "s3://b/t/data/x.parquet", {Literal::Int(7)}, 3);
  EXPECT_EQ(f.file_path, "s3://b/t/data/x.parquet");
  EXPECT_EQ(f.file_format, "PARQUET");
  EXPECT_EQ(f.record_count, 100);
  EXPECT_EQ(f.file_size_in_bytes, static_cast<int64_t>(bytes.size()));
  EXPECT_EQ(f.spec_id, 3);
  ASSERT_EQ(f.partition.size(), 1u);
  EXPECT_EQ(f.value_counts.at(1), 100);
  EXPECT_EQ(f.value_counts.at(2), 100);
  EXPECT_EQ(f.null_value_counts.at(2), nulls);
  EXPECT_EQ(f.null_value_counts.at(1), 0);
  EXPECT_EQ(f.nan_value_counts.at(3), nans);
  EXPECT_EQ(f.lower_bounds.at(1), Le64(30));
  EXPECT_EQ(f.upper_bounds.at(1), Le64(327));
  EXPECT_EQ(f.lower_bounds.at(2), "n0");
  EXPECT_EQ(f.upper_bounds.at(2), "n6");
  int64_t sizes = 0;
  for (const auto& [id, s] : f.column_sizes) {
    EXPECT_GT(s, 0) << id;
    sizes += s;
  }
  EXPECT_LT(sizes, static_cast<int64_t>(bytes.size()));
  EXPECT_EQ(f.split_offsets, m.split_offsets);
  ASSERT_FALSE(f.split_offsets.empty());
  EXPECT_EQ(f.split_offsets[0], 4);  // after "PAR1"
}

}  // namespace
}  // namespace icestream::iceberg
