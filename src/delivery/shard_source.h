// The record source seam: where a channel's records come from. The delivery engine
// (ShardRunner) reads shards only through these interfaces, so the same engine delivers
// from this server's own shard logs (source/local) and from any Kinesis endpoint over the
// API — another icestream server, kinesalite or AWS Kinesis (source/kinesis).
//
// A source speaks Kinesis sequence numbers (position.h), never a source's internal
// offsets: a range is "after position P, up to and including sequence number L".
//
//   ShardSource        one channel's stream: its shards with lineage, the backlog after
//                      a position, the next range to deliver, and readers over ranges.
//   RangeReader        the records of one planned range, in order, in chunks whose
//                      records are views into the chunk's storage (no per-record copy);
//                      ReadRecord reads one record named by its sequence number again
//                      (a DLQ line being redriven).
//   SourceProvider     streams by name (CreateChannel's checks) and a ShardSource per
//                      channel.
//
// Records are Kinesis records as stored (a KPL aggregate is one record here; the engine
// unpacks aggregates for every destination).
//
// Thread-safety: ShardSource and SourceProvider methods may be called from any thread;
// a RangeReader is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "delivery/channel.h"
#include "delivery/position.h"

namespace icestream::delivery {

struct SourceShard {
  std::string id;                    // "shardId-000000000003"
  std::vector<std::string> parents;  // ParentShardId and AdjacentParentShardId, when set
  bool closed = false;               // its end is fixed: no record will be added to it
};

struct ShardBacklog {
  // Records after the position that the source knows of now (a remote source: those it
  // has read ahead), their approximate data bytes and the arrival time of the first.
  uint64_t records = 0;
  uint64_t bytes = 0;
  int64_t oldest_arrival_ms = -1;  // -1: no record pending
  // The shard is closed and nothing after the position is left: delivered to its end.
  bool finished = false;
  // Set when records right after the position are gone (retention): the position to
  // move to (nobody can deliver them any more) and how many were lost (0: unknown).
  std::optional<Position> trimmed_to;
  uint64_t trimmed_records = 0;
  // From Behind() of a remote source: `records` is only what one read found (the lag is
  // then `millis_behind`, the endpoint's MillisBehindLatest).
  bool records_exact = true;
  std::optional<int64_t> millis_behind;
};

struct PlannedRange {
  Position after;
  std::string last_sequence;  // the range's last record (inclusive)
  uint64_t records = 0;
  uint64_t bytes = 0;  // approximate
};

// One Kinesis record as the source holds it. `ordinal` increases with the sequence
// number within a shard and is unique in it (a local log's offset; for other sources a
// number derived from the sequence number); object names use it.
struct StreamRecord {
  std::string_view sequence_number;
  uint64_t ordinal = 0;
  int64_t arrival_ms = 0;
  std::string_view partition_key;
  std::string_view data;
};

struct StreamChunk {
  std::vector<StreamRecord> records;
  std::shared_ptr<const void> storage;  // the bytes the records point into
  // At least this many bytes after each record's data are readable in `storage` (a JSON
  // parser may read past a record instead of copying it first).
  size_t padding = 0;
};

class RangeReader {
 public:
  virtual ~RangeReader() = default;
  // The next records of the range, in order; false once the range is read. Records that
  // retention removed before they could be read are skipped (with a warning): nobody can
  // deliver them. Errors: the source cannot be read now (kUnavailable, kThrottled: the
  // batch is retried later), the records are damaged (kCorruption).
  virtual Result<bool> Next(StreamChunk* chunk) = 0;
};

class ShardSource {
 public:
  virtual ~ShardSource() = default;

  // The id of the local stream this source reads (its logs: retention keeps what the
  // channel still needs); 0 for a stream read from another endpoint.
  virtual uint64_t LocalStreamUid() const { return 0; }

  // The stream's shards that still hold records, with lineage. kNotFound when the
  // channel's stream is gone (deleted, or re-created under the same name).
  virtual Result<std::vector<SourceShard>> Shards() = 0;
  // Where delivery of `shard` starts for a channel's StartingPosition (LATEST: after the
  // shard's last record now; TRIM_HORIZON: before its oldest retained record;
  // AT_TIMESTAMP: before the first record that arrived at or after the time).
  virtual Result<Position> StartPosition(const std::string& shard,
                                         const StartingPosition& start) = 0;
  virtual Result<ShardBacklog> Backlog(const std::string& shard, const Position& after) = 0;
  // How far `after` is behind `shard`, for a status read by a process that does not
  // deliver the shard: a remote source asks its endpoint once rather than start reading
  // the shard ahead (this default: Backlog).
  virtual Result<ShardBacklog> Behind(const std::string& shard, const Position& after) {
    return Backlog(shard, after);
  }
  // The most record bytes one PlanRange can cover at once, whatever its max_bytes: a
  // remote source plans from what its reader holds ahead, a buffer of its own size
  // (UINT64_MAX: no such bound, a log read where it lies). The engine cuts batches within
  // it, so that a batch is not left waiting for bytes the source will never hold.
  virtual uint64_t MaxPlannedBytes() const { return UINT64_MAX; }
  // The longest range after `after` within `max_bytes` and `max_records` (at least one
  // record). kFailedPrecondition when nothing is pending.
  virtual Result<PlannedRange> PlanRange(const std::string& shard, const Position& after,
                                         uint64_t max_bytes, size_t max_records) = 0;
  // A reader over the records after `after` up to `last_sequence` (inclusive). When
  // `after` ends inside an aggregate (sub_sequence set) the aggregate itself comes first.
  // Chunks hold about `chunk_bytes` / `chunk_records`.
  virtual Result<std::unique_ptr<RangeReader>> OpenRange(const std::string& shard,
                                                         const Position& after,
                                                         const std::string& last_sequence,
                                                         size_t chunk_bytes,
                                                         size_t chunk_records) = 0;
  // The record with sequence number `sequence` (Kinesis AT_SEQUENCE_NUMBER; for a user
  // record of a KPL aggregate, the aggregate), as a chunk of exactly one record, for a
  // record named elsewhere (a DLQ line being redriven). kNotFound when the shard does not
  // hold it (past the stream's retention, or no such record); kUnavailable/kThrottled:
  // try again later; kUnimplemented from a source that cannot read by sequence number
  // (this default) — a redrive then needs the DLQ lines' own copies (IncludeRecordData).
  virtual Result<StreamChunk> ReadRecord(const std::string& shard, const std::string& sequence) {
    (void)shard;
    (void)sequence;
    return Unimplemented("this record source cannot read a record by its sequence number");
  }
};

// What CreateChannel learns about its stream.
struct SourceStream {
  std::string name;
  std::string arn;
  uint64_t uid = 0;  // a local stream's id (0 for remote streams)
  int64_t created_ms = 0;
  bool on_demand = true;
  std::string encryption_type = "NONE";
  std::string key_id;
};

// Subcodes of SourceProvider statuses.
enum class SourceError {
  // OpenSource: the channel's stream is not one this provider reads (a channel of the pool
  // on another endpoint's stream); other processes of the pool deliver it.
  kNotThisSource = 1,
};

class SourceProvider {
 public:
  virtual ~SourceProvider() = default;
  // kNotFound (with AWS's text) when there is no such stream.
  virtual Result<SourceStream> DescribeStream(const std::string& name) = 0;
  // The source of a channel's stream (the one it was created on: a stream re-created
  // under the same name is another stream). SourceError::kNotThisSource when the stream
  // is not one this provider reads.
  virtual Result<std::shared_ptr<ShardSource>> OpenSource(const ChannelConfig& channel) = 0;
};

}  // namespace icestream::delivery
