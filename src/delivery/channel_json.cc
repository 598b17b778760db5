// Channel model helpers and the meta.db document codec.
#include <fmt/format.h>

#include "delivery/channel.h"

namespace icestream::delivery {

using nlohmann::json;

std::string_view ChannelStatusName(ChannelStatus s) {
  switch (s) {
    case ChannelStatus::kCreating:
      return "CREATING";
    case ChannelStatus::kActive:
      return "ACTIVE";
    case ChannelStatus::kUpdating:
      return "UPDATING";
    case ChannelStatus::kDeleting:
      return "DELETING";
    case ChannelStatus::kFailed:
      return "FAILED";
  }
  return "FAILED";
}

std::string_view RecordFormatName(RecordFormat f) {
  switch (f) {
    case RecordFormat::kJson:
      return "JSON";
    case RecordFormat::kGsrJson:
      return "GSR_JSON";
    case RecordFormat::kString:
      return "STRING";
    case RecordFormat::kByteArray:
      return "BYTE_ARRAY";
  }
  return "JSON";
}

std::optional<RecordFormat> ParseRecordFormat(std::string_view s) {
  if (s == "JSON") return RecordFormat::kJson;
  if (s == "GSR_JSON") return RecordFormat::kGsrJson;
  if (s == "STRING") return RecordFormat::kString;
  if (s == "BYTE_ARRAY") return RecordFormat::kByteArray;
  return std::nullopt;
}

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "NONE";
    case Compression::kGzip:
      return "GZIP";
    case Compression::kZstd:
      return "ZSTD";
  }
  return "NONE";
}

std::optional<Compression> ParseCompression(std::string_view s) {
  if (s == "NONE") return Compression::kNone;
  if (s == "GZIP") return Compression::kGzip;
  if (s == "ZSTD") return Compression::kZstd;
  return std::nullopt;
}

std::string_view TableCompressionName(TableCompression c) {
  switch (c) {
    case TableCompression::kNone:
      return "NONE";
    case TableCompression::kZstd:
      return "ZSTD";
    case TableCompression::kSnappy:
      return "SNAPPY";
  }
  return "NONE";
}

std::optional<TableCompression> ParseTableCompression(std::string_view s) {
  if (s == "NONE") return TableCompression::kNone;
  if (s == "ZSTD") return TableCompression::kZstd;
  if (s == "SNAPPY") return TableCompression::kSnappy;
  return std::nullopt;
}

std::string_view DestinationTypeName(DestinationType t) {
  return t == DestinationType::kS3 ? "S3" : "S3_TABLES";
}

bool ReadsStream(const ChannelConfig& c, std::string_view arn, int64_t created_ms) {
  if (c.stream_arn != arn) return false;
  return c.stream_created_ms <= 0 || created_ms <= 0 ||
         c.stream_created_ms / 1000 == created_ms / 1000;
}

bool SameStream(const ChannelConfig& a, const ChannelConfig& b) {
  if (a.stream_uid != 0 && b.stream_uid != 0) return a.stream_uid == b.stream_uid;
  return ReadsStream(a, b.stream_arn, b.stream_created_ms);
}

std::string DefaultErrorOutputPrefix(const std::string& name, const std::string& id) {
  return fmt::format("kinesis-channel/errors/{}/{}/", name, id);
}

std::string DefaultLogGroupName(const std::string& name, const std::string& id) {
  return fmt::format("/aws/kinesis/{}/{}", name, id);
}

namespace {
ChannelStatus ParseStatus(const std::string& s) {
  if (s == "ACTIVE") return ChannelStatus::kActive;
  if (s == "UPDATING") return ChannelStatus::kUpdating;
  if (s == "DELETING") return ChannelStatus::kDeleting;
  if (s == "FAILED") return ChannelStatus::kFailed;
  return ChannelStatus::kCreating;
}

json DlqToJson(const DeadLetterQueueConfig& d) {
  return {{"bucket_arn", d.bucket_arn},
          {"expected_bucket_owner", d.expected_bucket_owner},
          {"error_output_prefix", d.error_output_prefix},
          {"include_record_data", d.include_record_data}};
}

DeadLetterQueueConfig DlqFromJson(const json& j) {
  return {j.at("bucket_arn"), j.at("expected_bucket_owner"), j.at("error_output_prefix"),
          j.value("include_record_data", false)};
}
}  // namespace

json ChannelToJson(const ChannelConfig& c) {
  json j = {
      {"id", c.id},
      {"name", c.name},
      {"arn", c.arn},
      {"role_arn", c.role_arn},
      {"stream_arn", c.stream_arn},
      {"stream_name", c.stream_name},
      {"stream_uid", c.stream_uid},
      {"stream_created_ms", c.stream_created_ms},
      {"record_format", RecordFormatName(c.record_format)},
      {"gsr_schema_arn", c.gsr_schema_arn},
      {"starting_position",
       {{"type", c.starting_position.type}, {"timestamp_ms", c.starting_position.timestamp_ms}}},
      {"destination", DestinationTypeName(c.destination_type())},
      {"data_freshness_seconds", c.data_freshness_seconds},
      {"dlq", DlqToJson(c.dlq)},
      {"logging",
       {{"enabled", c.logging.enabled},
        {"log_group_name", c.logging.log_group_name},
        {"log_stream_name", c.logging.log_stream_name}}},
      {"tags", c.tags},
      {"status", ChannelStatusName(c.status)},
      {"status_reason", c.status_reason},
      {"created_ms", c.created_ms}};
  if (c.destination_type() == DestinationType::kS3) {
    const auto& s3 = c.s3();
    j["s3"] = {{"bucket_arn", s3.bucket_arn},
               {"compression", CompressionName(s3.compression)},
               {"expected_bucket_owner", s3.expected_bucket_owner},
               {"output_key_template", s3.output_key_template},
               {"storage_class", s3.storage_class}};
  } else {
    const auto& t = c.table();
    json fields = json::array();
    for (const auto& f : t.partition_fields)
      fields.push_back({{"source_name", f.source_name}, {"transform", f.transform}});
    j["table"] = {{"table_bucket_arn", t.table_bucket_arn},
                  {"namespace", t.ns},
                  {"table_name", t.table_name},
                  {"compression", TableCompressionName(t.compression)},
                  {"partition_fields", fields},
                  {"schema_version_id", t.schema_version_id},
                  {"schema_version_number", t.schema_version_number}};
  }
  if (c.encryption) {
    j["encryption"] = {{"type", c.encryption->encryption_type}, {"key_id", c.encryption->key_id}};
  }
  return j;
}

Result<ChannelConfig> ChannelFromJson(const json& j) {
  try {
    ChannelConfig c;
    c.id = j.at("id");
    c.name = j.at("name");
    c.arn = j.at("arn");
    c.role_arn = j.at("role_arn");
    c.stream_arn = j.at("stream_arn");
    c.stream_name = j.at("stream_name");
    c.stream_uid = j.at("stream_uid");
    c.stream_created_ms = j.at("stream_created_ms");
    c.record_format =
        ParseRecordFormat(j.at("record_format").get<std::string>()).value_or(RecordFormat::kJson);
    c.gsr_schema_arn = j.value("gsr_schema_arn", "");
    c.starting_position.type = j.at("starting_position").at("type");
    c.starting_position.timestamp_ms = j.at("starting_position").at("timestamp_ms");
    if (j.at("destination") == "S3") {
      const json& s3 = j.at("s3");
      S3DestinationConfig d;
      d.bucket_arn = s3.at("bucket_arn");
      d.compression =
          ParseCompression(s3.at("compression").get<std::string>()).value_or(Compression::kNone);
      d.expected_bucket_owner = s3.at("expected_bucket_owner");
      d.output_key_template = s3.at("output_key_template");
      d.storage_class = s3.at("storage_class");
      c.destination = std::move(d);
      // Documents written before freshness and the DLQ moved out of the S3 block.
      if (!j.contains("data_freshness_seconds"))
        c.data_freshness_seconds = s3.at("data_freshness_seconds");
      if (!j.contains("dlq")) c.dlq = DlqFromJson(s3.at("dlq"));
    } else {
      const json& t = j.at("table");
      TableDestinationConfig d;
      d.table_bucket_arn = t.at("table_bucket_arn");
      d.ns = t.at("namespace");
      d.table_name = t.at("table_name");
      d.compression = ParseTableCompression(t.at("compression").get<std::string>())
                          .value_or(TableCompression::kZstd);
      for (const auto& f : t.at("partition_fields"))
        d.partition_fields.push_back({f.at("source_name"), f.at("transform")});
      d.schema_version_id = t.value("schema_version_id", "");
      d.schema_version_number = t.value("schema_version_number", int64_t{0});
      c.destination = std::move(d);
    }
    if (j.contains("data_freshness_seconds"))
      c.data_freshness_seconds = j["data_freshness_seconds"];
    if (j.contains("dlq")) c.dlq = DlqFromJson(j["dlq"]);
    c.logging.enabled = j.at("logging").at("enabled");
    c.logging.log_group_name = j.at("logging").at("log_group_name");
    c.logging.log_stream_name = j.at("logging").at("log_stream_name");
    c.tags = j.value("tags", std::map<std::string, std::string>{});
    c.status = ParseStatus(j.at("status"));
    c.status_reason = j.value("status_reason", "");
    c.created_ms = j.at("created_ms");
    if (j.contains("encryption")) {
      c.encryption = EncryptionConfig{j["encryption"].at("type"), j["encryption"].at("key_id")};
    }
    return c;
  } catch (const std::exception& e) {
    return Corruption(std::string("channel document: ") + e.what());
  }
}

}  // namespace icestream::delivery
