// PgStagingStore: a table channel's staged shard batches and its writers' requests to the
// table's owner (delivery/table/staging.h), as rows of icestream_staged and
// icestream_table_requests (schema.h). A batch is staged under its shard's lease and
// committed under the channel's control lease, both locked with (owner, epoch) in the
// transaction that writes or deletes the rows; the commit's deletion runs in the catalog
// transaction of the pointer swap (the catalog must be PgCatalogStore on the same
// database).
//
// Thread-safety: as PgPool.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "delivery/table/staging.h"
#include "pg/client.h"
#include "scaleout/lease_manager.h"
#include "scaleout/notify_listener.h"

namespace icestream::scaleout {

class PgStagingStore final : public delivery::table::StagingStore {
 public:
  // `pool`, `leases` and `listener` (null: Watch calls nothing) must outlive the store;
  // EnsureDeliverySchema must have run.
  PgStagingStore(pg::PgPool* pool, const LeaseManager* leases, NotifyListener* listener = nullptr)
      : pool_(pool), leases_(leases), listener_(listener) {}

  Result<bool> Stage(const std::string& channel_id,
                     const delivery::table::StagedBatch& batch) override;
  Result<std::vector<delivery::table::StagedBatch>> Staged(const std::string& channel_id) override;
  std::unique_ptr<iceberg::CommitFence> CommitFence(
      const std::string& channel_id, std::vector<delivery::table::StagedBatch> batches) override;
  Status Drop(const std::string& channel_id,
              const std::vector<delivery::table::StagedBatch>& batches) override;
  Status Request(const std::string& channel_id, const std::string& version_id) override;
  Result<std::vector<std::string>> Requests(const std::string& channel_id) override;
  Status DoneRequest(const std::string& channel_id, const std::string& version_id) override;
  // Stage notifies kStagedChannel with the channel's id (delivered when its transaction
  // commits); `listener` hands those to the watchers.
  std::shared_ptr<void> Watch(const std::string& channel_id, std::function<void()> staged) override;

  // The PostgreSQL notification channel of staged batches (payload: the channel id).
  static constexpr const char* kStagedChannel = "icestream_staged";

 private:
  pg::PgPool* pool_;
  const LeaseManager* leases_;
  NotifyListener* listener_;
};

}  // namespace icestream::scaleout
