// FileWriter: records -> row groups -> a Parquet file (parquet-format README "File
// Format"):
//
//   "PAR1" | row group 0: column chunk 0 .. n | row group 1 ... | FileMetaData (thrift
//   compact) | u32 LE footer length | "PAR1"
//
// Usage: for each record, add its level entries and values to column(i) for every
// leaf (record shredding is the caller's: see schema_mapping.h ShredNode), then call
// EndRecord() to commit the row or AbortRecord() to drop everything added since the
// previous EndRecord(). Close() writes the footer and returns what an Iceberg manifest
// needs about the file.
//
// Memory: the current row group's compressed pages plus one page per column; a row
// group is written out once its uncompressed size reaches options.row_group_size.
// Not thread-safe (one caller thread; with options.threads = 2 the writer owns one
// background thread for page encoding and compression).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "format/parquet/background_worker.h"
#include "format/parquet/column_writer.h"
#include "format/parquet/output_stream.h"
#include "format/parquet/schema_mapping.h"
#include "format/parquet/writer_options.h"
#include "iceberg/schema.h"

namespace icestream::format::parquet {

// Per leaf column, what Iceberg's data_file needs (Iceberg spec "Manifests": column
// sizes, value/null/NaN counts, lower/upper bounds in single-value serialization).
// Like Iceberg Java (ParquetMetrics), columns inside a list or map report their size
// only: counts and bounds are left unset.
struct ColumnMetrics {
  int32_t field_id = 0;
  int64_t column_size = 0;               // Σ chunk total_compressed_size
  std::optional<int64_t> value_count;    // Σ num_values (nulls included)
  std::optional<int64_t> null_count;
  std::optional<int64_t> nan_count;      // float / double only
  std::optional<std::string> lower_bound;
  std::optional<std::string> upper_bound;
};

struct FileMetrics {
  int64_t record_count = 0;
  int64_t file_size = 0;
  std::vector<ColumnMetrics> columns;  // leaf order
  std::vector<int64_t> split_offsets;  // start offset of each row group
};

class FileWriter {
 public:
  static Result<std::unique_ptr<FileWriter>> Make(const iceberg::Schema& schema,
                                                  OutputStream* sink, WriterOptions options);
  ~FileWriter();

  const ParquetSchema& schema() const { return schema_; }
  ColumnWriter& column(int leaf) { return *columns_[static_cast<size_t>(leaf)]; }
  int num_columns() const { return static_cast<int>(columns_.size()); }

  // Commits the current record. May cut pages and write a row group; errors come from
  // the sink or a codec and leave the writer unusable.
  Status EndRecord();
  // Drops every level and value added since the previous EndRecord().
  void AbortRecord();

  int64_t num_rows() const { return total_rows_ + rows_in_group_; }

  // Writes the last row group and the footer, closes the sink.
  Result<FileMetrics> Close();

 private:
  FileWriter(ParquetSchema schema, OutputStream* sink, WriterOptions options);
  Status CutPage(ColumnWriter& column);
  Status FlushRowGroup();

  ParquetSchema schema_;
  OutputStream* sink_;
  WriterOptions options_;
  std::vector<std::unique_ptr<ColumnWriter>> columns_;
  std::unique_ptr<Compressor> compressor_;         // caller's thread
  std::unique_ptr<Compressor> worker_compressor_;  // background thread
  std::unique_ptr<BackgroundWorker> worker_;
  FileMetaData footer_;
  std::vector<StatsAccumulator> file_stats_;
  std::vector<ColumnMetrics> metrics_;
  std::vector<int64_t> split_offsets_;
  int64_t rows_in_group_ = 0;
  int64_t total_rows_ = 0;
  int64_t group_bytes_ = 0;  // uncompressed estimate of the current row group
  bool started_ = false;
  bool closed_ = false;
  Status error_;
};

}  // namespace icestream::format::parquet
