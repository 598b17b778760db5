// TableUpkeep: a table channel's maintenance of its table — inline compaction (merging the
// small files of a partition, compactor.h), snapshot expiry and removal of orphan files —
// on its own schedule: after each commit, and while the stream is quiet, so a table whose
// stream stops keeps neither its small files, nor its old snapshots, nor its orphans.
//
// It runs where the channel's appends run (the sink's delivery job, never beside a batch:
// the engine offers upkeep only when no batch is in flight; in a pool, after the control
// unit's staged commit, beside the shards' writers) and under the same fence as the
// committer, so it never races the channel's own appends, and a fenced worker's upkeep
// changes nothing.
//
// Not thread-safe: called under the sink's lock (which a Run may let go while it merges
// files); the counters are atomics, read by status.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "delivery/sink.h"
#include "delivery/table/compactor.h"
#include "delivery/table/schema_follower.h"
#include "delivery/table/table_owner.h"
#include "format/parquet/writer_options.h"

namespace icestream::delivery::table {

class TableUpkeep {
 public:
  TableUpkeep(const ChannelConfig& config, TableSinkOptions options, SinkEnv env);

  // The channel's append committed `files` as `snapshot`.
  void Appended(const iceberg::TableMetadata& after, int64_t snapshot,
                const std::vector<iceberg::DataFile>& files);
  // Forgets what it knows of the table's files (the table was reloaded).
  void Invalidate() { compactor_->Invalidate(); }
  // When upkeep is next due (epoch ms): the next expiry or orphan scan, or — while the
  // compactor knows of small files — a cold partition's merge.
  int64_t NextDueMs() const;
  // Compaction for at most the budget, then expiry and orphan removal when each is due.
  // Errors are logged and counted, not returned: upkeep never fails a batch.
  // `unlocked` (optional): the sink's lock, let go while compaction merges files
  // (Compactor::Run); a Run entered meanwhile (another job's commit) does nothing.
  void Run(TableOwner* owner, const WriteTarget& target,
           const format::parquet::WriterOptions& writer,
           std::unique_lock<std::mutex>* unlocked = nullptr);

  // Files that no snapshot references yet but that must stay (a pool's staged files,
  // staging.h): asked before every orphan scan; a scan is skipped when it fails.
  void SetKept(std::function<Result<std::set<std::string>>()> kept) { kept_ = std::move(kept); }

  const CompactionStats& compaction() const { return compactor_->stats(); }
  int64_t snapshots_expired() const { return snapshots_expired_.load(); }
  int64_t orphans_removed() const { return orphans_removed_.load(); }
  int64_t runs() const { return runs_.load(); }

 private:
  void ExpireSnapshots(TableOwner* owner);
  void RemoveOrphans(TableOwner* owner, const iceberg::FileIO* io);

  const ChannelConfig& config_;
  const TableSinkOptions options_;
  SinkEnv env_;
  std::unique_ptr<Compactor> compactor_;
  std::function<Result<std::set<std::string>>()> kept_;
  int64_t last_expiry_ms_ = 0;
  int64_t last_orphan_scan_ms_ = 0;
  int64_t last_compaction_ms_ = 0;
  bool running_ = false;  // a Run is under way (it may have let the sink's lock go)
  std::atomic<int64_t> snapshots_expired_{0};
  std::atomic<int64_t> orphans_removed_{0};
  std::atomic<int64_t> runs_{0};
};

}  // namespace icestream::delivery::table
