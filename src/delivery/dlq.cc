// Dead-letter queue lines, object naming and the summary of a batch's rejections.
#include "delivery/dlq.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/base64.h"
#include "common/time_format.h"
#include "delivery/object_naming.h"

namespace icestream::delivery {

void RejectSummary::Merge(const RejectSummary& o) {
  records += o.records;
  for (const auto& [k, n] : o.by_code) by_code[k] += n;
  for (const auto& [k, n] : o.by_reason) by_reason[k] += n;
  if (o.last) last = o.last;
}

std::string RejectSummary::ReasonsText(size_t max) const {
  std::vector<std::pair<std::string, uint64_t>> v(by_reason.begin(), by_reason.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i == max) {
      out += ", …";
      break;
    }
    out += fmt::format("{}{} ×{}", out.empty() ? "" : ", ", v[i].first, v[i].second);
  }
  return out;
}

DlqBatch::DlqBatch(const ChannelConfig* channel, int64_t attempt_ms, const RedriveSpan* redrive)
    : channel_(channel), attempt_ms_(attempt_ms), redrive_(redrive) {
  if (redrive_) {
    for (uint64_t i = 0; i < redrive_->entries.size(); ++i) {
      redrive_index_.emplace(redrive_->entries[i].id(), redrive_->from + i);
    }
  }
}

void DlqBatch::Add(const DlqRecord& r) {
  nlohmann::json line = {{"streamARN", channel_->stream_arn},
                         {"shardId", r.shard_id},
                         {"sequenceNumber", r.sequence_number}};
  if (r.sub_sequence) line["subSequenceNumber"] = *r.sub_sequence;
  line["approximateArrivalTimestamp"] = FormatIso8601Ms(r.arrival_ms);
  line["errorCode"] = r.error_code;
  line["errorMessage"] = r.error_message;
  line["channelARN"] = channel_->arn;
  line["attemptTimestamp"] = FormatIso8601Ms(attempt_ms_);
  if (channel_->dlq.include_record_data) {
    line["partitionKey"] = r.partition_key;
    line["data"] = base64::Encode(r.data);
  }
  if (redrive_) {
    RecordId id{std::string(r.shard_id), std::string(r.sequence_number),
                r.sub_sequence ? std::optional<uint32_t>(static_cast<uint32_t>(*r.sub_sequence))
                               : std::nullopt};
    line["redriveId"] = redrive_->id;
    auto it = redrive_index_.find(id);
    if (it != redrive_index_.end()) {
      const RedriveEntry& e = redrive_->entries[it->second - redrive_->from];
      line["redriveOf"] = {{"object", e.object}, {"line", e.line}};
      redrive_rejects_[it->second] = {std::string(r.error_code), std::string(r.error_message)};
    }
  }
  lines_ += line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  lines_ += '\n';
  if (records_++ == 0) {
    std::time_t secs = static_cast<std::time_t>(r.arrival_ms >= 0 ? r.arrival_ms / 1000
                                                                  : (r.arrival_ms - 999) / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    std::string stem =
        fmt::format("{}{:04d}/{:02d}/{:02d}/{:02d}/{}", channel_->dlq.error_output_prefix,
                    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, channel_->id);
    if (redrive_) {
      key_ = fmt::format("{}-redrive-{}-{:010d}", stem, redrive_->id, redrive_->from);
    } else {
      // <ErrorOutputPrefix><yyyy>/<MM>/<dd>/<HH>/<channel-id><suffix> (spec §4 [DECISION]).
      key_ = stem + ObjectSuffix(r.ordinal, r.shard_id, channel_->id, r.sequence_number);
    }
  }
  // The summary for the status, metrics and log.
  ++summary_.records;
  ++summary_.by_code[std::string(r.error_code)];
  std::string reason(r.error_code);
  if (!r.path.empty() && r.path != "$") {  // the record as a whole names no field
    reason += ' ';
    reason += r.path;
  }
  ++summary_.by_reason[reason];
  summary_.last = RejectNote{std::string(r.error_code),
                             std::string(r.error_message),
                             std::string(r.shard_id),
                             std::string(r.sequence_number),
                             r.sub_sequence,
                             r.arrival_ms,
                             attempt_ms_};
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
