// Dead-letter queue lines and object naming.
#include "delivery/dlq.h"

#include <fmt/format.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "common/time_format.h"
#include "delivery/object_naming.h"

namespace icestream::delivery {

DlqBatch::DlqBatch(const ChannelConfig* channel, int64_t attempt_ms)
    : channel_(channel), attempt_ms_(attempt_ms) {}

void DlqBatch::Add(std::string_view shard_id, std::string_view seq, uint64_t ordinal,
                   int64_t arrival_ms, std::string_view error_code, std::string_view error_message,
                   std::optional<uint64_t> sub_sequence_number) {
  nlohmann::json line = {
      {"streamARN", channel_->stream_arn}, {"shardId", shard_id}, {"sequenceNumber", seq}};
  if (sub_sequence_number) line["subSequenceNumber"] = *sub_sequence_number;
  line["approximateArrivalTimestamp"] = FormatIso8601Ms(arrival_ms);
  line["errorCode"] = error_code;
  line["errorMessage"] = error_message;
  line["channelARN"] = channel_->arn;
  line["attemptTimestamp"] = FormatIso8601Ms(attempt_ms_);
  lines_ += line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  lines_ += '\n';
  if (records_++ == 0) {
    // <ErrorOutputPrefix><yyyy>/<MM>/<dd>/<HH>/<channel-id><suffix> (spec §4 [DECISION]).
    std::time_t secs =
        static_cast<std::time_t>(arrival_ms >= 0 ? arrival_ms / 1000 : (arrival_ms - 999) / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    key_ = fmt::format("{}{:04d}/{:02d}/{:02d}/{:02d}/{}{}", channel_->dlq.error_output_prefix,
                       tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, channel_->id,
                       ObjectSuffix(ordinal, shard_id, channel_->id, seq));
  }
}

std::optional<DlqObject> DlqBatch::Finish() {
  if (records_ == 0) return std::nullopt;
  DlqObject o{std::move(key_), std::move(lines_), records_};
  lines_.clear();
  key_.clear();
  records_ = 0;
  return o;
}

}  // namespace icestream::delivery
