// ParallelConverter: JSON records → Parquet row groups on several threads.
//
// Work comes in blocks of records (a block of JSON lines, a run of log records); each
// thread converts whole blocks with its own converters into its own RowGroupBuilders and
// hands the finished row groups, with the block's rejections, to `place` — in block
// order, one block at a time — so the output does not depend on the number of threads
// (but see carry_across_blocks).
// With routing, the rows of a block are split into row groups by a key of a field's
// value (e.g. the Iceberg hour of a timestamp): each key's rows become their own row
// groups, in input order.
//
// Memory: per thread, the row groups of the block it converts (a row group is cut at
// WriterOptions::row_group_size) plus the block itself; and prefetch_blocks blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "format/parquet/row_group_builder.h"
#include "format/parquet/schema_mapping.h"
#include "format/parquet/writer_options.h"
#include "schema/json_schema.h"
#include "schema/record_converter.h"

namespace icestream::schema {

struct ConvertBlock {
  int64_t seq = 0;  // blocks reach `place` in seq order: 0, 1, 2, ... (see carry_across_blocks)
  std::vector<std::string_view> records;
  // Memory up to here may be read past a record (simdjson's padding); a record that
  // ends closer to it than RecordConverter::kPadding (or any record, when null) is
  // copied into a padded buffer first.
  const char* readable_end = nullptr;
  // Per record: whether kPadding bytes after it are readable wherever it lies (records
  // from many buffers, each padded); records past its end are not.
  std::vector<uint8_t> padded;
  // Whatever keeps the records' bytes alive; handed back with the converted block.
  std::shared_ptr<void> owner;
};

struct Rejection {
  size_t index = 0;  // of the record in its block
  RecordError error;
};

struct ConvertedBlock {
  int64_t seq = 0;  // -1: a thread's last row groups (carry_across_blocks)
  size_t records = 0;
  int64_t rows = 0;
  // Finished row groups by route key (key 0 without routing), each in input order.
  std::map<int64_t, std::vector<format::parquet::RowGroupData>> row_groups;
  std::vector<Rejection> rejections;  // in input order
  std::shared_ptr<void> owner;
};

struct ParallelConverterOptions {
  int threads = 1;
  ConverterOptions converter;
  // Routing (converter.route_field_id != 0): a row goes to the row groups of key
  // route_key(value); route_range(key) is the [lo, hi) of values with that key. A row
  // whose routed field is null goes to key INT64_MIN.
  std::function<int64_t(int64_t value)> route_key;
  std::function<std::pair<int64_t, int64_t>(int64_t key)> route_range;
  // Rows stay in a thread's open row group across blocks (a row group ends when full or
  // at the end of the input), so small blocks still make large row groups. Rows then
  // reach the file in no fixed order: the output depends on the thread count, and
  // blocks are placed as they are done (a thread does not wait for a slower one's
  // block). At the end every thread hands its last row groups to `place` in a block with
  // seq -1 (no records, no rejections).
  bool carry_across_blocks = false;
  // Blocks made ahead by a thread of their own while the threads convert (0: each thread
  // makes its next block itself, one at a time), for a `next` that waits for a disk or a
  // network.
  int prefetch_blocks = 0;
};

// Where the threads' time went (for a caller's debug log), summed over the threads, ms.
struct ParallelConverterTimes {
  double wait_next = 0;  // waiting for another thread's `next`
  double next = 0;       // in `next`
  double convert = 0;    // converting records and finishing row groups
  double wait_turn = 0;  // a converted block waiting for its turn to be placed
  double place = 0;      // in `place`
  double flush = 0;      // the last row groups (carry_across_blocks)
  double idle_end = 0;   // from a thread's end to the last thread's
};

class ParallelConverter {
 public:
  // `next` fills the next block (called by several threads, one at a time; false at
  // the end). `place` gets the converted blocks in seq order (in the order they are done
  // with carry_across_blocks), one at a time; an error
  // from it (or from `next`, or a writer) stops every thread and is returned. `schema`,
  // `parquet_schema` (the Parquet form of schema.schema) and `writer_options` must
  // outlive the call.
  static Status Run(const ConvertibleSchema& schema,
                    const format::parquet::ParquetSchema& parquet_schema,
                    const format::parquet::WriterOptions& writer_options,
                    const ParallelConverterOptions& options,
                    const std::function<Result<bool>(ConvertBlock*)>& next,
                    const std::function<Status(ConvertedBlock&&)>& place,
                    ParallelConverterTimes* times = nullptr);
};

}  // namespace icestream::schema
