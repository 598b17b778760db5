// BatchWriter: one delivery batch of a table channel → Parquet data files (not yet
// committed) and the records that go to the dead-letter queue.
//
// Records come from the batch's RecordSource in blocks; a Decoder (the sink's: JSON or
// GSR_JSON framing) turns each into JSON text or a rejection; a ParallelConverter
// converts the blocks on several threads into row groups routed by the partition hour;
// the row groups of one hour gather in one file, which is cut at the target size (or
// early when the open files of the batch exceed their memory budget) and written
// through `place_file`, which names and uploads it. Files hold rows of every shard.
//
// Not thread-safe: one Run at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "delivery/sink.h"
#include "delivery/table/table_layout.h"
#include "format/parquet/file_writer.h"
#include "format/parquet/schema_mapping.h"
#include "format/parquet/writer_options.h"
#include "iceberg/manifest.h"
#include "schema/parallel_converter.h"

namespace icestream::delivery::table {

// A record that goes to the dead-letter queue.
struct Reject {
  size_t range = 0;  // in the batch
  std::string sequence_number;
  uint64_t ordinal = 0;
  std::optional<uint32_t> sub_sequence;
  int64_t arrival_ms = 0;
  std::string code;
  std::string message;
  std::string path;  // the JSON path the error names ("" when none)
  // The record itself, kept only for a channel whose DLQ lines carry it
  // (BatchWriterOptions::keep_rejected_data).
  std::string partition_key;
  std::string data;
};

// Where a converted record came from.
struct RecordOrigin {
  size_t range = 0;
  std::string_view sequence_number;  // into the block's chunks
  uint64_t ordinal = 0;
  int64_t arrival_ms = 0;
  std::optional<uint32_t> sub_sequence;
  size_t bytes = 0;
  std::string_view partition_key;  // into the block's chunks
  std::string_view data;           // the record as read (before GSR framing is removed)
};

// A block handed to the converter: the chunks its records point into, payloads the
// decoder made (inflated GSR payloads), where each converted record came from, and the
// records the decoder refused.
struct BlockOwner {
  std::vector<RecordChunk> chunks;
  std::deque<std::string> made;       // a deque: views into its strings survive growth
  std::vector<RecordOrigin> origins;  // of ConvertBlock::records
  std::vector<Reject> rejects;
  uint64_t records_in = 0;
  uint64_t bytes_in = 0;
  // Chunks of an earlier block, emptied, whose record vectors the next chunks fill.
  std::vector<RecordChunk> spare_chunks;

  // Empties the owner for another block of the batch: the chunks' buffers are let go,
  // the vectors keep their capacity (a block's origins and records, fresh per block,
  // were a page fault per 4 KiB they grew into).
  void Reset();
};

// Decodes one record: appends its JSON text to block->records and its origin to
// owner->origins, or a Reject to owner->rejects. A non-OK status stops the batch.
using Decoder = std::function<Status(const SourceRecord& rec, size_t range, BlockOwner* owner,
                                     schema::ConvertBlock* block)>;

// Names and writes one finished file of partition hour `hour`; returns it as a data file.
using FilePlacer = std::function<Result<iceberg::DataFile>(
    int64_t hour, const std::string& bytes, const format::parquet::FileMetrics& metrics)>;

// What a table channel keeps from one batch for the next (BatchWriterOptions::workspace):
// an emptied file buffer. Made fresh for every file, its memory was a page fault and a
// zeroed page per 4 KiB written (the largest part of a backlog delivery's page faults,
// bench/table-delivery --perf). The owner frees it once batches stop coming (Release).
// Thread-safe: batches of several shards may run at once.
class BatchWorkspace {
 public:
  // An emptied file buffer with its capacity, or a new one.
  std::string TakeFileBuffer();
  // Keeps at most kMaxFiles buffers; others are freed.
  void GiveFileBuffer(std::string bytes);
  size_t kept_files() const;

  // Frees everything kept.
  void Release();

  static constexpr size_t kMaxFiles = 1;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> files_;
};

struct BatchWriterOptions {
  int64_t target_file_size_bytes = 128ll << 20;
  int64_t max_buffered_bytes = 256ll << 20;
  int convert_threads = 2;
  size_t block_bytes = 16u << 20;
  size_t block_records = 16384;
  // Blocks made ahead of the converters, by a thread that reads the source
  // (ParallelConverterOptions::prefetch_blocks).
  int prefetch_blocks = 1;
  // The records the batch was planned with (0: not known): blocks get smaller as the
  // batch nears its end, so the converter threads finish together.
  uint64_t expected_records = 0;
  format::parquet::WriterOptions writer;
  bool keep_rejected_data = false;  // copy a rejected record's key and data into its Reject
  // Kept between batches (null: nothing is kept).
  BatchWorkspace* workspace = nullptr;
};

struct BatchOutput {
  std::vector<iceberg::DataFile> files;
  std::vector<Reject> rejects;  // sorted by range, ordinal, sub-sequence number
  DeliveryCounts counts;  // records_in, bytes_in, bytes_processed, delivered, failed, bytes_out
};

class BatchWriter {
 public:
  // `layout` is the schema the rows are written with and `pschema` its Parquet mapping;
  // both must outlive the writer and must not change while Run runs (a WriteTarget).
  BatchWriter(const TableLayout* layout, const format::parquet::ParquetSchema* pschema,
              BatchWriterOptions options)
      : layout_(layout), pschema_(pschema), options_(std::move(options)) {}

  Status Run(RecordSource* source, const Decoder& decode, const FilePlacer& place_file,
             BatchOutput* out);

 private:
  const TableLayout* layout_;
  const format::parquet::ParquetSchema* pschema_;
  BatchWriterOptions options_;
};

}  // namespace icestream::delivery::table
