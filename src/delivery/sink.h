// The seam between the destination-blind delivery engine (ShardRunner: when a shard is
// due, which records a batch holds, plans, checkpoints, backoff) and what a destination
// does with a batch (an S3 sink writes objects, a table sink writes Parquet files and
// commits them to an Iceberg table).
//
// A Destination is registered once per destination type (server/ wires them in, so the
// engine links neither S3 key templates nor Iceberg); it checks a CreateChannel request
// and makes one Sink per channel. A Sink reports every failure as a returned Status —
// it never calls back into the engine; IsPermanent() tells the engine whether to retry
// the batch or to fail the channel.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "delivery/channel.h"
#include "delivery/dlq.h"
#include "delivery/position.h"
#include "delivery/redrive.h"
#include "delivery/retry.h"
#include "objectstore/object_store.h"

namespace icestream::delivery {

// One shard's part of a batch: the records after `after` up to and including
// `last_sequence` (Kinesis sequence numbers, position.h).
struct ShardRange {
  std::string shard;  // shard id
  Position after;
  std::string last_sequence;
  uint64_t records = 0;  // Kinesis records in the range, as planned
  // The position the shard's checkpoint moves to once the batch is delivered.
  Position end() const { return Position{last_sequence, std::nullopt}; }
  bool operator==(const ShardRange&) const = default;
};

// What one delivery attempt covers. A replay (after a crash or a failed attempt) has the
// same ranges and attempt time as the first attempt, so a sink that names its output
// after the records rebuilds the same names and bytes.
struct DeliveryBatch {
  std::vector<ShardRange> ranges;
  int64_t attempt_ms = 0;  // fixed when the batch was planned
  bool replay = false;     // an earlier attempt may have written part of the output
  // Set for a batch of a DLQ redrive (redrive.h): its records are the span's entries read
  // again; `ranges` then name the shards they belong to (one range per shard, in the
  // entries' order, after/last_sequence empty) and no checkpoint moves. The destination
  // records the span's progress where it records checkpoints (a table's snapshot
  // summary); every entry's outcome goes to the span's report (RedriveReport) before
  // that. An S3 batch of a redrive holds one shard.
  std::shared_ptr<const RedriveSpan> redrive;
};

// One record as a sink sees it: a stream record, or one user record of a KPL aggregate
// (kpl.h), which the engine unpacks for every destination. Views into its chunk's
// storage.
struct SourceRecord {
  std::string_view sequence_number;
  uint64_t ordinal = 0;  // StreamRecord::ordinal of the Kinesis record
  int64_t arrival_ms = 0;
  std::optional<uint32_t> sub_sequence;  // the user record's index in its aggregate
  std::string_view partition_key;
  std::string_view data;
  // Non-empty for a KPL aggregate that does not decode: the sink writes it to the
  // dead-letter queue (DESERIALIZATION_ERROR) with this message instead of delivering it.
  std::string error;
};

struct RecordChunk {
  size_t range = 0;                     // index into DeliveryBatch::ranges
  std::vector<SourceRecord> records;    // of that range, in order
  std::shared_ptr<const void> storage;  // the bytes `records` point into
  // At least this many bytes after the data of each record are readable in `storage`
  // (StreamChunk::padding; KPL user records lie inside their aggregate).
  size_t padding = 0;
};

// The records of a batch, read from the source. Thread-safe: several threads may take
// chunks at once; each chunk is handed out once, chunks of one range in order.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  // Fills *chunk with the next chunk; false when every range has been read. Errors:
  // the source could not be read (retry the batch later).
  virtual Result<bool> Next(RecordChunk* chunk) = 0;
  // Starts over from the batch's first record (a sink that must change something at
  // its destination before it can take the batch, such as a table's schema).
  virtual Status Rewind() = 0;
  // A redrive batch's entries (worklist indices) whose record the source no longer
  // holds (past the stream's retention): reported as EXPIRED. Complete once Next() has
  // returned false.
  virtual std::set<uint64_t> Missing() const { return {}; }
};

// A figure of a sink's own for /metrics (beyond the AWS metrics every channel has),
// exposed as icestream_<name>{channel_name, channel_id, stream_name}.
struct SinkMetric {
  std::string name;  // e.g. "table_compaction_files_merged_total"
  std::string type;  // "counter" | "gauge"
  std::string help;
  double value = 0;
};

// What a delivered batch did (the channel's metrics, kds-delivery-spec.md §5.1).
struct DeliveryCounts {
  uint64_t records_in = 0;       // records read
  uint64_t bytes_in = 0;         // their data bytes
  uint64_t bytes_processed = 0;  // data bytes of the valid records
  uint64_t bytes_out = 0;        // bytes written to the destination
  uint64_t delivered = 0;        // records (rows) now in the destination
  uint64_t failed = 0;           // records that went to the dead-letter queue
  uint64_t dlq_records = 0;      // DLQ lines written
  uint64_t deliveries = 0;       // objects written / commits made
  RejectSummary rejects;         // what the DLQ lines were (DlqBatch::summary)
  // A redrive batch: the redrive's progress after it (what the destination now holds,
  // even when an earlier attempt delivered the batch already).
  std::optional<RedriveProgress> redrive;
};

class Sink {
 public:
  virtual ~Sink() = default;

  // True when one batch takes every shard that has records to deliver (one table
  // commit for all of them); false when every shard has its own batches.
  virtual bool spans_shards() const = 0;

  // Checks that the destination can be written (activation, and again after a restart).
  // Errors: retryable ones (kUnavailable, kFailedPrecondition for access problems, ...)
  // mean "not yet"; IsPermanent() ones fail the channel.
  virtual Status Check() = 0;

  // What the destination itself records as delivered, shard id → position (a table's
  // snapshot summary). Empty for destinations that keep no checkpoints. Same errors as
  // Check().
  virtual Result<std::map<std::string, Position>> Checkpoints() = 0;
  // What the destination itself records of the channel's redrive progress (a table's
  // snapshot summary); nullopt where the delivery store alone keeps it. Same errors.
  virtual Result<std::optional<RedriveProgress>> HeldRedrive() {
    return std::optional<RedriveProgress>();
  }

  // Delivers exactly the records of `batch` (read from `source` until it is empty).
  // On success every valid record is in the destination and every invalid one in the
  // dead-letter queue. On failure nothing may be assumed; the same batch is offered
  // again (replay = true) unless the error IsPermanent. A sink makes one attempt at
  // each write and reports a failure it could retry as kUnavailable: retrying (with
  // backoff, bounded per batch, never holding a delivery worker while it waits) is the
  // engine's job, so one dead endpoint cannot stall other channels.
  virtual Result<DeliveryCounts> Deliver(const DeliveryBatch& batch, RecordSource* source) = 0;

  // Staged delivery (a table in a scale-out pool, table/staging.h): true when a batch of
  // one shard is written and staged wherever that shard's unit is held, and made visible
  // by a commit that the holder of the channel's control unit runs on its own schedule.
  virtual bool staged() const { return false; }
  // When that commit is next due (epoch ms; INT64_MAX: never), and one run of it: what is
  // staged now, committed (DeliveryCounts::deliveries counts the commits). The engine runs
  // it only where the control unit is held, beside the shards' batches. Errors as
  // Deliver's.
  virtual int64_t NextCommitMs() const { return INT64_MAX; }
  virtual Result<DeliveryCounts> CommitStaged() { return DeliveryCounts{}; }

  // Maintenance of the destination on its own schedule (a table's compaction, snapshot
  // expiry, orphan removal): when it is next due (epoch ms; INT64_MAX: never), and one
  // run of it. The engine runs it only while no batch of the channel is in flight, on a
  // delivery worker, so it never races the channel's writes. Errors are the sink's to
  // log; they do not fail the channel. With a coordinator it runs where the control unit
  // is held.
  virtual int64_t NextUpkeepMs() const { return INT64_MAX; }
  virtual void Upkeep() {}

  // icestream status fields for DescribeChannel (e.g. the table's live data files).
  virtual nlohmann::json StatusJson() const { return nlohmann::json::object(); }
  // Its own /metrics figures. Thread-safe.
  virtual std::vector<SinkMetric> Metrics() const { return {}; }
};

// What a sink gets from the engine.
struct SinkEnv {
  // General-purpose buckets: S3 destinations and every dead-letter queue.
  objectstore::ObjectStore* buckets = nullptr;
  // Whether buckets are local folders (no owners: ExpectedBucketOwner is not sent).
  bool local_buckets = true;
  const Clock* clock = nullptr;
  int compression_level = 0;  // 0 = codec default
  // Scale-out (several processes may write a shard's objects: a fenced-off one that woke
  // up, a takeover replaying a plan): S3 objects are created, never overwritten
  // (If-None-Match: *), and a store that ignores the condition is refused (s3_sink.h).
  bool create_only_keys = false;
  // True once the channel is being deleted or the server stops: cut long work short.
  std::function<bool()> stopping;
  // Appends an event to the channel's delivery log (a no-op when logging is off).
  std::function<void(nlohmann::json)> log_event;
  // A small document the sink may keep in meta.db across restarts (e.g. "the table
  // was created"); loaded by the sink, saved when it changes.
  std::function<Result<nlohmann::json>()> load_state;
  std::function<Status(const nlohmann::json&)> save_state;
};

class Destination {
 public:
  virtual ~Destination() = default;
  virtual DestinationType type() const = 0;
  // CreateChannel: checks what needs the destination's knowledge (key template rules,
  // the registry schema, ...) and fills in defaults. The channel's id, name and ARN are
  // set. Errors use the Kinesis mapping (kInvalidArgument → InvalidArgumentException,
  // kNotFound → ResourceNotFoundException).
  virtual Status Prepare(ChannelConfig* config) = 0;
  virtual Result<std::unique_ptr<Sink>> MakeSink(const ChannelConfig& config, SinkEnv env) = 0;
};

}  // namespace icestream::delivery
