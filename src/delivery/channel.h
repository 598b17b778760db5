// The channel data model: what CreateChannel configured (kds-delivery-spec.md §1.3) plus
// the channel's lifecycle state. Plain structs; persisted as a JSON document in meta.db
// (channel_json.cc) and turned into API shapes by the Kinesis front end.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "delivery/key_template.h"

namespace icestream::delivery {

enum class ChannelStatus { kCreating, kActive, kUpdating, kDeleting, kFailed };
enum class RecordFormat { kJson, kGsrJson, kString, kByteArray };
enum class DestinationType { kS3, kS3Tables };

std::string_view ChannelStatusName(ChannelStatus s);
std::string_view RecordFormatName(RecordFormat f);
std::optional<RecordFormat> ParseRecordFormat(std::string_view s);
std::string_view CompressionName(Compression c);
std::optional<Compression> ParseCompression(std::string_view s);

struct DeadLetterQueueConfig {
  std::string bucket_arn;
  std::string expected_bucket_owner;
  std::string error_output_prefix;  // filled with the default when omitted
};

struct S3DestinationConfig {
  std::string bucket_arn;
  Compression compression = Compression::kNone;
  std::string expected_bucket_owner;
  std::string output_key_template;  // filled with the default when omitted
  std::string storage_class = "STANDARD";
  int data_freshness_seconds = 300;
  DeadLetterQueueConfig dlq;
};

struct LoggingConfig {
  bool enabled = false;
  std::string log_group_name;   // default /aws/kinesis/{channelName}/{channelId}
  std::string log_stream_name;  // default DestinationDelivery
};

struct EncryptionConfig {
  std::string encryption_type = "KMS";
  std::string key_id;
};

// icestream-only: where delivery starts (AWS always starts at the stream tip).
struct StartingPosition {
  std::string type = "LATEST";  // LATEST | TRIM_HORIZON | AT_TIMESTAMP
  int64_t timestamp_ms = 0;
};

struct ChannelConfig {
  std::string id;
  std::string name;
  std::string arn;
  std::string role_arn;
  // Source stream.
  std::string stream_arn;
  std::string stream_name;
  uint64_t stream_uid = 0;
  int64_t stream_created_ms = 0;
  RecordFormat record_format = RecordFormat::kJson;
  std::string gsr_schema_arn;
  StartingPosition starting_position;
  // Destination.
  DestinationType destination = DestinationType::kS3;
  S3DestinationConfig s3;
  std::optional<EncryptionConfig> encryption;
  LoggingConfig logging;
  std::map<std::string, std::string> tags;
  // State.
  ChannelStatus status = ChannelStatus::kCreating;
  std::string status_reason;
  int64_t created_ms = 0;
};

std::string DefaultErrorOutputPrefix(const std::string& name, const std::string& id);
std::string DefaultLogGroupName(const std::string& name, const std::string& id);
inline constexpr std::string_view kDefaultLogStreamName = "DestinationDelivery";

nlohmann::json ChannelToJson(const ChannelConfig& c);
Result<ChannelConfig> ChannelFromJson(const nlohmann::json& j);

}  // namespace icestream::delivery
