// The delivery engine's state in meta.db.
#include "delivery/sqlite_delivery_store.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace icestream::delivery {

namespace {

SqlValue SubValue(const std::optional<uint32_t>& sub) {
  if (!sub) return nullptr;
  return static_cast<int64_t>(*sub);
}

std::optional<uint32_t> SubOf(const SqlValue& v) {
  if (!std::holds_alternative<int64_t>(v)) return std::nullopt;
  return static_cast<uint32_t>(std::get<int64_t>(v));
}

std::string LegacyShardId(int64_t index) { return fmt::format("shardId-{:012d}", index); }

Status PutCheckpoint(Database::Tx& tx, const std::string& id, const std::string& shard,
                     const Position& p) {
  return tx.Exec(
      "INSERT OR REPLACE INTO delivery_checkpoints(channel_id, shard_id, sequence, sub_sequence) "
      "VALUES (?1, ?2, ?3, ?4)",
      {id, shard, p.sequence, SubValue(p.sub_sequence)});
}

Status PutPlan(Database::Tx& tx, const std::string& id, const std::string& shard,
               const BatchPlan& p) {
  return tx.Exec(
      "INSERT OR REPLACE INTO delivery_plans(channel_id, shard_id, after_sequence, "
      "after_sub_sequence, last_sequence, records, attempt_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
      {id, shard, p.after.sequence, SubValue(p.after.sub_sequence), p.last_sequence,
       static_cast<int64_t>(p.records), p.attempt_ms});
}

}  // namespace

Result<std::unique_ptr<SqliteDeliveryStore>> SqliteDeliveryStore::Open(Database* db,
                                                                       LegacyPosition legacy) {
  RETURN_IF_ERROR(db->Exec(
      "CREATE TABLE IF NOT EXISTS channels (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, "
      "doc TEXT NOT NULL);"
      "CREATE TABLE IF NOT EXISTS delivery_checkpoints (channel_id TEXT NOT NULL, shard_id TEXT "
      "NOT NULL, sequence TEXT NOT NULL, sub_sequence INTEGER, PRIMARY KEY (channel_id, "
      "shard_id));"
      "CREATE TABLE IF NOT EXISTS delivery_plans (channel_id TEXT NOT NULL, shard_id TEXT NOT "
      "NULL, after_sequence TEXT NOT NULL, after_sub_sequence INTEGER, last_sequence TEXT NOT "
      "NULL, records INTEGER NOT NULL, attempt_ms INTEGER NOT NULL, PRIMARY KEY (channel_id, "
      "shard_id));"
      "CREATE TABLE IF NOT EXISTS delivery_finished (channel_id TEXT NOT NULL, shard_id TEXT NOT "
      "NULL, PRIMARY KEY (channel_id, shard_id));"
      "CREATE TABLE IF NOT EXISTS channel_sink_state (channel_id TEXT PRIMARY KEY, doc TEXT NOT "
      "NULL);"));
  std::unique_ptr<SqliteDeliveryStore> store(new SqliteDeliveryStore(db));
  RETURN_IF_ERROR(store->MigrateOffsets(legacy));
  return store;
}

Status SqliteDeliveryStore::MigrateOffsets(const LegacyPosition& legacy) {
  ASSIGN_OR_RETURN(auto tables, db_->Query("SELECT name FROM sqlite_master WHERE type = 'table' "
                                           "AND name IN ('channel_checkpoints', 'channel_plans')"));
  if (tables.empty()) return Status::OK();
  if (!legacy) {
    return FailedPrecondition(
        "meta.db holds offset checkpoints of an earlier version and nothing converts them");
  }
  bool has_plans = false, has_checkpoints = false;
  for (const auto& t : tables) {
    has_plans |= AsText(t[0]) == "channel_plans";
    has_checkpoints |= AsText(t[0]) == "channel_checkpoints";
  }
  ASSIGN_OR_RETURN(auto channels, LoadChannels());
  std::map<std::string, uint64_t> uid_of;
  for (const auto& c : channels) uid_of[c.id] = c.stream_uid;
  size_t moved = 0;
  RETURN_IF_ERROR(db_->Transaction([&](Database::Tx& tx) -> Status {
    if (has_checkpoints) {
      ASSIGN_OR_RETURN(auto rows, tx.Query("SELECT channel_id, stream_uid, shard, next_offset FROM "
                                           "channel_checkpoints"));
      for (const auto& r : rows) {
        std::string id = AsText(r[0]);
        auto uid = static_cast<uint64_t>(AsInt(r[1]));
        auto it = uid_of.find(id);
        if (it == uid_of.end() || it->second != uid) continue;  // an older stream's rows
        Position p =
            legacy(uid, static_cast<uint32_t>(AsInt(r[2])), static_cast<uint64_t>(AsInt(r[3])));
        RETURN_IF_ERROR(PutCheckpoint(tx, id, LegacyShardId(AsInt(r[2])), p));
        ++moved;
      }
      RETURN_IF_ERROR(tx.Exec("DROP TABLE channel_checkpoints"));
    }
    if (has_plans) {
      ASSIGN_OR_RETURN(auto cols, tx.Query("SELECT name FROM pragma_table_info('channel_plans')"));
      bool attempt = false;
      for (const auto& c : cols) attempt |= AsText(c[0]) == "attempt_ms";
      ASSIGN_OR_RETURN(auto rows,
                       tx.Query(std::string("SELECT channel_id, stream_uid, shard, first_offset, "
                                            "end_offset, ") +
                                (attempt ? "attempt_ms" : "0") + " FROM channel_plans"));
      for (const auto& r : rows) {
        std::string id = AsText(r[0]);
        auto uid = static_cast<uint64_t>(AsInt(r[1]));
        auto it = uid_of.find(id);
        if (it == uid_of.end() || it->second != uid) continue;
        auto shard = static_cast<uint32_t>(AsInt(r[2]));
        auto first = static_cast<uint64_t>(AsInt(r[3]));
        auto end = static_cast<uint64_t>(AsInt(r[4]));
        if (end <= first) continue;
        BatchPlan plan;
        plan.after = legacy(uid, shard, first);
        plan.last_sequence = legacy(uid, shard, end).sequence;
        plan.records = end - first;
        plan.attempt_ms = AsInt(r[5]);
        RETURN_IF_ERROR(PutPlan(tx, id, LegacyShardId(shard), plan));
        ++moved;
      }
      RETURN_IF_ERROR(tx.Exec("DROP TABLE channel_plans"));
    }
    return Status::OK();
  }));
  if (moved > 0) {
    spdlog::info("meta.db: {} checkpoint(s) and plan(s) converted from offsets to sequence numbers",
                 moved);
  }
  return Status::OK();
}

Result<std::vector<ChannelConfig>> SqliteDeliveryStore::LoadChannels() {
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

Status SqliteDeliveryStore::SaveChannel(const ChannelConfig& c) {
  return db_
      ->Query("INSERT OR REPLACE INTO channels(id, name, doc) VALUES (?1, ?2, ?3)",
              {c.id, c.name, ChannelToJson(c).dump()})
      .status();
}

Status SqliteDeliveryStore::RemoveChannel(const std::string& id) {
  return db_->Transaction([&](Database::Tx& tx) -> Status {
    for (const char* table :
         {"delivery_plans", "delivery_checkpoints", "delivery_finished", "channel_sink_state"}) {
      RETURN_IF_ERROR(
          tx.Exec(std::string("DELETE FROM ") + table + " WHERE channel_id = ?1", {id}));
    }
    return tx.Exec("DELETE FROM channels WHERE id = ?1", {id});
  });
}

Result<std::map<std::string, Position>> SqliteDeliveryStore::Checkpoints(const std::string& id) {
  ASSIGN_OR_RETURN(auto rows, db_->Query("SELECT shard_id, sequence, sub_sequence FROM "
                                         "delivery_checkpoints WHERE channel_id = ?1",
                                         {id}));
  std::map<std::string, Position> out;
  for (const auto& r : rows) out[AsText(r[0])] = Position{AsText(r[1]), SubOf(r[2])};
  return out;
}

Status SqliteDeliveryStore::Activate(const ChannelConfig& c,
                                     const std::map<std::string, Position>& cps) {
  return db_->Transaction([&](Database::Tx& tx) -> Status {
    for (const auto& [shard, p] : cps) RETURN_IF_ERROR(PutCheckpoint(tx, c.id, shard, p));
    return tx.Exec("INSERT OR REPLACE INTO channels(id, name, doc) VALUES (?1, ?2, ?3)",
                   {c.id, c.name, ChannelToJson(c).dump()});
  });
}

Result<std::map<std::string, BatchPlan>> SqliteDeliveryStore::Plans(const std::string& id) {
  ASSIGN_OR_RETURN(auto rows,
                   db_->Query("SELECT shard_id, after_sequence, after_sub_sequence, last_sequence, "
                              "records, attempt_ms FROM delivery_plans WHERE channel_id = ?1",
                              {id}));
  std::map<std::string, BatchPlan> out;
  for (const auto& r : rows) {
    BatchPlan p;
    p.after = Position{AsText(r[1]), SubOf(r[2])};
    p.last_sequence = AsText(r[3]);
    p.records = static_cast<uint64_t>(AsInt(r[4]));
    p.attempt_ms = AsInt(r[5]);
    out[AsText(r[0])] = std::move(p);
  }
  return out;
}

Status SqliteDeliveryStore::SavePlans(const std::string& id,
                                      const std::map<std::string, BatchPlan>& plans) {
  return db_->Transaction([&](Database::Tx& tx) -> Status {
    for (const auto& [shard, p] : plans) RETURN_IF_ERROR(PutPlan(tx, id, shard, p));
    return Status::OK();
  });
}

Status SqliteDeliveryStore::Commit(const std::string& id,
                                   const std::map<std::string, Position>& checkpoints,
                                   const std::set<std::string>& finished) {
  return db_->Transaction([&](Database::Tx& tx) -> Status {
    for (const auto& [shard, p] : checkpoints) {
      RETURN_IF_ERROR(tx.Exec("DELETE FROM delivery_plans WHERE channel_id = ?1 AND shard_id = ?2",
                              {id, shard}));
      RETURN_IF_ERROR(PutCheckpoint(tx, id, shard, p));
    }
    for (const auto& shard : finished) {
      RETURN_IF_ERROR(
          tx.Exec("INSERT OR IGNORE INTO delivery_finished(channel_id, shard_id) VALUES (?1, ?2)",
                  {id, shard}));
    }
    return Status::OK();
  });
}

Result<std::set<std::string>> SqliteDeliveryStore::FinishedShards(const std::string& id) {
  ASSIGN_OR_RETURN(
      auto rows, db_->Query("SELECT shard_id FROM delivery_finished WHERE channel_id = ?1", {id}));
  std::set<std::string> out;
  for (const auto& r : rows) out.insert(AsText(r[0]));
  return out;
}

Result<nlohmann::json> SqliteDeliveryStore::LoadSinkState(const std::string& id) {
  ASSIGN_OR_RETURN(auto rows,
                   db_->Query("SELECT doc FROM channel_sink_state WHERE channel_id = ?1", {id}));
  if (rows.empty()) return nlohmann::json();
  auto j = nlohmann::json::parse(AsText(rows[0][0]), nullptr, false);
  if (j.is_discarded()) return Corruption("channel sink state is not JSON");
  return j;
}

Status SqliteDeliveryStore::SaveSinkState(const std::string& id, const nlohmann::json& doc) {
  return db_
      ->Query("INSERT OR REPLACE INTO channel_sink_state(channel_id, doc) VALUES (?1, ?2)",
              {id, doc.dump()})
      .status();
}

}  // namespace icestream::delivery
