// DlqBatch: the dead-letter queue lines of one delivery batch (kds-delivery-spec.md §4):
// one JSON line per rejected record — stream ARN, shard id, sequence number (and
// sub-sequence number for records that came out of an aggregate), arrival time, error
// code and message, channel ARN, attempt time — never the payload. The object is named
// <ErrorOutputPrefix><yyyy>/<MM>/<dd>/<HH>/<channel-id><suffix>, with the time and the
// 38-character suffix taken from the first rejected record, so a replayed batch writes
// the same object with the same bytes. Shared by every sink. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "delivery/channel.h"

namespace icestream::delivery {

struct DlqObject {
  std::string key;
  std::string body;  // JSON lines
  uint64_t records = 0;
};

class DlqBatch {
 public:
  // `channel` must outlive the batch; `attempt_ms` is the batch plan's attempt time.
  DlqBatch(const ChannelConfig* channel, int64_t attempt_ms);

  // One rejected record: its shard, sequence number (and sub-sequence number inside an
  // aggregate), ordinal (StreamRecord::ordinal, for the object name) and arrival time.
  void Add(std::string_view shard_id, std::string_view sequence_number, uint64_t ordinal,
           int64_t arrival_ms, std::string_view error_code, std::string_view error_message,
           std::optional<uint64_t> sub_sequence_number = std::nullopt);
  uint64_t records() const { return records_; }
  // The object to write, or nullopt when nothing was rejected.
  std::optional<DlqObject> Finish();

 private:
  const ChannelConfig* channel_;
  int64_t attempt_ms_;
  std::string lines_;
  uint64_t records_ = 0;
  std::string key_;
};

}  // namespace icestream::delivery
