// ChannelStore: channels, per-shard checkpoints and in-flight batch plans in meta.db.
//
//   channels            (id PK, name UNIQUE, doc JSON)
//   channel_checkpoints (channel_id, stream_uid, shard, next_offset)  — delivered below
//   channel_plans       (channel_id, stream_uid, shard, first_offset, end_offset, attempt_ms)
//   channel_sink_state  (channel_id PK, doc JSON)                   — a sink's own notes
//
// A plan is written before a batch is delivered and removed in the same transaction
// that moves the checkpoint past it, so after a crash the exact batch is delivered again
// (same ranges, same attempt time) before anything new. A batch that spans shards (a
// table commit) has one plan row per shard, written and removed together.
// Thread-safety: as Database (serialized).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/sqlite.h"
#include "common/status.h"
#include "delivery/channel.h"

namespace icestream::delivery {

struct ShardKey {
  uint64_t stream_uid = 0;
  uint32_t shard = 0;
  auto operator<=>(const ShardKey&) const = default;
};

struct BatchPlan {
  uint64_t first_offset = 0;
  uint64_t end_offset = 0;  // exclusive
  // When the batch was first attempted (the DLQ lines' attemptTimestamp); kept so a
  // replay rebuilds the same bytes. 0 in plans written before the column existed.
  int64_t attempt_ms = 0;
};

class ChannelStore {
 public:
  static Result<std::unique_ptr<ChannelStore>> Open(Database* db);

  Result<std::vector<ChannelConfig>> LoadAll();
  Status Save(const ChannelConfig& c);
  // Removes the channel with its checkpoints and plans.
  Status Remove(const std::string& id);

  Result<std::map<ShardKey, uint64_t>> Checkpoints(const std::string& id);
  // Sets several checkpoints at once (activation) and saves the channel document.
  Status Activate(const ChannelConfig& c, const std::map<ShardKey, uint64_t>& checkpoints);

  // Every plan of the channel.
  Result<std::map<ShardKey, BatchPlan>> Plans(const std::string& id);
  Result<std::optional<BatchPlan>> LoadPlan(const std::string& id, ShardKey shard);
  // Saves the plans of one batch in one transaction.
  Status SavePlans(const std::string& id, const std::map<ShardKey, BatchPlan>& plans);
  Status SavePlan(const std::string& id, ShardKey shard, const BatchPlan& plan);
  // Moves the checkpoints and drops the plans of those shards, atomically.
  Status Commit(const std::string& id, const std::map<ShardKey, uint64_t>& next_offsets);
  Status Commit(const std::string& id, ShardKey shard, uint64_t next_offset);

  // The sink's document (null when it never saved one).
  Result<nlohmann::json> LoadSinkState(const std::string& id);
  Status SaveSinkState(const std::string& id, const nlohmann::json& doc);

 private:
  explicit ChannelStore(Database* db) : db_(db) {}
  Database* db_;
};

}  // namespace icestream::delivery
