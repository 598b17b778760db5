// Batch building: validation, framing, grouping by key, compression, DLQ lines.
#include "delivery/s3/batch_builder.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "common/utf8.h"
#include "delivery/object_naming.h"

namespace icestream::delivery::s3 {

std::optional<BatchBuilder::Invalid> BatchBuilder::Validate(RecordFormat format,
                                                            std::string_view data) {
  switch (format) {
    case RecordFormat::kByteArray:
      return std::nullopt;
    case RecordFormat::kString: {
      size_t bad = FirstInvalidUtf8(data);
      if (bad == std::string_view::npos) return std::nullopt;
      return Invalid{
          "DESERIALIZATION_ERROR",
          fmt::format("Record is not valid UTF-8 (invalid byte sequence at offset {}).", bad)};
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

BatchBuilder::BatchBuilder(BatchContext ctx)
    : ctx_(std::move(ctx)), dlq_(ctx_.channel, ctx_.attempt_ms, ctx_.redrive) {
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
  auto reject = [&](std::string_view code, std::string_view message) {
    ++result_.failed_records;
    DlqRecord r;
    r.shard_id = ctx_.shard_id;
    r.sequence_number = rec.sequence_number;
    r.ordinal = rec.ordinal;
    r.arrival_ms = rec.arrival_ms;
    if (rec.sub_sequence) r.sub_sequence = *rec.sub_sequence;
    r.error_code = code;
    r.error_message = message;
    r.partition_key = rec.partition_key;
    r.data = rec.data;
    dlq_.Add(r);
  };
  if (!rec.error.empty()) {
    reject("DESERIALIZATION_ERROR", rec.error);
    return Status::OK();
  }
  if (auto bad = Validate(ctx_.channel->record_format, rec.data)) {
    reject(bad->code, bad->message);
    return Status::OK();
  }
  const std::string& key = KeyFor(rec.arrival_ms);
  if (!group_ || key != group_key_) {
    RETURN_IF_ERROR(CloseGroup());
    ASSIGN_OR_RETURN(group_,
                     MakeStreamCompressor(ctx_.channel->s3().compression, ctx_.compression_level));
    group_key_ = key;
    // A redrive batch's records were delivered (or rejected) once already, by a batch
    // that began with the same record: its objects are seeded with the redrive and its
    // first entry too, so that they never take (overwrite) the name of an object of the
    // stream's own batches, and a replay of the redrive batch rewrites the same keys.
    const std::string seed = ctx_.redrive == nullptr
                                 ? ctx_.channel->id
                                 : fmt::format("{}/redrive/{}/{}", ctx_.channel->id,
                                               ctx_.redrive->id, ctx_.redrive->from);
    current_.key = ctx_.key_template->RenderWithSuffix(
        key_ctx_, rec.arrival_ms,
        ObjectSuffix(rec.ordinal, ctx_.shard_id, seed, rec.sequence_number));
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
  result_.rejects = dlq_.summary();
  result_.redrive_rejects = dlq_.redrive_rejects();
  result_.dlq = dlq_.Finish();
  return std::move(result_);
}

}  // namespace icestream::delivery::s3
