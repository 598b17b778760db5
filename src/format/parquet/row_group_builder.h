// RowGroupBuilder: records -> the column chunks of one row group, in memory.
//
// Builders are independent of each other and of the file: several threads can each
// fill their own builder (from the same ParquetSchema and WriterOptions) and hand the
// finished row groups to one FileWriter, which places them in the file. A finished
// row group's offsets are relative to its own first byte until the FileWriter places
// it.
//
// Not thread-safe. With `background_pages` the builder owns one worker thread that
// encodes and compresses cut pages while the caller keeps adding records.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "format/parquet/background_worker.h"
#include "format/parquet/column_writer.h"
#include "format/parquet/compression.h"
#include "format/parquet/metadata.h"
#include "format/parquet/record_sink.h"
#include "format/parquet/schema_mapping.h"
#include "format/parquet/statistics.h"
#include "format/parquet/writer_options.h"

namespace icestream::format::parquet {

// A finished row group: its column chunks back to back as `pieces` (per chunk its
// dictionary page, possibly empty, then its data pages), their metadata (offsets
// relative to the start of the first piece) and their exact statistics.
//
// The pieces are the column builders' own buffers, swapped out rather than copied into
// one (a copy of every byte and a fresh buffer of the row group's size, first touched
// page by page); a RowGroupData given to Finish() again hands its old pieces' capacity
// back to the builders.
struct RowGroupData {
  int64_t num_rows = 0;
  std::vector<std::string> pieces;
  std::vector<ColumnChunk> chunks;
  std::vector<StatsAccumulator> stats;

  size_t size() const {
    size_t n = 0;
    for (const auto& p : pieces) n += p.size();
    return n;
  }
};

class RowGroupBuilder final : public RecordSink {
 public:
  // schema and options must outlive the builder.
  static Result<std::unique_ptr<RowGroupBuilder>> Make(const ParquetSchema* schema,
                                                       const WriterOptions* options,
                                                       bool background_pages);
  ~RowGroupBuilder() override;

  const ParquetSchema& schema() const override { return *schema_; }
  ColumnWriter& column(int leaf) override { return *columns_[static_cast<size_t>(leaf)]; }
  // Commits the record; may cut pages (encoding them here or on the worker).
  Status EndRecord() override;
  void AbortRecord() override;

  int64_t num_rows() const { return rows_; }
  // Uncompressed size estimate of the pages already cut.
  int64_t estimated_bytes() const { return bytes_; }
  // Whether the row group reached options.row_group_size (cut pages plus the pages still
  // being filled) or max_row_group_rows.
  bool full() const {
    if (rows_ >= options_->max_row_group_rows || bytes_ >= options_->row_group_size) return true;
    // The open pages are summed only when they could make the difference.
    if (bytes_ + static_cast<int64_t>(columns_.size()) * options_->page_size <
        options_->row_group_size) {
      return false;
    }
    int64_t open = 0;
    for (const auto& c : columns_) open += c->EstimatedPageBytes();
    return bytes_ + open >= options_->row_group_size;
  }

  // Moves everything into *out and starts a new, empty row group.
  Status Finish(RowGroupData* out);

 private:
  RowGroupBuilder(const ParquetSchema* schema, const WriterOptions* options);
  Status CutPage(ColumnWriter& column);

  const ParquetSchema* schema_;
  const WriterOptions* options_;
  std::vector<std::unique_ptr<ColumnWriter>> columns_;
  std::unique_ptr<Compressor> compressor_;         // caller's thread
  std::unique_ptr<Compressor> worker_compressor_;  // background thread
  std::unique_ptr<BackgroundWorker> worker_;
  int64_t rows_ = 0;
  int64_t bytes_ = 0;
  Status error_;
};

}  // namespace icestream::format::parquet
