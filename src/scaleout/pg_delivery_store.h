// PgDeliveryStore: the DeliveryStore of a pool of processes, in PostgreSQL (schema.h).
// The same rows as meta.db's, with one difference that makes exactly-once hold across
// processes: every write of a unit's state runs in a transaction that first locks that
// unit's lease row with owner = this process and epoch = the one it holds it under
// (SELECT … FOR NO KEY UPDATE). A process that lost the unit — paused longer than its
// lease, cut off from the database, superseded — matches no row, writes nothing, and gets
// kFailedPrecondition ("fenced"). A takeover, which bumps the epoch, waits for the row
// lock, so a write and a takeover never interleave.
//
//   checkpoints, plans     fenced by the shard's unit (or the channel's, for a table)
//   activation, sink notes, fenced by the channel's control unit
//   redrives
//   channel documents      not fenced (the API writes them; any process may fail one)
//
// Thread-safety: as PgPool.
#pragma once

#include <memory>
#include <string>

#include "delivery/delivery_store.h"
#include "iceberg/catalog_store.h"
#include "pg/client.h"
#include "scaleout/lease_manager.h"
#include "scaleout/notify_listener.h"

namespace icestream::scaleout {

class PgDeliveryStore final : public delivery::DeliveryStore {
 public:
  // `pool` and `leases` must outlive the store; EnsureDeliverySchema must have run.
  // Without `leases` (the `channels` command, which only edits channel documents) every
  // fenced write is refused.
  // `channels` (optional, must outlive the store): the listener of
  // kChannelsChanged, for WatchChannels.
  PgDeliveryStore(pg::PgPool* pool, const LeaseManager* leases, NotifyListener* channels = nullptr)
      : pool_(pool), leases_(leases), channels_(channels) {}

  // The PostgreSQL channel a change of icestream_channels is announced on (its trigger,
  // schema.cc migration 6), payload "all".
  static constexpr const char* kChannelsChanged = "icestream_channels";

  Result<std::vector<delivery::ChannelConfig>> LoadChannels() override;
  std::shared_ptr<void> WatchChannels(std::function<void()> changed) override;
  Status SaveChannel(const delivery::ChannelConfig& c) override;
  Status RemoveChannel(const std::string& id) override;
  Result<std::map<std::string, delivery::Position>> Checkpoints(const std::string& id) override;
  Status Activate(const delivery::ChannelConfig& c,
                  const std::map<std::string, delivery::Position>& checkpoints) override;
  Result<std::map<std::string, delivery::BatchPlan>> Plans(const std::string& id) override;
  Status SavePlans(const std::string& id,
                   const std::map<std::string, delivery::BatchPlan>& plans) override;
  Status Commit(const std::string& id, const std::map<std::string, delivery::Position>& checkpoints,
                const std::set<std::string>& finished) override;
  Result<std::set<std::string>> FinishedShards(const std::string& id) override;
  Result<nlohmann::json> LoadSinkState(const std::string& id) override;
  Status SaveSinkState(const std::string& id, const nlohmann::json& doc) override;
  Result<std::vector<nlohmann::json>> LoadRedrives(const std::string& id) override;
  Status SaveRedrive(const std::string& id, const std::string& redrive_id, int64_t created_ms,
                     const nlohmann::json& doc) override;

 private:
  // Locks the unit's lease row if this process holds it; kFailedPrecondition otherwise.
  // Returns the epoch.
  Result<uint64_t> Fence(pg::PgTx& tx, const std::string& channel_id,
                         const std::string& unit) const;
  std::string ControlUnit(const std::string& channel_id) const;

  pg::PgPool* pool_;
  const LeaseManager* leases_;
  NotifyListener* channels_;
};

// Locks the lease row of (channel, unit) if this process holds it (owner and the epoch it
// holds it under, FOR NO KEY UPDATE); kFailedPrecondition ("fenced") otherwise. Returns
// the epoch.
Result<uint64_t> LockHeldLease(pg::PgTx& tx, const LeaseManager* leases,
                               const std::string& channel_id, const std::string& unit);
// Locks the channel's control lease as LockHeldLease and logs the commit in
// icestream_commit_log, in `tx` (a catalog commit's transaction).
Status FenceCommit(pg::PgTx& tx, const LeaseManager* leases, const std::string& channel_id);

// The fence a table channel's catalog commits carry on a worker: the channel's control
// lease (its "channel" unit when delivered as one unit, else "control"), locked with owner
// and epoch in the catalog transaction of the pointer swap, with a row in
// icestream_commit_log written in the same transaction. The catalog must be the
// PostgreSQL one of the same database (PgCatalogStore).
class PgLeaseFence final : public iceberg::CommitFence {
 public:
  PgLeaseFence(const LeaseManager* leases, std::string channel_id)
      : leases_(leases), channel_id_(std::move(channel_id)) {}
  Status Check(iceberg::CatalogStore::Tx& tx) const override;

 private:
  const LeaseManager* leases_;
  const std::string channel_id_;
};

}  // namespace icestream::scaleout
