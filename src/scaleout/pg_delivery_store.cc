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
  return FailedPrecondition(fmt::format(
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

Result<uint64_t> PgDeliveryStore::Fence(pg::PgTx& tx, const std::string& channel_id,
                                        const std::string& unit) const {
  uint64_t epoch = leases_ ? leases_->HeldEpoch(channel_id, unit) : 0;
  if (epoch == 0) return Fenced(channel_id, unit);
  RETURN_IF_ERROR(LockLease(tx, channel_id, unit, leases_->owner(), epoch));
  return epoch;
}

std::string PgDeliveryStore::ControlUnit(const std::string& channel_id) const {
  if (leases_ && leases_->UnitFor(channel_id, "") == delivery::kChannelUnit) {
    return delivery::kChannelUnit;
  }
  return delivery::kControlUnit;
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

Status PgDeliveryStore::SaveChannel(const delivery::ChannelConfig& c) {
  auto r = pool_->Exec("INSERT INTO icestream_channels (id, name, doc) VALUES ($1, $2, $3) ON "
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
                              "icestream_sink_state", "icestream_lease"}) {
      RETURN_IF_ERROR(
          tx.Exec(std::string("DELETE FROM ") + table + " WHERE channel_id = $1", {id}).status());
    }
    return tx.Exec("DELETE FROM icestream_channels WHERE id = $1", {id}).status();
  });
}

Result<std::map<std::string, delivery::Position>> PgDeliveryStore::Checkpoints(const std::string& id) {
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
      RETURN_IF_ERROR(tx.Exec("INSERT INTO icestream_checkpoints (channel_id, shard_id, sequence, "
                              "sub_sequence, epoch) VALUES ($1, $2, $3, $4, $5) ON CONFLICT "
                              "(channel_id, shard_id) DO UPDATE SET sequence = $3, sub_sequence = "
                              "$4, epoch = $5",
                              {c.id, shard, p.sequence, SubParam(p.sub_sequence), std::to_string(epoch)})
                          .status());
    }
    return tx.Exec("INSERT INTO icestream_channels (id, name, doc) VALUES ($1, $2, $3) ON CONFLICT "
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
      RETURN_IF_ERROR(tx.Exec("INSERT INTO icestream_plans (channel_id, shard_id, after_sequence, "
                              "after_sub_sequence, last_sequence, records, attempt_ms, epoch) VALUES "
                              "($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (channel_id, shard_id) DO "
                              "UPDATE SET after_sequence = $3, after_sub_sequence = $4, "
                              "last_sequence = $5, records = $6, attempt_ms = $7, epoch = $8",
                              {id, shard, p.after.sequence, SubParam(p.after.sub_sequence),
                               p.last_sequence, std::to_string(p.records),
                               std::to_string(p.attempt_ms), std::to_string(epochs[unit])})
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
      RETURN_IF_ERROR(tx.Exec("INSERT INTO icestream_checkpoints (channel_id, shard_id, sequence, "
                              "sub_sequence, epoch) VALUES ($1, $2, $3, $4, $5) ON CONFLICT "
                              "(channel_id, shard_id) DO UPDATE SET sequence = $3, sub_sequence = "
                              "$4, epoch = $5",
                              {id, shard, p.sequence, SubParam(p.sub_sequence), std::to_string(epoch)})
                          .status());
    }
    for (const auto& shard : finished) {
      RETURN_IF_ERROR(fence(shard).status());
      RETURN_IF_ERROR(tx.Exec("INSERT INTO icestream_finished (channel_id, shard_id) VALUES ($1, $2) "
                              "ON CONFLICT DO NOTHING",
                              {id, shard})
                          .status());
    }
    return Status::OK();
  });
}

Result<std::set<std::string>> PgDeliveryStore::FinishedShards(const std::string& id) {
  ASSIGN_OR_RETURN(auto r, pool_->Exec("SELECT shard_id FROM icestream_finished WHERE channel_id = $1",
                                       {id}));
  std::set<std::string> out;
  for (size_t i = 0; i < r.rows(); ++i) out.insert(r.text(i, 0));
  return out;
}

Result<nlohmann::json> PgDeliveryStore::LoadSinkState(const std::string& id) {
  ASSIGN_OR_RETURN(auto r, pool_->Exec("SELECT doc FROM icestream_sink_state WHERE channel_id = $1",
                                       {id}));
  if (r.rows() == 0) return nlohmann::json();
  auto j = nlohmann::json::parse(r.text(0, 0), nullptr, false);
  if (j.is_discarded()) return Corruption("channel sink state is not JSON");
  return j;
}

Status PgDeliveryStore::SaveSinkState(const std::string& id, const nlohmann::json& doc) {
  return pool_->RunInTransaction([&](pg::PgTx& tx) -> Status {
    RETURN_IF_ERROR(Fence(tx, id, ControlUnit(id)).status());
    return tx.Exec("INSERT INTO icestream_sink_state (channel_id, doc) VALUES ($1, $2) ON CONFLICT "
                   "(channel_id) DO UPDATE SET doc = $2",
                   {id, doc.dump()})
        .status();
  });
}

Status PgLeaseFence::Check(iceberg::CatalogStore::Tx& tx) const {
  auto& pgtx = static_cast<PgCatalogStore::PgCatalogTx&>(tx).pg();
  uint64_t epoch = leases_ ? leases_->HeldEpoch(channel_id_, delivery::kChannelUnit) : 0;
  if (epoch == 0) return Fenced(channel_id_, delivery::kChannelUnit);
  RETURN_IF_ERROR(LockLease(pgtx, channel_id_, delivery::kChannelUnit, leases_->owner(), epoch));
  return pgtx
      .Exec("INSERT INTO icestream_commit_log (channel_id, owner, epoch) VALUES ($1, $2, $3)",
            {channel_id_, leases_->owner(), std::to_string(epoch)})
      .status();
}

}  // namespace icestream::scaleout
