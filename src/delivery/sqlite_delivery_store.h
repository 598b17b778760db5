// SqliteDeliveryStore: the DeliveryStore of one server, in meta.db.
//
//   channels            (id PK, name UNIQUE, doc JSON)
//   delivery_checkpoints(channel_id, shard_id, sequence, sub_sequence)   PK (channel_id, shard_id)
//   delivery_plans      (channel_id, shard_id, after_sequence, after_sub_sequence,
//                        last_sequence, records, attempt_ms)             PK (channel_id, shard_id)
//   delivery_finished   (channel_id, shard_id)                           PK (channel_id, shard_id)
//   channel_sink_state  (channel_id PK, doc JSON)
//
// Data directories from before sequence-number checkpoints kept offsets
// (channel_checkpoints, channel_plans); Open converts them once with `legacy` (which
// only the local source can do) and drops the old tables in the same transaction.
// Thread-safety: as Database (serialized).
#pragma once

#include <functional>
#include <memory>

#include "common/sqlite.h"
#include "delivery/delivery_store.h"

namespace icestream::delivery {

// The position after records [0, next_offset) of shard `shard_index` of the local stream
// `stream_uid`.
using LegacyPosition =
    std::function<Position(uint64_t stream_uid, uint32_t shard_index, uint64_t next_offset)>;

class SqliteDeliveryStore final : public DeliveryStore {
 public:
  // `db` must outlive the store. `legacy` may be null when no old tables can exist.
  static Result<std::unique_ptr<SqliteDeliveryStore>> Open(Database* db,
                                                           LegacyPosition legacy = nullptr);

  Result<std::vector<ChannelConfig>> LoadChannels() override;
  Status SaveChannel(const ChannelConfig& c) override;
  Status RemoveChannel(const std::string& id) override;
  Result<std::map<std::string, Position>> Checkpoints(const std::string& id) override;
  Status Activate(const ChannelConfig& c,
                  const std::map<std::string, Position>& checkpoints) override;
  Result<std::map<std::string, BatchPlan>> Plans(const std::string& id) override;
  Status SavePlans(const std::string& id, const std::map<std::string, BatchPlan>& plans) override;
  Status Commit(const std::string& id, const std::map<std::string, Position>& checkpoints,
                const std::set<std::string>& finished) override;
  Result<std::set<std::string>> FinishedShards(const std::string& id) override;
  Result<nlohmann::json> LoadSinkState(const std::string& id) override;
  Status SaveSinkState(const std::string& id, const nlohmann::json& doc) override;

 private:
  explicit SqliteDeliveryStore(Database* db) : db_(db) {}
  Status MigrateOffsets(const LegacyPosition& legacy);
  Database* db_;
};

}  // namespace icestream::delivery
