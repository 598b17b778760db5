// Batch building: validation, framing, grouping by key, compression, DLQ lines.
#include "delivery/s3/batch_builder.h"

#include <simdjson.h>

#include <fmt/format.h>

#include "common/utf8.h"
#include "delivery/object_naming.h"

namespace icestream::delivery::s3 {

std::optional<BatchBuilder::Invalid> BatchBuilder::Validate(RecordFormat format,
                                                            std::string_view data) {
  switch (format) {
    case RecordFormat::kByteArray: return std::nullopt;
    case RecordFormat::kString: {
      size_t bad = FirstInvalidUtf8(data);
      if (bad == std::string_view::npos) return std::nullopt;
      return Invalid{"DESERIALIZATION_ERROR",
                     fmt::format("Record is not valid UTF-8 (invalid byte sequence at offset {}).",
                                 bad)};
    }
    case RecordFormat::kJson:
    case RecordFormat::kGsrJson: {
      thread_local simdjson::dom::parser parser;
      simdjson::dom::element doc;
      auto err = parser.parse(data.data(), data.size(), true).get(doc);
      if (!err) return std::nullopt;
      return Invalid{"DESERIALIZATION_ERROR",
                     fmt::format("Record is not valid JSON: {}.", simdjson::error_message(err))};
    }
  }
  return std::nullopt;
}

BatchBuilder::BatchBuilder(BatchContext ctx) : ctx_(std::move(ctx)), dlq_(ctx_.channel, ctx_.attempt_ms) {
  key_ctx_ = {ctx_.channel->name, ctx_.channel->id, ctx_.channel->stream_name};
}

const std::string& BatchBuilder::KeyFor(int64_t arrival_ms) {
  int64_t minute = arrival_ms >= 0 ? arrival_ms / 60000 : (arrival_ms - 59999) / 60000;
  if (minute != key_minute_) {
    key_minute_ = minute;
    key_cache_ = ctx_.key_template->Render(key_ctx_, arrival_ms);
  }
  return key_cache_;
}

Status BatchBuilder::CloseGroup() {
  if (!group_) return Status::OK();
  RETURN_IF_ERROR(group_->Finish());
  current_.body = std::move(group_->output());
  result_.objects.push_back(std::move(current_));
  current_ = BatchObject{};
  group_.reset();
  group_key_.clear();
  return Status::OK();
}

Status BatchBuilder::Add(const BatchRecord& rec) {
  ++result_.records_in;
  result_.bytes_in += rec.data.size();
  if (!rec.error.empty()) {
    ++result_.failed_records;
    dlq_.Add(ctx_.shard_id, rec.sequence_number, rec.ordinal, rec.arrival_ms,
             "DESERIALIZATION_ERROR", rec.error, rec.sub_sequence);
    return Status::OK();
  }
  if (auto bad = Validate(ctx_.channel->record_format, rec.data)) {
    ++result_.failed_records;
    dlq_.Add(ctx_.shard_id, rec.sequence_number, rec.ordinal, rec.arrival_ms, bad->code,
             bad->message, rec.sub_sequence);
    return Status::OK();
  }
  const std::string& key = KeyFor(rec.arrival_ms);
  if (!group_ || key != group_key_) {
    RETURN_IF_ERROR(CloseGroup());
    ASSIGN_OR_RETURN(group_, MakeStreamCompressor(ctx_.channel->s3().compression, ctx_.compression_level));
    group_key_ = key;
    current_.key = ctx_.key_template->RenderWithSuffix(
        key_ctx_, rec.arrival_ms,
        ObjectSuffix(rec.ordinal, ctx_.shard_id, ctx_.channel->id, rec.sequence_number));
    current_.first_sequence_number = std::string(rec.sequence_number);
  }
  RETURN_IF_ERROR(group_->Add(rec.data));
  if (ctx_.channel->record_format != RecordFormat::kByteArray) RETURN_IF_ERROR(group_->Add("\n"));
  current_.last_sequence_number.assign(rec.sequence_number);  // no allocation after the first
  ++current_.records;
  current_.raw_bytes += rec.data.size();
  return Status::OK();
}

Result<BatchResult> BatchBuilder::Finish() {
  RETURN_IF_ERROR(CloseGroup());
  result_.dlq = dlq_.Finish();
  return std::move(result_);
}

}  // namespace icestream::delivery::s3
