// DlqBatch: the dead-letter queue lines of one delivery batch (kds-delivery-spec.md §4):
// one JSON line per rejected record — stream ARN, shard id, sequence number (and
// sub-sequence number for records that came out of an aggregate), arrival time, error
// code and message, channel ARN, attempt time — and, only for a channel that asks for it
// (DeadLetterQueueConfig::include_record_data, an icestream extension), the record's
// partition key and data (base64), so that it can be redriven past the stream's
// retention. The object is named <ErrorOutputPrefix><yyyy>/<MM>/<dd>/<HH>/<channel-id>
// <suffix>, with the time and the 38-character suffix taken from the first rejected
// record, so a replayed batch writes the same object with the same bytes.
//
// In a redrive batch (redrive.h) each line also names the redrive (redriveId) and the
// DLQ line it redrove (redriveOf: object and line), and the object is named
// <...>/<HH>/<channel-id>-redrive-<redrive-id>-<first entry, 10 digits>, so that it never
// takes the name of the object whose lines are being redriven and a replay rewrites it.
//
// The batch also sums its rejections up (RejectSummary) for the channel's status,
// metrics and log. Shared by every sink. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "delivery/channel.h"
#include "delivery/redrive.h"

namespace icestream::delivery {

struct DlqObject {
  std::string key;
  std::string body;  // JSON lines
  uint64_t records = 0;
};

// One rejected record as the channel's status shows it (IcestreamStatus.LastRejected).
struct RejectNote {
  std::string error_code;
  std::string error_message;
  std::string shard_id;
  std::string sequence_number;
  std::optional<uint64_t> sub_sequence;
  int64_t arrival_ms = 0;
  int64_t rejected_ms = 0;  // the batch's attempt time
};

// What the rejected records of one or more batches were.
struct RejectSummary {
  uint64_t records = 0;
  std::map<std::string, uint64_t> by_code;    // errorCode → records
  std::map<std::string, uint64_t> by_reason;  // "errorCode $.path" ("errorCode" without one)
  std::optional<RejectNote> last;
  void Merge(const RejectSummary& other);
  bool empty() const { return records == 0; }
  // "MISSING_REQUIRED_FIELD $.order_id ×3, TYPE_MISMATCH $.total ×1" (the most frequent
  // reasons first, at most `max` of them, then "…").
  std::string ReasonsText(size_t max = 5) const;
};

// A rejected record.
struct DlqRecord {
  std::string_view shard_id;
  std::string_view sequence_number;
  uint64_t ordinal = 0;  // StreamRecord::ordinal, for the object name
  int64_t arrival_ms = 0;
  std::optional<uint64_t> sub_sequence;
  std::string_view error_code;
  std::string_view error_message;
  std::string_view path;           // the JSON path the error names ("" when none)
  std::string_view partition_key;  // written only with include_record_data
  std::string_view data;           // written only with include_record_data
};

class DlqBatch {
 public:
  // `channel` (and `redrive`, the span of a redrive batch or null) must outlive the
  // batch; `attempt_ms` is the batch plan's attempt time.
  DlqBatch(const ChannelConfig* channel, int64_t attempt_ms, const RedriveSpan* redrive = nullptr);

  void Add(const DlqRecord& r);
  uint64_t records() const { return records_; }
  const RejectSummary& summary() const { return summary_; }
  // In a redrive batch: the entries (worklist indices) that failed again, with their
  // error code and message.
  const std::map<uint64_t, std::pair<std::string, std::string>>& redrive_rejects() const {
    return redrive_rejects_;
  }
  // The object to write, or nullopt when nothing was rejected.
  std::optional<DlqObject> Finish();

 private:
  const ChannelConfig* channel_;
  int64_t attempt_ms_;
  const RedriveSpan* redrive_;
  std::map<RecordId, uint64_t> redrive_index_;  // record → worklist entry (redrive batches)
  std::map<uint64_t, std::pair<std::string, std::string>> redrive_rejects_;
  std::string lines_;
  uint64_t records_ = 0;
  std::string key_;
  RejectSummary summary_;
};

}  // namespace icestream::delivery
