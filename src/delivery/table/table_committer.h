// TableCommitter: one Iceberg append per table-channel batch, exactly once per shard. The
// append's snapshot summary carries every shard's checkpoint (icestream.checkpoint.<shard>
// = the last committed record's sequence number; the map is copied forward whole), so the
// summary is the checkpoint.
//
// Exactly once, on every attempt: the check that runs against each table version the
// append builds on (the first and every retry after a lost race) refuses a batch the table
// already holds (answered as "already in": nothing to do), one it holds part of, or a
// table changed outside the channel; so no range is committed twice, even when a lost
// reply is retried. A Fence (null on one server; a scale-out worker's lease epoch) is
// checked in the same catalog transaction as the pointer swap: a fenced committer's
// append matches nothing and changes nothing.
//
// Runs on the batch thread. Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "delivery/sink.h"
#include "delivery/table/table_owner.h"
#include "iceberg/catalog_store.h"
#include "iceberg/manifest.h"

namespace icestream::delivery::table {

struct CommitOutcome {
  bool already_in = false;  // the table held the whole batch already
  iceberg::CommitResult result;
};

class TableCommitter {
 public:
  TableCommitter(const ChannelConfig& config, SinkEnv env)
      : config_(config), env_(std::move(env)) {}

  // Commits carry `fence` from now on (must outlive its use); null commits unfenced.
  void SetFence(const iceberg::CommitFence* fence) { fence_ = fence; }
  const iceberg::CommitFence* fence() const { return fence_; }

  // Appends `files` (written for `batch`) with the batch's checkpoints. Errors:
  // kUnavailable when the outcome is unknown (the batch is checked against the table and
  // replayed; the files are kept: the commit may reference them); kNotFound when the
  // table is gone; kInvalidArgument when another writer commits as this channel;
  // kFailedPrecondition when fenced; others from the catalog. *keep_files is set when
  // the files must stay (the commit may reference them) even though it failed.
  Result<CommitOutcome> Commit(TableOwner* owner, const DeliveryBatch& batch,
                               const std::vector<iceberg::DataFile>& files, bool* keep_files);

 private:
  const ChannelConfig& config_;
  SinkEnv env_;
  const iceberg::CommitFence* fence_ = nullptr;
};

}  // namespace icestream::delivery::table
