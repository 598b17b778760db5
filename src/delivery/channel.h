// The channel data model: what CreateChannel configured (kds-delivery-spec.md §1.3) plus
// the channel's lifecycle state. Plain structs; persisted as a JSON document in meta.db
// (channel_json.cc) and turned into API shapes by the Kinesis front end.
//
// What every channel has (source stream, record format, freshness, dead-letter queue,
// logging) lives in ChannelConfig; what only one destination type has lives in its
// destination struct, held in ChannelConfig::destination.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/status.h"

namespace icestream::delivery {

enum class ChannelStatus { kCreating, kActive, kUpdating, kDeleting, kFailed };
enum class RecordFormat { kJson, kGsrJson, kString, kByteArray };
enum class DestinationType { kS3, kS3Tables };
// Whole-object compression of S3 destinations (S3StorageConfiguration.CompressionType).
enum class Compression { kNone, kGzip, kZstd };
// Parquet codec of streaming-table destinations (S3TablesConfiguration.CompressionType).
enum class TableCompression { kNone, kZstd, kSnappy };

std::string_view ChannelStatusName(ChannelStatus s);
std::string_view RecordFormatName(RecordFormat f);
std::optional<RecordFormat> ParseRecordFormat(std::string_view s);
std::string_view CompressionName(Compression c);
std::optional<Compression> ParseCompression(std::string_view s);
std::string_view TableCompressionName(TableCompression c);
std::optional<TableCompression> ParseTableCompression(std::string_view s);
std::string_view DestinationTypeName(DestinationType t);  // "S3" | "S3_TABLES"

struct DeadLetterQueueConfig {
  std::string bucket_arn;
  std::string expected_bucket_owner;
  std::string error_output_prefix;  // filled with the default when omitted
  // icestream extension (IncludeRecordData): DLQ lines also carry the record's partition
  // key and data, so a redrive can deliver it after the stream no longer holds it. Off
  // by default, as on AWS (metadata only).
  bool include_record_data = false;
};

// S3DestinationConfiguration without the members every destination shares.
struct S3DestinationConfig {
  std::string bucket_arn;
  Compression compression = Compression::kNone;
  std::string expected_bucket_owner;
  std::string output_key_template;  // filled with the default when omitted
  std::string storage_class = "STANDARD";
};

struct PartitionFieldConfig {
  std::string source_name;
  std::string transform = "TIME_HOUR";
};

// S3TablesDestinationConfiguration's one table (S3TablesConfiguration), plus what the
// channel fixed when it was created.
struct TableDestinationConfig {
  std::string table_bucket_arn;
  std::string ns;  // Namespace
  std::string table_name;
  TableCompression compression = TableCompression::kZstd;
  std::vector<PartitionFieldConfig> partition_fields;
  // The registry schema version the table is made from (the schema's latest version
  // when the channel was created).
  std::string schema_version_id;
  int64_t schema_version_number = 0;
};

using DestinationConfig = std::variant<S3DestinationConfig, TableDestinationConfig>;

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
  // Delivery, whatever the destination.
  int data_freshness_seconds = 300;
  DeadLetterQueueConfig dlq;
  DestinationConfig destination;
  std::optional<EncryptionConfig> encryption;
  LoggingConfig logging;
  std::map<std::string, std::string> tags;
  // State.
  ChannelStatus status = ChannelStatus::kCreating;
  std::string status_reason;
  int64_t created_ms = 0;

  DestinationType destination_type() const {
    return std::holds_alternative<S3DestinationConfig>(destination) ? DestinationType::kS3
                                                                    : DestinationType::kS3Tables;
  }
  // Preconditions: the destination is of that type.
  const S3DestinationConfig& s3() const { return std::get<S3DestinationConfig>(destination); }
  S3DestinationConfig& s3() { return std::get<S3DestinationConfig>(destination); }
  const TableDestinationConfig& table() const {
    return std::get<TableDestinationConfig>(destination);
  }
  TableDestinationConfig& table() { return std::get<TableDestinationConfig>(destination); }
};

// Whether a channel reads the stream `arn` created at `created_ms`: the same ARN, and the
// same creation second when both are known (a stream re-created under the same name is
// another stream; the Kinesis API gives creation times to the second).
bool ReadsStream(const ChannelConfig& c, std::string_view arn, int64_t created_ms);
// Whether two channels read the same stream: by the local stream id when both have one,
// else by ReadsStream (a channel made through the Kinesis API, `channels create --pg`,
// has no local id even when its stream is this server's).
bool SameStream(const ChannelConfig& a, const ChannelConfig& b);

std::string DefaultErrorOutputPrefix(const std::string& name, const std::string& id);
std::string DefaultLogGroupName(const std::string& name, const std::string& id);
inline constexpr std::string_view kDefaultLogStreamName = "DestinationDelivery";

nlohmann::json ChannelToJson(const ChannelConfig& c);
// Reads documents of every earlier layout too (freshness and DLQ inside "s3").
Result<ChannelConfig> ChannelFromJson(const nlohmann::json& j);

}  // namespace icestream::delivery
