// The delivery store in PostgreSQL, fenced by leases.
#include "scaleout/pg_delivery_store.h"

#include <fmt/format.h>

#include "delivery/coordinator.h"
#include "scaleout/pg_catalog_store.h"

namespace icestream::scaleout {

namespace {

pg::Param SubParam(const std::optional<uint32_t>& sub) {
  if (!sub) return std::nullopt;
  return std::to_string(*sub);
}

std::optional<uint32_t> SubOf(const pg::PgResult& r, size_t row, size_t col) {
  if (r.is_null(row, col)) return std::nullopt;
  return static_cast<uint32_t>(r.integer(row, col));
}

Status Fenced(const std::string& channel_id, const std::string& unit) {
  return delivery::Fenced(fmt::format(
      "fenced: this worker no longer holds {} of channel {} (another worker took it over)", unit,
      channel_id));
}

// Locks the lease row of (channel, unit) held by `owner` under `epoch`.
Status LockLease(pg::PgTx& tx, const std::string& channel_id, const std::string& unit,
                 const std::string& owner, uint64_t epoch) {
  ASSIGN_OR_RETURN(auto r, tx.Exec("SELECT 1 FROM icestream_lease WHERE channel_id = $1 AND unit = "
                                   "$2 AND owner = $3 AND epoch = $4 FOR NO KEY UPDATE",
                                   {channel_id, unit, owner, std::to_string(epoch)}));
  if (r.rows() == 0) return Fenced(channel_id, unit);
  return Status::OK();
}

}  // namespace

Result<uint64_t> LockHeldLease(pg::PgTx& tx, const LeaseManager* leases,
                               const std::string& channel_id, const std::string& unit) {
  uint64_t epoch = leases ? leases->HeldEpoch(channel_id, unit) : 0;
  if (epoch == 0) return Fenced(channel_id, unit);
  RETURN_IF_ERROR(LockLease(tx, channel_id, unit, leases->owner(), epoch));
  return epoch;
}

Status FenceCommit(pg::PgTx& tx, const LeaseManager* leases, const std::string& channel_id) {
  const std::string unit = leases ? leases->ControlUnitFor(channel_id) : delivery::kControlUnit;
  ASSIGN_OR_RETURN(uint64_t epoch, LockHeldLease(tx, leases, channel_id, unit));
  return tx
      .Exec("INSERT INTO icestream_commit_log (channel_id, owner, epoch) VALUES ($1, $2, $3)",
            {channel_id, leases->owner(), std::to_string(epoch)})
      .status();
}

Result<uint64_t> PgDeliveryStore::Fence(pg::PgTx& tx, const std::string& channel_id,
                                        const std::string& unit) const {
  return LockHeldLease(tx, leases_, channel_id, unit);
}

std::string PgDeliveryStore::ControlUnit(const std::string& channel_id) const {
  return leases_ ? leases_->ControlUnitFor(channel_id) : delivery::kControlUnit;
}

Result<std::vector<delivery::ChannelConfig>> PgDeliveryStore::LoadChannels() {
  ASSIGN_OR_RETURN(auto r, pool_->Exec("SELECT doc FROM icestream_channels ORDER BY name"));
  std::vector<delivery::ChannelConfig> out;
  for (size_t i = 0; i < r.rows(); ++i) {
    auto j = nlohmann::json::parse(r.text(i, 0), nullptr, false);
    if (j.is_discarded()) return Corruption("channel document is not JSON");
    ASSIGN_OR_RETURN(auto c, delivery::ChannelFromJson(j));
    out.push_back(std::move(c));
  }
  return out;
}

std::shared_ptr<void> PgDeliveryStore::WatchChannels(std::function<void()> changed) {
  return channels_ ? channels_->Watch("all", std::move(changed)) : nullptr;
}

Status PgDeliveryStore::SaveChannel(const delivery::ChannelConfig& c) {
  auto r = pool_->Exec(
      "INSERT INTO icestream_channels (id, name, doc) VALUES ($1, $2, $3) ON "
      "CONFLICT (id) DO UPDATE SET name = $2, doc = $3",
      {c.id, c.name, delivery::ChannelToJson(c).dump()});
  if (!r.ok() && r.status().code() == StatusCode::kAlreadyExists) {
    return AlreadyExists("a channel named " + c.name + " exists already");
  }
  return r.status();
}

Status PgDeliveryStore::RemoveChannel(const std::string& id) {
  return pool_->RunInTransaction([&](pg::PgTx& tx) -> Status {
    for (const char* table : {"icestream_plans", "icestream_checkpoints", "icestream_finished",
                              "icestream_sink_state", "icestream_redrives", "icestream_staged",
                              "icestream_table_requests", "icestream_lease"}) {
      RETURN_IF_ERROR(
          tx.Exec(std::string("DELETE FROM ") + table + " WHERE channel_id = $1", {id}).status());
    }
    return tx.Exec("DELETE FROM icestream_channels WHERE id = $1", {id}).status();
  });
}

Result<std::map<std::string, delivery::Position>> PgDeliveryStore::Checkpoints(
    const std::string& id) {
  ASSIGN_OR_RETURN(auto r, pool_->Exec("SELECT shard_id, sequence, sub_sequence FROM "
                                       "icestream_checkpoints WHERE channel_id = $1",
                                       {id}));
  std::map<std::string, delivery::Position> out;
  for (size_t i = 0; i < r.rows(); ++i) out[r.text(i, 0)] = {r.text(i, 1), SubOf(r, i, 2)};
  return out;
}

Status PgDeliveryStore::Activate(const delivery::ChannelConfig& c,
                                 const std::map<std::string, delivery::Position>& cps) {
  return pool_->RunInTransaction([&](pg::PgTx& tx) -> Status {
    ASSIGN_OR_RETURN(uint64_t epoch, Fence(tx, c.id, ControlUnit(c.id)));
    for (const auto& [shard, p] : cps) {
      RETURN_IF_ERROR(
          tx.Exec("INSERT INTO icestream_checkpoints (channel_id, shard_id, sequence, "
                  "sub_sequence, epoch) VALUES ($1, $2, $3, $4, $5) ON CONFLICT "
                  "(channel_id, shard_id) DO UPDATE SET sequence = $3, sub_sequence = "
                  "$4, epoch = $5",
                  {c.id, shard, p.sequence, SubParam(p.sub_sequence), std::to_string(epoch)})
              .status());
    }
    return tx
        .Exec(
            "INSERT INTO icestream_channels (id, name, doc) VALUES ($1, $2, $3) ON CONFLICT "
            "(id) DO UPDATE SET name = $2, doc = $3",
            {c.id, c.name, delivery::ChannelToJson(c).dump()})
        .status();
  });
}

Result<std::map<std::string, delivery::BatchPlan>> PgDeliveryStore::Plans(const std::string& id) {
  ASSIGN_OR_RETURN(auto r, pool_->Exec("SELECT shard_id, after_sequence, after_sub_sequence, "
                                       "last_sequence, records, attempt_ms FROM icestream_plans "
                                       "WHERE channel_id = $1",
                                       {id}));
  std::map<std::string, delivery::BatchPlan> out;
  for (size_t i = 0; i < r.rows(); ++i) {
    delivery::BatchPlan p;
    p.after = {r.text(i, 1), SubOf(r, i, 2)};
    p.last_sequence = r.text(i, 3);
    p.records = static_cast<uint64_t>(r.integer(i, 4));
    p.attempt_ms = r.integer(i, 5);
    out[r.text(i, 0)] = std::move(p);
  }
  return out;
}

Status PgDeliveryStore::SavePlans(const std::string& id,
                                  const std::map<std::string, delivery::BatchPlan>& plans) {
  return pool_->RunInTransaction([&](pg::PgTx& tx) -> Status {
    std::map<std::string, uint64_t> epochs;
    for (const auto& [shard, p] : plans) {
      std::string unit = leases_ ? leases_->UnitFor(id, shard) : delivery::ShardUnit(shard);
      if (!epochs.count(unit)) {
        ASSIGN_OR_RETURN(epochs[unit], Fence(tx, id, unit));
      }
      RETURN_IF_ERROR(
          tx.Exec("INSERT INTO icestream_plans (channel_id, shard_id, after_sequence, "
                  "after_sub_sequence, last_sequence, records, attempt_ms, epoch) VALUES "
                  "($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (channel_id, shard_id) DO "
                  "UPDATE SET after_sequence = $3, after_sub_sequence = $4, "
                  "last_sequence = $5, records = $6, attempt_ms = $7, epoch = $8",
                  {id, shard, p.after.sequence, SubParam(p.after.sub_sequence), p.last_sequence,
                   std::to_string(p.records), std::to_string(p.attempt_ms),
                   std::to_string(epochs[unit])})
              .status());
    }
    return Status::OK();
  });
}

Status PgDeliveryStore::Commit(const std::string& id,
                               const std::map<std::string, delivery::Position>& checkpoints,
                               const std::set<std::string>& finished) {
  return pool_->RunInTransaction([&](pg::PgTx& tx) -> Status {
    std::map<std::string, uint64_t> epochs;
    auto fence = [&](const std::string& shard) -> Result<uint64_t> {
      std::string unit = leases_ ? leases_->UnitFor(id, shard) : delivery::ShardUnit(shard);
      auto it = epochs.find(unit);
      if (it != epochs.end()) return it->second;
      ASSIGN_OR_RETURN(uint64_t e, Fence(tx, id, unit));
      epochs[unit] = e;
      return e;
    };
    for (const auto& [shard, p] : checkpoints) {
      ASSIGN_OR_RETURN(uint64_t epoch, fence(shard));
      RETURN_IF_ERROR(tx.Exec("DELETE FROM icestream_plans WHERE channel_id = $1 AND shard_id = $2",
                              {id, shard})
                          .status());
      RETURN_IF_ERROR(
          tx.Exec("INSERT INTO icestream_checkpoints (channel_id, shard_id, sequence, "
                  "sub_sequence, epoch) VALUES ($1, $2, $3, $4, $5) ON CONFLICT "
                  "(channel_id, shard_id) DO UPDATE SET sequence = $3, sub_sequence = "
                  "$4, epoch = $5",
                  {id, shard, p.sequence, SubParam(p.sub_sequence), std::to_string(epoch)})
              .status());
    }
    for (const auto& shard : finished) {
      RETURN_IF_ERROR(fence(shard).status());
      RETURN_IF_ERROR(
          tx.Exec("INSERT INTO icestream_finished (channel_id, shard_id) VALUES ($1, $2) "
                  "ON CONFLICT DO NOTHING",
                  {id, shard})
              .status());
    }
    return Status::OK();
  });
}

Result<std::set<std::string>> PgDeliveryStore::FinishedShards(const std::string& id) {
  ASSIGN_OR_RETURN(
      auto r, pool_->Exec("SELECT shard_id FROM icestream_finished WHERE channel_id = $1", {id}));
  std::set<std::string> out;
  for (size_t i = 0; i < r.rows(); ++i) out.insert(r.text(i, 0));
  return out;
}

Result<nlohmann::json> PgDeliveryStore::LoadSinkState(const std::string& id) {
  ASSIGN_OR_RETURN(auto r,
                   pool_->Exec("SELECT doc FROM icestream_sink_state WHERE channel_id = $1", {id}));
  if (r.rows() == 0) return nlohmann::json();
  auto j = nlohmann::json::parse(r.text(0, 0), nullptr, false);
  if (j.is_discarded()) return Corruption("channel sink state is not JSON");
  return j;
}

Status PgDeliveryStore::SaveSinkState(const std::string& id, const nlohmann::json& doc) {
  return pool_->RunInTransaction([&](pg::PgTx& tx) -> Status {
    RETURN_IF_ERROR(Fence(tx, id, ControlUnit(id)).status());
    return tx
        .Exec(
            "INSERT INTO icestream_sink_state (channel_id, doc) VALUES ($1, $2) ON CONFLICT "
            "(channel_id) DO UPDATE SET doc = $2",
            {id, doc.dump()})
        .status();
  });
}

Result<std::vector<nlohmann::json>> PgDeliveryStore::LoadRedrives(const std::string& id) {
  ASSIGN_OR_RETURN(auto r, pool_->Exec("SELECT doc FROM icestream_redrives WHERE channel_id = $1 "
                                       "ORDER BY created_ms, redrive_id",
                                       {id}));
  std::vector<nlohmann::json> out;
  for (size_t i = 0; i < r.rows(); ++i) {
    auto j = nlohmann::json::parse(r.text(i, 0), nullptr, false);
    if (j.is_discarded()) return Corruption("channel redrive document is not JSON");
    out.push_back(std::move(j));
  }
  return out;
}

Status PgDeliveryStore::SaveRedrive(const std::string& id, const std::string& redrive_id,
                                    int64_t created_ms, const nlohmann::json& doc) {
  // A redrive runs where the channel's control unit is held (ShardRunner), so its
  // progress is fenced by that unit like the sink's notes.
  return pool_->RunInTransaction([&](pg::PgTx& tx) -> Status {
    RETURN_IF_ERROR(Fence(tx, id, ControlUnit(id)).status());
    return tx
        .Exec(
            "INSERT INTO icestream_redrives (channel_id, redrive_id, created_ms, doc) "
            "VALUES ($1, $2, $3, $4) ON CONFLICT (channel_id, redrive_id) DO UPDATE SET "
            "doc = $4",
            {id, redrive_id, std::to_string(created_ms), doc.dump()})
        .status();
  });
}

Status PgLeaseFence::Check(iceberg::CatalogStore::Tx& tx) const {
  return FenceCommit(static_cast<PgCatalogStore::PgCatalogTx&>(tx).pg(), leases_, channel_id_);
}

}  // namespace icestream::scaleout
