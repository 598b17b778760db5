// Pool: what a process needs to take part in a scale-out pool on PostgreSQL — the
// connection pool, the schema (the Iceberg JDBC catalog's tables and icestream's own,
// migrated on join), this process's leases (LeaseManager), the fenced delivery store, the
// catalog rows of each warehouse and the fence of each table channel's commits.
// `icestream serve --pg` and `icestream worker` both join one (docs/scale-out.md).
//
// Lifetime: Join, hand the parts to the channel manager, and at the end stop the channel
// manager first, then Leave (with handoff on SIGTERM: the leases are given back at once).
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "delivery/delivery_store.h"
#include "delivery/table/staging.h"
#include "iceberg/catalog_store.h"
#include "pg/client.h"
#include "scaleout/lease_manager.h"
#include "scaleout/notify_listener.h"

namespace icestream::scaleout {

struct PoolOptions {
  std::string conninfo;  // libpq keyword/value string or postgresql:// URI
  size_t max_connections = 8;
  LeaseOptions leases;
  // Join as an observer (LeaseManager::Observe): channels are read and written, nothing
  // is delivered (`icestream channels --pg`).
  bool observe = false;
};

class Pool {
 public:
  // Connects, creates or upgrades the schema, registers this process and starts its lease
  // thread. kUnavailable when PostgreSQL cannot be reached; kFailedPrecondition when the
  // database holds another schema's iceberg_tables (pg_catalog_store.h).
  static Result<std::unique_ptr<Pool>> Join(PoolOptions options);
  ~Pool();

  pg::PgPool* pg() const { return pg_.get(); }
  LeaseManager* leases() const { return leases_.get(); }
  std::unique_ptr<delivery::DeliveryStore> MakeDeliveryStore() const;
  // Where table channels' shard batches are staged for their commit (staging.h).
  std::shared_ptr<delivery::table::StagingStore> MakeStagingStore() const;
  // The JDBC-catalog rows of a warehouse (catalog_name = the table bucket's name).
  Result<std::shared_ptr<iceberg::CatalogStore>> CatalogRows(const std::string& warehouse) const;
  // The fence of a table channel's commits (its control lease); lives as long as the pool.
  const iceberg::CommitFence* FenceFor(const std::string& channel_id);

  // Stops the lease thread; with `handoff` the leases are given back (owner cleared).
  void Leave(bool handoff);

 private:
  Pool() = default;
  std::unique_ptr<pg::PgPool> pg_;
  std::unique_ptr<LeaseManager> leases_;
  // Staged table batches of every process (not for observers, which commit nothing).
  std::unique_ptr<NotifyListener> staged_;
  // Changes of the channel list (for the channel manager's reload; not for observers).
  std::unique_ptr<NotifyListener> channels_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<iceberg::CommitFence>> fences_;
};

// Lease timings, checked: the lease at least two renew intervals, every interval
// positive. kInvalidArgument names what is wrong.
Status CheckLeaseTimings(const LeaseOptions& o);

}  // namespace icestream::scaleout
