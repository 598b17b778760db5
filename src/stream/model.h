// The stream data model: plain structs persisted in meta.db and copied into API
// responses. No behaviour here; see stream_manager.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "stream/hash_key.h"

namespace icestream::stream {

enum class StreamStatus { kCreating, kActive, kUpdating, kDeleting };
enum class StreamMode { kProvisioned, kOnDemand };

std::string_view StreamStatusName(StreamStatus s);  // "ACTIVE", ...
std::string_view StreamModeName(StreamMode m);      // "PROVISIONED" | "ON_DEMAND"

// "shardId-000000000007" for index 7.
std::string ShardIdString(uint32_t index);  // "shardId-" + 12 digits
void AppendShardId(std::string* out, uint32_t index);
// Accepts "shardId-000000000007" and, like AWS, "<prefix>-<digits>[-...]" and plain
// digits ("shard-7", "7"), up to 2^31-1.
std::optional<uint32_t> ParseShardId(std::string_view id);

struct ShardInfo {
  uint32_t index = 0;
  std::optional<uint32_t> parent;
  std::optional<uint32_t> adjacent_parent;
  HashRange range;
  int64_t created_ms = 0;
  std::optional<int64_t> closed_ms;
  // Offsets [0, end_offset) belong to a closed shard.
  std::optional<uint64_t> end_offset;

  bool open() const { return !closed_ms.has_value(); }
};

// An enhanced fan-out consumer (RegisterStreamConsumer). Its ARN is the stream's ARN +
// "/consumer/<name>:<creation epoch seconds>".
struct ConsumerInfo {
  std::string name;
  int64_t created_ms = 0;
  // Set by DeregisterStreamConsumer; the consumer is DELETING until it is purged.
  std::optional<int64_t> deleting_since_ms;
  std::map<std::string, std::string> tags;
};

struct StreamInfo {
  std::string name;
  uint64_t uid = 0;  // 15-digit id; names the stream's folder and sequence numbers
  std::string arn;
  StreamStatus status = StreamStatus::kActive;
  StreamMode mode = StreamMode::kProvisioned;
  int retention_hours = 24;
  int64_t created_ms = 0;
  int max_record_kib = 1024;
  uint32_t next_shard_index = 0;
  std::vector<ShardInfo> shards;  // unexpired shards, by index
  std::map<std::string, std::string> tags;
  std::string encryption_type = "NONE";
  std::string key_id;
  std::vector<std::string> shard_level_metrics;
  std::optional<int> warm_throughput_mibps;
  std::string resource_policy;
  // UpdateShardCount history (epoch ms) for the 10-per-24h limit.
  std::vector<int64_t> scaling_events_ms;
  std::vector<ConsumerInfo> consumers;  // by registration time

  const ShardInfo* FindShard(uint32_t index) const;
  size_t OpenShardCount() const;
};

std::string StreamArn(std::string_view region, std::string_view account, std::string_view name);
// The parts of "arn:<partition>:kinesis:<region>:<account>:stream/<name>[/...]"; nullopt
// for anything else. The name ends at the first '/' after "stream/".
struct StreamArnParts {
  std::string partition, region, account, name;
};
std::optional<StreamArnParts> ParseStreamArn(std::string_view arn);

// AWS's two ResourceNotFoundException texts for a shard, each in one place (kNotFound;
// kinesalite's suite records which operation answers which). `shard_id` as the caller gave
// it (it may not even parse as a shard id).
// "Shard <id> in stream <name> under account <account> does not exist": GetShardIterator
// and SubscribeToShard for a shard id that parses, GetRecords of a deleted stream.
Status ShardNotFoundError(std::string_view shard_id, std::string_view stream,
                          std::string_view account);
// "Could not find shard <id> in stream <name> under account <account>.": a shard id that
// names no shard at all, and SplitShard's and MergeShards' shard arguments.
Status CouldNotFindShardError(std::string_view shard_id, std::string_view stream,
                              std::string_view account);

// JSON document stored per stream in meta.db.
std::string StreamInfoToJson(const StreamInfo& info);
Result<StreamInfo> StreamInfoFromJson(std::string_view json);

}  // namespace icestream::stream
