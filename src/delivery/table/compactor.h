// Compactor: a table channel's inline compaction (issue 10). It keeps an index of the
// table's live data files (updated by the channel's own commits, reloaded from the
// manifests only when another writer committed), plans merges (compaction_planner.h)
// and carries them out: the rows of the input files are read back with the Parquet
// reader, written with the table's current schema (older files' columns map by field
// id) into new files of the partition, and swapped in by one Iceberg `replace` commit.
//
// It runs on the channel's delivery thread, between batches, or after a pool's staged
// commit (its merges then run without the sink's lock, its commits with it), so
// compaction commits never race the channel's appends; a commit that loses to another writer (the
// inputs are no longer live) is dropped and planned again. Output files are named
// `<channel-id>-m-<attempt>-<n>.parquet`: a crash before the replace leaves them
// unreferenced, for the orphan cleanup.
//
// Not thread-safe (one delivery thread); stats() may be read from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "delivery/table/compaction_planner.h"
#include "delivery/table/table_layout.h"
#include "format/parquet/writer_options.h"
#include "iceberg/file_io.h"
#include "iceberg/table.h"

namespace icestream::delivery::table {

struct CompactionStats {
  std::atomic<int64_t> bytes_appended{0};      // data file bytes the channel's appends wrote
  std::atomic<int64_t> bytes_rewritten{0};     // data file bytes compaction wrote
  std::atomic<int64_t> files_merged{0};        // input files replaced
  std::atomic<int64_t> files_copied_as_is{0};  // of those, files whose row groups were copied whole
  std::atomic<int64_t> files_written{0};
  std::atomic<int64_t> commits{0};
  std::atomic<int64_t> conflicts{0};
  std::atomic<int64_t> live_files{0};
  std::atomic<int64_t> live_bytes{0};
  // (appended + rewritten) / appended; 1 before anything was compacted.
  double write_amplification() const;
};

class Compactor {
 public:
  Compactor(std::string channel_id, std::string channel_arn, CompactionOptions options,
            const Clock* clock, std::function<void(nlohmann::json)> log);

  // An append of the channel committed `files` as snapshot `snapshot` (parent `parent`).
  void Appended(const iceberg::TableMetadata& after, int64_t snapshot,
                const std::vector<iceberg::DataFile>& files);
  // Forgets the index (the table was reloaded or changed underneath).
  void Invalidate() { index_snapshot_ = -2; }

  // Plans and carries out merges for at most `budget_ms`. `layout` is the schema outputs
  // are written with; `check` runs before each replace commit (the table is still the
  // channel's). Errors are the table's or the store's; a lost commit is not an error.
  // `unlocked` (optional): the caller's lock on the table handle, let go while a task's
  // files are read and merged (that touches only the files and a copy of the table's
  // locations), so writers that need the handle are not held for the length of a merge;
  // it is held again for each replace commit and for everything else.
  Status Run(iceberg::Table* table, const iceberg::FileIO* io, const TableLayout& layout,
             const format::parquet::WriterOptions& writer, const iceberg::CommitCheck& check,
             int64_t budget_ms, std::unique_lock<std::mutex>* unlocked = nullptr);

  const CompactionStats& stats() const { return stats_; }

 private:
  Status LoadIndex(const iceberg::TableMetadata& m, const iceberg::FileIO* io);
  LiveFile Describe(const iceberg::DataFile& f, int64_t added_ms) const;
  void Count();
  Result<std::vector<iceberg::DataFile>> Merge(const iceberg::DataFileLocator& locator,
                                               const iceberg::FileIO* io, const TableLayout& layout,
                                               const format::parquet::WriterOptions& writer,
                                               const CompactionTask& task,
                                               std::vector<std::string>* written,
                                               int64_t* copied_as_is);

  const std::string channel_id_;
  const std::string channel_arn_;
  const CompactionOptions options_;
  const Clock* clock_;
  std::function<void(nlohmann::json)> log_;
  int64_t index_snapshot_ = -2;  // the snapshot the index describes (-2: none)
  std::map<std::string, LiveFile> index_;
  CompactionStats stats_;
};

}  // namespace icestream::delivery::table
