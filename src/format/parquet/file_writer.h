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
// background thread for page encoding and compression). Several threads may fill their
// own RowGroupBuilders (NewRowGroupBuilder) and pass the results to AppendRowGroup from
// one thread at a time.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "format/parquet/column_writer.h"
#include "format/parquet/file_reader.h"
#include "format/parquet/output_stream.h"
#include "format/parquet/record_sink.h"
#include "format/parquet/row_group_builder.h"
#include "format/parquet/schema_mapping.h"
#include "format/parquet/writer_options.h"
#include "iceberg/schema/schema.h"

namespace icestream::format::parquet {

// Per leaf column, what Iceberg's data_file needs (Iceberg spec "Manifests": column
// sizes, value/null/NaN counts, lower/upper bounds in single-value serialization).
// Like Iceberg Java (ParquetMetrics), columns inside a list or map report their size
// only: counts and bounds are left unset.
struct ColumnMetrics {
  int32_t field_id = 0;
  int64_t column_size = 0;             // Σ chunk total_compressed_size
  std::optional<int64_t> value_count;  // Σ num_values (nulls included)
  std::optional<int64_t> null_count;
  std::optional<int64_t> nan_count;  // float / double only
  std::optional<std::string> lower_bound;
  std::optional<std::string> upper_bound;
};

struct FileMetrics {
  int64_t record_count = 0;
  int64_t file_size = 0;
  std::vector<ColumnMetrics> columns;  // leaf order
  std::vector<int64_t> split_offsets;  // start offset of each row group
};

class FileWriter final : public RecordSink {
 public:
  static Result<std::unique_ptr<FileWriter>> Make(const iceberg::Schema& schema, OutputStream* sink,
                                                  WriterOptions options);
  ~FileWriter() override;

  const ParquetSchema& schema() const override { return schema_; }
  ColumnWriter& column(int leaf) override { return builder_->column(leaf); }
  int num_columns() const { return static_cast<int>(schema_.columns().size()); }
  const WriterOptions& options() const { return options_; }

  // Commits the current record; writes the row group out once it is full. Errors come
  // from the sink or a codec and leave the writer unusable.
  Status EndRecord() override;
  // Drops every level and value added since the previous EndRecord().
  void AbortRecord() override;

  int64_t num_rows() const { return total_rows_ + builder_->num_rows(); }

  // For parallel producers: a builder of this file's schema and options. Row groups it
  // finishes are placed with AppendRowGroup. The builder must not outlive the writer.
  Result<std::unique_ptr<RowGroupBuilder>> NewRowGroupBuilder() const;
  // Places a finished row group after the previous ones (the records added through
  // this writer's own EndRecord() are flushed first, so rows keep their order).
  // Clears *data.
  Status AppendRowGroup(RowGroupData* data);

  // Places every row group of `reader` after the previous ones as it is: the bytes of
  // its column chunks are copied, neither decoded nor compressed again (a merge of small
  // files written with this schema), and its chunk statistics count in the file's
  // metrics. Parquet's statistics hold no NaN counts: `nan_counts` are the file's, by
  // field id (Iceberg's nan_value_counts); a float or double leaf missing there makes
  // this file's count of it unknown (not reported). kFailedPrecondition, with nothing
  // written, when a row group cannot be placed as it is (the file's schema is not this
  // writer's, its chunks are not back to back in leaf order, or a chunk lacks a null
  // count or exact bounds): copy its rows then (ParquetFileReader::CopyRows). Other
  // errors are the sink's and leave the writer unusable.
  Status AppendFileAsIs(const ParquetFileReader& reader,
                        const std::map<int32_t, int64_t>& nan_counts);

  // Writes the last row group and the footer, closes the sink.
  Result<FileMetrics> Close();

 private:
  FileWriter(ParquetSchema schema, OutputStream* sink, WriterOptions options);
  Status FlushOwnRowGroup();
  // One row group of `reader` as RowGroupData (offsets from its first byte), or
  // kFailedPrecondition (AppendFileAsIs).
  Status PrepareAsIs(const ParquetFileReader& reader, int row_group, RowGroupData* out) const;

  ParquetSchema schema_;
  OutputStream* sink_;
  WriterOptions options_;
  std::unique_ptr<RowGroupBuilder> builder_;  // for records added through this writer
  RowGroupData scratch_;
  FileMetaData footer_;
  std::vector<StatsAccumulator> file_stats_;
  std::vector<ColumnMetrics> metrics_;
  std::vector<bool> nan_unknown_;  // by leaf: a file placed as it is without its NaN count
  std::vector<int64_t> split_offsets_;
  int64_t total_rows_ = 0;
  bool started_ = false;
  bool closed_ = false;
  Status error_;
};

}  // namespace icestream::format::parquet
