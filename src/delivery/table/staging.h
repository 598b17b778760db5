// Staging: how one table channel is delivered by many processes at once (a scale-out pool,
// docs/scale-out.md). Every shard is converted where its lease is held: that process reads
// the shard's batch, writes its Parquet files and its DLQ lines, and *stages* the files —
// a row naming the shard's range and the files, written under the shard's lease (owner,
// epoch), so a fenced process stages nothing. The first writer with a valid row creates
// the table (the catalog lets one creation win). The holder of the channel's control unit
// is the table's owner: it evolves the table (shard writers ask it to, through a request
// row) and commits what is staged — one Iceberg append for the staged batches of
// every shard, whose snapshot summary moves each shard's checkpoint to the end of its
// last staged range, and whose catalog transaction locks the control lease and deletes
// exactly the rows it commits. So a staged batch is in the table once: a row is deleted
// by the commit that makes it visible, and a replay of a range that was staged already
// (the same plan offered again after a crash) is refused by the row's key, or — when its
// commit landed first — recognised by the table's checkpoints and dropped.
//
// On one server there is no staging: a batch spans every shard and commits itself.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "delivery/position.h"
#include "iceberg/catalog_store.h"
#include "iceberg/manifest.h"

namespace icestream::delivery::table {

// One shard batch's files, waiting for the table's commit.
struct StagedBatch {
  std::string shard;
  Position after;
  std::string last_sequence;  // inclusive
  uint64_t rows = 0;          // rows in `files`
  std::vector<iceberg::DataFile> files;
  Position end() const { return Position{last_sequence, std::nullopt}; }
};

class StagingStore {
 public:
  virtual ~StagingStore() = default;

  // Stages `batch` under the shard's lease. False when a batch starting at the same
  // position is staged already (a replay of it): nothing changes. kFailedPrecondition
  // when this process no longer holds the shard (fenced).
  virtual Result<bool> Stage(const std::string& channel_id, const StagedBatch& batch) = 0;
  // Every staged batch of the channel, by shard and position.
  virtual Result<std::vector<StagedBatch>> Staged(const std::string& channel_id) = 0;
  // The fence of the commit that makes `batches` visible: in the catalog transaction of
  // the pointer swap it locks the channel's control lease (owner, epoch) and deletes the
  // batches' rows, and fails (kFailedPrecondition) when fenced or when a row is gone, so
  // the commit changes nothing then. Must outlive the commit.
  virtual std::unique_ptr<iceberg::CommitFence> CommitFence(const std::string& channel_id,
                                                            std::vector<StagedBatch> batches) = 0;
  // Deletes the rows of batches the table holds already, under the control lease.
  virtual Status Drop(const std::string& channel_id, const std::vector<StagedBatch>& batches) = 0;

  // Calls `staged` soon after any process stages a batch of the channel (and whenever
  // one may have been missed), until the returned handle is released, so the commit need
  // not wait for its next look. `staged` must be quick; it may run on another thread.
  // Null (this default): no calls — the commit looks on its own schedule only.
  virtual std::shared_ptr<void> Watch(const std::string& channel_id, std::function<void()> staged) {
    (void)channel_id;
    (void)staged;
    return nullptr;
  }

  // A shard writer asks the table's owner to evolve the table to the registry version
  // `version_id` (or to create it from that version, when there is none). Idempotent.
  virtual Status Request(const std::string& channel_id, const std::string& version_id) = 0;
  virtual Result<std::vector<std::string>> Requests(const std::string& channel_id) = 0;
  virtual Status DoneRequest(const std::string& channel_id, const std::string& version_id) = 0;
};

// A staged batch's files as text (a JSON array: every manifest field a data file of a
// streaming table has, bounds in base64) and back. Partition values are ints (the hour).
std::string DataFilesToJson(const std::vector<iceberg::DataFile>& files);
Result<std::vector<iceberg::DataFile>> DataFilesFromJson(std::string_view text);

}  // namespace icestream::delivery::table
