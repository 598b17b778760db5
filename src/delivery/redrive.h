// Dead-letter queue redrive (an icestream extension, docs/channels.md "Redrive"): a
// channel's DLQ lines delivered again, each exactly once, through the same conversion and
// commit path as the stream's records.
//
// A redrive runs in two steps:
//   1. Prepare: every DLQ object under the channel's ErrorOutputPrefix is read once; the
//      channel's lines that match the filter (error codes, arrival time range) and that no
//      earlier redrive processed become the redrive's *worklist*, sorted by shard,
//      sequence and sub-sequence number, one entry per record (duplicate lines of one
//      record collapse), written to the DLQ bucket as parts of kWorklistPartEntries
//      entries. The worklist never changes afterwards.
//   2. Batches: entries [from, to) of the worklist are read back from the stream by shard
//      and sequence number (KPL sub-sequence included), or taken from the line's own copy
//      of the record (IncludeRecordData), and delivered as one batch. Its progress — the
//      next entry and the counts so far (RedriveProgress) — is recorded with the commit
//      that delivers its rows (the table's snapshot summary, icestream.redrive) or, for
//      S3 destinations, moves in the delivery store once the batch's objects are written
//      (its plan, from/to/attempt time, is saved before, so a replay rebuilds the same
//      keys and bytes). A record that fails again gets a new DLQ line marked with the
//      redrive (redriveId, redriveOf); one the stream no longer holds is reported as
//      EXPIRED. Every batch writes a report (one line per entry and its outcome: the DLQ
//      lines "marked done") before its progress moves.
//
// Files in the DLQ bucket, under <ErrorOutputPrefix>redrive/<redrive-id>/:
//   worklist-<part, 6 digits>.jsonl     the entries
//   done-<first entry, 10 digits>.jsonl the outcome of each entry of one batch
//
// Plain structs and free functions; PrepareRedrive and ReadWorklist do I/O.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "delivery/channel.h"
#include "objectstore/object_store.h"

namespace icestream::delivery {

enum class RedriveStatus { kPreparing, kInProgress, kCompleted, kFailed };
std::string_view RedriveStatusName(RedriveStatus s);  // "PREPARING", "IN_PROGRESS", ...

struct RedriveFilter {
  std::set<std::string> error_codes;  // empty: every code
  // On the line's approximateArrivalTimestamp: [start_ms, end_ms).
  std::optional<int64_t> start_ms;
  std::optional<int64_t> end_ms;
  bool Matches(std::string_view error_code, int64_t arrival_ms) const;
};

// A record of a shard: its sequence number and, for a user record of a KPL aggregate,
// its index in the aggregate.
struct RecordId {
  std::string shard;
  std::string sequence;
  std::optional<uint32_t> sub;
  std::strong_ordering operator<=>(const RecordId& o) const;
  bool operator==(const RecordId& o) const = default;
};

// One record to redrive, and the DLQ line it comes from.
struct RedriveEntry {
  std::string object;  // the DLQ object's key
  uint64_t line = 0;   // the line's number in it, from 0
  std::string shard_id;
  std::string sequence_number;
  std::optional<uint32_t> sub_sequence;
  int64_t arrival_ms = 0;
  std::string error_code;
  // The line's own copy of the record (a channel with IncludeRecordData), base64-decoded.
  std::optional<std::string> data;
  std::string partition_key;

  RecordId id() const { return {shard_id, sequence_number, sub_sequence}; }
};

// How far a redrive is: entries [0, next) of its worklist are done, with these outcomes.
struct RedriveProgress {
  std::string id;
  uint64_t next = 0;
  uint64_t delivered = 0;
  uint64_t failed_again = 0;
  uint64_t expired = 0;
  bool operator==(const RedriveProgress&) const = default;
};
// A compact JSON text (the snapshot summary value), and back (nullopt when malformed).
std::string RedriveProgressText(const RedriveProgress& p);
std::optional<RedriveProgress> ParseRedriveProgress(std::string_view text);

// Entries [from, to) of a redrive's worklist, delivered as one batch.
struct RedriveSpan {
  std::string id;
  uint64_t from = 0;
  uint64_t to = 0;
  std::vector<RedriveEntry> entries;  // entries[i] is worklist entry from + i
  RedriveProgress before;             // the progress at `from`
};

// The batch of a redrive in flight, saved before its records are delivered.
struct RedrivePlan {
  uint64_t from = 0;
  uint64_t to = 0;
  int64_t attempt_ms = 0;
  bool operator==(const RedrivePlan&) const = default;
};

// A redrive as the delivery store keeps it (one document per redrive).
struct RedriveState {
  std::string id;
  RedriveFilter filter;
  RedriveStatus status = RedriveStatus::kPreparing;
  std::string status_reason;
  int64_t created_ms = 0;
  int64_t completed_ms = 0;
  // Prepare's figures: DLQ objects read, the channel's lines in them, lines that matched
  // the filter but were skipped (processed by an earlier redrive, or a second line of a
  // record), lines that are not DLQ lines (not JSON, fields missing).
  uint64_t objects = 0;
  uint64_t lines_read = 0;
  uint64_t lines_skipped = 0;
  uint64_t lines_unreadable = 0;
  uint64_t total = 0;  // worklist entries
  RedriveProgress progress;
  std::optional<RedrivePlan> plan;

  bool active() const {
    return status == RedriveStatus::kPreparing || status == RedriveStatus::kInProgress;
  }
};
nlohmann::json RedriveStateToJson(const RedriveState& s);
Result<RedriveState> RedriveStateFromJson(const nlohmann::json& j);
// The API shape (StartChannelRedrive, DescribeChannelRedrive, IcestreamStatus.Redrive).
nlohmann::json RedriveDescription(const RedriveState& s, const ChannelConfig& c);

// Keys in the DLQ bucket.
inline constexpr uint64_t kWorklistPartEntries = 10000;
std::string RedrivePrefix(const ChannelConfig& c, const std::string& redrive_id);
std::string WorklistKey(const ChannelConfig& c, const std::string& redrive_id, uint64_t part);
std::string ReportKey(const ChannelConfig& c, const std::string& redrive_id, uint64_t from);

// "2026-11-30T00:44:32.147Z" (the DLQ's approximateArrivalTimestamp) → epoch ms.
std::optional<int64_t> ParseIso8601Ms(std::string_view text);

// What a redrive needs of the DLQ bucket.
struct DlqBucket {
  objectstore::ObjectStore* store = nullptr;
  std::string bucket;
  objectstore::ReadOptions read;
  objectstore::PutOptions put;  // content type and expected owner of what it writes
};
Result<DlqBucket> DlqBucketOf(const ChannelConfig& c, objectstore::ObjectStore* store,
                              bool local_buckets);

// Step 1: builds and writes the worklist of `state` (PREPARING) and fills its figures
// (total, objects, lines_*); the caller saves it as IN_PROGRESS. `earlier`: the channel's
// other redrives (their processed entries are skipped). Errors: the DLQ bucket cannot be
// read or written (retry later); nothing is changed but the worklist's objects, which a
// new attempt overwrites.
Status PrepareRedrive(const DlqBucket& dlq, const ChannelConfig& c,
                      const std::vector<RedriveState>& earlier, RedriveState* state);

// Worklist entries [from, to) of a prepared redrive. kNotFound / kCorruption when the
// worklist was removed or damaged (the redrive cannot go on).
Result<std::vector<RedriveEntry>> ReadWorklist(const DlqBucket& dlq, const ChannelConfig& c,
                                               const RedriveState& state, uint64_t from,
                                               uint64_t to);

// The report of one redrive batch (one JSON line per entry, in order: its DLQ object and
// line, its record and outcome) and the progress after it. `missing`: entries whose
// record the source no longer holds; `rejected`: entry → (error code, message) of those
// that failed again.
struct RedriveBatchOutcome {
  std::string report;
  RedriveProgress after;
};
RedriveBatchOutcome RedriveReport(
    const RedriveSpan& span, const std::set<uint64_t>& missing,
    const std::map<uint64_t, std::pair<std::string, std::string>>& rejected);

}  // namespace icestream::delivery
