// SQLite persistence of channels, checkpoints and batch plans.
#include "delivery/channel_store.h"

namespace icestream::delivery {

Result<std::unique_ptr<ChannelStore>> ChannelStore::Open(Database* db) {
  RETURN_IF_ERROR(db->Exec(
      "CREATE TABLE IF NOT EXISTS channels (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, "
      "doc TEXT NOT NULL);"
      "CREATE TABLE IF NOT EXISTS channel_checkpoints (channel_id TEXT NOT NULL, stream_uid "
      "INTEGER NOT NULL, shard INTEGER NOT NULL, next_offset INTEGER NOT NULL, PRIMARY KEY "
      "(channel_id, stream_uid, shard));"
      "CREATE TABLE IF NOT EXISTS channel_plans (channel_id TEXT NOT NULL, stream_uid INTEGER NOT "
      "NULL, shard INTEGER NOT NULL, first_offset INTEGER NOT NULL, end_offset INTEGER NOT NULL, "
      "PRIMARY KEY (channel_id, stream_uid, shard));"
      "CREATE TABLE IF NOT EXISTS channel_sink_state (channel_id TEXT PRIMARY KEY, doc TEXT NOT NULL);"));
  // Data directories from before attempt_ms: add the column (plans then read as 0).
  ASSIGN_OR_RETURN(auto cols, db->Query("SELECT name FROM pragma_table_info('channel_plans')"));
  bool has_attempt = false;
  for (const auto& r : cols) has_attempt = has_attempt || AsText(r[0]) == "attempt_ms";
  if (!has_attempt) {
    RETURN_IF_ERROR(db->Exec(
        "ALTER TABLE channel_plans ADD COLUMN attempt_ms INTEGER NOT NULL DEFAULT 0"));
  }
  return std::unique_ptr<ChannelStore>(new ChannelStore(db));
}

Result<std::vector<ChannelConfig>> ChannelStore::LoadAll() {
  ASSIGN_OR_RETURN(auto rows, db_->Query("SELECT doc FROM channels ORDER BY name"));
  std::vector<ChannelConfig> out;
  for (const auto& r : rows) {
    auto j = nlohmann::json::parse(AsText(r[0]), nullptr, false);
    if (j.is_discarded()) return Corruption("channel document is not JSON");
    ASSIGN_OR_RETURN(auto c, ChannelFromJson(j));
    out.push_back(std::move(c));
  }
  return out;
}

Status ChannelStore::Save(const ChannelConfig& c) {
  return db_
      ->Query("INSERT OR REPLACE INTO channels(id, name, doc) VALUES (?1, ?2, ?3)",
              {c.id, c.name, ChannelToJson(c).dump()})
      .status();
}

Status ChannelStore::Remove(const std::string& id) {
  return db_->Transaction([&](Database::Tx& tx) -> Status {
    RETURN_IF_ERROR(tx.Exec("DELETE FROM channel_plans WHERE channel_id = ?1", {id}));
    RETURN_IF_ERROR(tx.Exec("DELETE FROM channel_checkpoints WHERE channel_id = ?1", {id}));
    RETURN_IF_ERROR(tx.Exec("DELETE FROM channel_sink_state WHERE channel_id = ?1", {id}));
    return tx.Exec("DELETE FROM channels WHERE id = ?1", {id});
  });
}

Result<std::map<ShardKey, uint64_t>> ChannelStore::Checkpoints(const std::string& id) {
  ASSIGN_OR_RETURN(auto rows, db_->Query("SELECT stream_uid, shard, next_offset FROM "
                                         "channel_checkpoints WHERE channel_id = ?1",
                                         {id}));
  std::map<ShardKey, uint64_t> out;
  for (const auto& r : rows) {
    out[{static_cast<uint64_t>(AsInt(r[0])), static_cast<uint32_t>(AsInt(r[1]))}] =
        static_cast<uint64_t>(AsInt(r[2]));
  }
  return out;
}

Status ChannelStore::Activate(const ChannelConfig& c, const std::map<ShardKey, uint64_t>& cps) {
  return db_->Transaction([&](Database::Tx& tx) -> Status {
    for (const auto& [k, off] : cps) {
      RETURN_IF_ERROR(tx.Exec(
          "INSERT OR REPLACE INTO channel_checkpoints(channel_id, stream_uid, shard, next_offset) "
          "VALUES (?1, ?2, ?3, ?4)",
          {c.id, static_cast<int64_t>(k.stream_uid), static_cast<int64_t>(k.shard),
           static_cast<int64_t>(off)}));
    }
    return tx.Exec("INSERT OR REPLACE INTO channels(id, name, doc) VALUES (?1, ?2, ?3)",
                   {c.id, c.name, ChannelToJson(c).dump()});
  });
}

Result<std::map<ShardKey, BatchPlan>> ChannelStore::Plans(const std::string& id) {
  ASSIGN_OR_RETURN(auto rows, db_->Query("SELECT stream_uid, shard, first_offset, end_offset, attempt_ms FROM "
                                         "channel_plans WHERE channel_id = ?1",
                                         {id}));
  std::map<ShardKey, BatchPlan> out;
  for (const auto& r : rows) {
    out[{static_cast<uint64_t>(AsInt(r[0])), static_cast<uint32_t>(AsInt(r[1]))}] =
        BatchPlan{static_cast<uint64_t>(AsInt(r[2])), static_cast<uint64_t>(AsInt(r[3])), AsInt(r[4])};
  }
  return out;
}

Result<std::optional<BatchPlan>> ChannelStore::LoadPlan(const std::string& id, ShardKey k) {
  ASSIGN_OR_RETURN(auto all, Plans(id));
  auto it = all.find(k);
  if (it == all.end()) return std::optional<BatchPlan>();
  return std::optional<BatchPlan>(it->second);
}

Status ChannelStore::SavePlans(const std::string& id, const std::map<ShardKey, BatchPlan>& plans) {
  return db_->Transaction([&](Database::Tx& tx) -> Status {
    for (const auto& [k, p] : plans) {
      RETURN_IF_ERROR(tx.Exec(
          "INSERT OR REPLACE INTO channel_plans(channel_id, stream_uid, shard, first_offset, "
          "end_offset, attempt_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
          {id, static_cast<int64_t>(k.stream_uid), static_cast<int64_t>(k.shard),
           static_cast<int64_t>(p.first_offset), static_cast<int64_t>(p.end_offset), p.attempt_ms}));
    }
    return Status::OK();
  });
}

Status ChannelStore::SavePlan(const std::string& id, ShardKey k, const BatchPlan& p) {
  return SavePlans(id, {{k, p}});
}

Status ChannelStore::Commit(const std::string& id, const std::map<ShardKey, uint64_t>& next_offsets) {
  return db_->Transaction([&](Database::Tx& tx) -> Status {
    for (const auto& [k, next] : next_offsets) {
      RETURN_IF_ERROR(tx.Exec(
          "DELETE FROM channel_plans WHERE channel_id = ?1 AND stream_uid = ?2 AND shard = ?3",
          {id, static_cast<int64_t>(k.stream_uid), static_cast<int64_t>(k.shard)}));
      RETURN_IF_ERROR(tx.Exec(
          "INSERT OR REPLACE INTO channel_checkpoints(channel_id, stream_uid, shard, next_offset) "
          "VALUES (?1, ?2, ?3, ?4)",
          {id, static_cast<int64_t>(k.stream_uid), static_cast<int64_t>(k.shard), static_cast<int64_t>(next)}));
    }
    return Status::OK();
  });
}

Status ChannelStore::Commit(const std::string& id, ShardKey k, uint64_t next_offset) {
  return Commit(id, std::map<ShardKey, uint64_t>{{k, next_offset}});
}

Result<nlohmann::json> ChannelStore::LoadSinkState(const std::string& id) {
  ASSIGN_OR_RETURN(auto rows, db_->Query("SELECT doc FROM channel_sink_state WHERE channel_id = ?1", {id}));
  if (rows.empty()) return nlohmann::json();
  auto j = nlohmann::json::parse(AsText(rows[0][0]), nullptr, false);
  if (j.is_discarded()) return Corruption("channel sink state is not JSON");
  return j;
}

Status ChannelStore::SaveSinkState(const std::string& id, const nlohmann::json& doc) {
  return db_
      ->Query("INSERT OR REPLACE INTO channel_sink_state(channel_id, doc) VALUES (?1, ?2)", {id, doc.dump()})
      .status();
}

}  // namespace icestream::delivery
