// BatchBuilder: turns one shard's run of records into the S3 objects of one delivery
// batch (kds-delivery-spec.md §3.1): validates each record for the channel's format,
// frames it (JSON/STRING: record + "\n"; BYTE_ARRAY: as is), groups consecutive records by
// their rendered key (the per-record UTC arrival time), compresses each group into one
// object named template + deterministic suffix, and collects invalid records as DLQ
// JSON lines (§4). Pure: same records in, same bytes out — what makes a replayed batch
// overwrite rather than duplicate.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "delivery/channel.h"
#include "delivery/dlq.h"
#include "delivery/s3/key_template.h"
#include "delivery/s3/stream_compressor.h"

namespace icestream::delivery::s3 {

struct BatchRecord {
  std::string_view sequence_number;
  uint64_t ordinal = 0;  // StreamRecord::ordinal
  int64_t arrival_ms = 0;
  std::string_view data;
  std::optional<uint32_t> sub_sequence;  // a user record of a KPL aggregate
  std::string_view error;                 // a KPL aggregate that does not decode
};

struct BatchObject {
  std::string key;
  std::string body;
  std::string first_sequence_number;
  std::string last_sequence_number;
  size_t records = 0;
  size_t raw_bytes = 0;  // record payload bytes (before framing and compression)
};

struct BatchResult {
  std::vector<BatchObject> objects;
  std::optional<DlqObject> dlq;  // JSON lines, one per invalid record
  size_t records_in = 0;
  size_t bytes_in = 0;
  size_t failed_records = 0;
};

struct BatchContext {
  const ChannelConfig* channel = nullptr;
  const KeyTemplate* key_template = nullptr;
  std::string shard_id;  // "shardId-000000000003"
  int compression_level = 0;
  int64_t attempt_ms = 0;  // the DLQ lines' attemptTimestamp (fixed by the batch plan)
};

class BatchBuilder {
 public:
  explicit BatchBuilder(BatchContext ctx);
  Status Add(const BatchRecord& rec);
  Result<BatchResult> Finish();

  // Why a record is invalid for the format, or nullopt when it is fine.
  struct Invalid {
    std::string code;
    std::string message;
  };
  static std::optional<Invalid> Validate(RecordFormat format, std::string_view data);

 private:
  Status CloseGroup();
  // The rendered key (without suffix) for this arrival time; templates resolve to the
  // minute at most, so one rendering per minute is enough.
  const std::string& KeyFor(int64_t arrival_ms);
  BatchContext ctx_;
  int64_t key_minute_ = INT64_MIN;
  std::string key_cache_;
  KeyContext key_ctx_;
  BatchResult result_;
  std::string group_key_;  // rendered key without suffix of the open group
  std::unique_ptr<StreamCompressor> group_;
  BatchObject current_;
  DlqBatch dlq_;
};

}  // namespace icestream::delivery::s3
