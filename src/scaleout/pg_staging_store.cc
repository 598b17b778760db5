// Staged table batches in PostgreSQL.
#include "scaleout/pg_staging_store.h"

#include <fmt/format.h>

#include "delivery/coordinator.h"
#include "scaleout/pg_catalog_store.h"
#include "scaleout/pg_delivery_store.h"

namespace icestream::scaleout {

namespace {

using delivery::table::StagedBatch;

std::string SubKey(const std::optional<uint32_t>& sub) {
  return sub ? std::to_string(*sub) : std::string("-1");
}

// Deletes the rows of `batches`; kFailedPrecondition when one of them is gone (committed
// or dropped by another holder of the control unit).
Status DeleteRows(pg::PgTx& tx, const std::string& channel_id,
                  const std::vector<StagedBatch>& batches) {
  for (const auto& b : batches) {
    ASSIGN_OR_RETURN(
        auto r, tx.Exec("DELETE FROM icestream_staged WHERE channel_id = $1 AND "
                        "shard_id = $2 AND after_sequence = $3 AND "
                        "after_sub_sequence = $4 RETURNING 1",
                        {channel_id, b.shard, b.after.sequence, SubKey(b.after.sub_sequence)}));
    if (r.rows() != 1) {
      return FailedPrecondition(fmt::format(
          "the staged batch of shard {} after {} of channel {} is gone (committed elsewhere)",
          b.shard, b.after.sequence, channel_id));
    }
  }
  return Status::OK();
}

class StagedCommitFence final : public iceberg::CommitFence {
 public:
  StagedCommitFence(const LeaseManager* leases, std::string channel_id,
                    std::vector<StagedBatch> batches)
      : leases_(leases), channel_id_(std::move(channel_id)), batches_(std::move(batches)) {}
  Status Check(iceberg::CatalogStore::Tx& tx) const override {
    pg::PgTx& pgtx = static_cast<PgCatalogStore::PgCatalogTx&>(tx).pg();
    RETURN_IF_ERROR(FenceCommit(pgtx, leases_, channel_id_));
    return DeleteRows(pgtx, channel_id_, batches_);
  }

 private:
  const LeaseManager* leases_;
  const std::string channel_id_;
  const std::vector<StagedBatch> batches_;
};

}  // namespace

Result<bool> PgStagingStore::Stage(const std::string& channel_id, const StagedBatch& b) {
  bool fresh = false;
  RETURN_IF_ERROR(pool_->RunInTransaction([&](pg::PgTx& tx) -> Status {
    ASSIGN_OR_RETURN(uint64_t epoch,
                     LockHeldLease(tx, leases_, channel_id, delivery::ShardUnit(b.shard)));
    ASSIGN_OR_RETURN(
        auto r,
        // A fresh row also notifies the channel's watchers (on commit), in the same
        // round trip.
        tx.Exec(fmt::format(
                    "WITH ins AS (INSERT INTO icestream_staged (channel_id, shard_id, "
                    "after_sequence, after_sub_sequence, last_sequence, row_count, files, epoch) "
                    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING RETURNING 1) "
                    "SELECT pg_notify('{}', $1) FROM ins",
                    kStagedChannel),
                {channel_id, b.shard, b.after.sequence, SubKey(b.after.sub_sequence),
                 b.last_sequence, std::to_string(b.rows), delivery::table::DataFilesToJson(b.files),
                 std::to_string(epoch)}));
    fresh = r.rows() == 1;
    return Status::OK();
  }));
  return fresh;
}

std::shared_ptr<void> PgStagingStore::Watch(const std::string& channel_id,
                                            std::function<void()> staged) {
  return listener_ ? listener_->Watch(channel_id, std::move(staged)) : nullptr;
}

Result<std::vector<StagedBatch>> PgStagingStore::Staged(const std::string& channel_id) {
  ASSIGN_OR_RETURN(auto r, pool_->Exec("SELECT shard_id, after_sequence, after_sub_sequence, "
                                       "last_sequence, row_count, files FROM icestream_staged "
                                       "WHERE channel_id = $1 ORDER BY shard_id, staged_at",
                                       {channel_id}));
  std::vector<StagedBatch> out;
  for (size_t i = 0; i < r.rows(); ++i) {
    StagedBatch b;
    b.shard = r.text(i, 0);
    b.after.sequence = r.text(i, 1);
    int64_t sub = r.integer(i, 2);
    if (sub >= 0) b.after.sub_sequence = static_cast<uint32_t>(sub);
    b.last_sequence = r.text(i, 3);
    b.rows = static_cast<uint64_t>(r.integer(i, 4));
    ASSIGN_OR_RETURN(b.files, delivery::table::DataFilesFromJson(r.text(i, 5)));
    out.push_back(std::move(b));
  }
  return out;
}

std::unique_ptr<iceberg::CommitFence> PgStagingStore::CommitFence(
    const std::string& channel_id, std::vector<StagedBatch> batches) {
  return std::make_unique<StagedCommitFence>(leases_, channel_id, std::move(batches));
}

Status PgStagingStore::Drop(const std::string& channel_id,
                            const std::vector<StagedBatch>& batches) {
  return pool_->RunInTransaction([&](pg::PgTx& tx) -> Status {
    const std::string unit =
        leases_ ? leases_->ControlUnitFor(channel_id) : std::string(delivery::kControlUnit);
    RETURN_IF_ERROR(LockHeldLease(tx, leases_, channel_id, unit).status());
    return DeleteRows(tx, channel_id, batches);
  });
}

Status PgStagingStore::Request(const std::string& channel_id, const std::string& version_id) {
  return pool_
      ->Exec(
          "INSERT INTO icestream_table_requests (channel_id, version_id) VALUES ($1, $2) ON "
          "CONFLICT DO NOTHING",
          {channel_id, version_id})
      .status();
}

Result<std::vector<std::string>> PgStagingStore::Requests(const std::string& channel_id) {
  ASSIGN_OR_RETURN(auto r, pool_->Exec("SELECT version_id FROM icestream_table_requests WHERE "
                                       "channel_id = $1 ORDER BY version_id",
                                       {channel_id}));
  std::vector<std::string> out;
  for (size_t i = 0; i < r.rows(); ++i) out.push_back(r.text(i, 0));
  return out;
}

Status PgStagingStore::DoneRequest(const std::string& channel_id, const std::string& version_id) {
  return pool_
      ->Exec("DELETE FROM icestream_table_requests WHERE channel_id = $1 AND version_id = $2",
             {channel_id, version_id})
      .status();
}

}  // namespace icestream::scaleout
