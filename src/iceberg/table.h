// Table: the writer's handle on one Iceberg table — fast appends, file replacement
// (compaction), snapshot expiry and orphan-file listing, each committed through a
// Catalog with optimistic concurrency (Iceberg spec "Optimistic Concurrency", "Commit
// Conflict Resolution and Retry"; formats.md §C.11).
//
// Commit cost does not grow with the table: an append writes one manifest for the new
// files and a manifest list that reuses the parent's manifests as they are; small
// manifests are merged (bin-packed up to a target size) once there are many of them,
// as Iceberg Java's merge-append does. On a lost race (kConflict from the catalog)
// the commit reloads the table, re-validates and retries with a fresh sequence number,
// reusing the manifests it already wrote. Each operation's manifests are built by its own
// builder (fast_append.h, rewrite_files.h); the retries are one loop, table_commit.cc.
//
// Not thread-safe: one Table object per writer thread. Several Table objects (threads,
// processes) may commit to the same table concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "iceberg/catalog.h"
#include "iceberg/file_io.h"
#include "iceberg/manifest.h"
#include "iceberg/manifest_avro.h"
#include "iceberg/table_options.h"

namespace icestream::iceberg {

class SnapshotUpdate;

struct CommitResult {
  int64_t snapshot_id = 0;
  int64_t sequence_number = 0;
  std::string metadata_location;
  int attempts = 0;
  int manifests_created = 0;
  int manifests_kept = 0;
  int manifests_replaced = 0;
};

struct ExpireOptions {
  // Snapshots older than this (timestamp-ms) may go ...
  int64_t older_than_ms = 0;
  // ... but the newest `retain_last` snapshots of every branch stay, as do the
  // snapshots refs point at.
  int retain_last = 1;
  // Snapshots that stay whatever their age (e.g. the one a writer's checkpoint is in).
  std::set<int64_t> keep;
  // Delete the files only expired snapshots referenced.
  bool delete_files = true;
};

struct ExpireResult {
  std::vector<int64_t> expired_snapshot_ids;
  int64_t deleted_content_files = 0;
  int64_t deleted_manifests = 0;
  int64_t deleted_manifest_lists = 0;
};

// A condition a commit must meet on the table version it builds on, checked before every
// attempt (the first, and each retry after a lost race re-reads the table): e.g. "the
// checkpoints in the table are still below the rows I add". A non-OK status stops the
// commit; nothing of it stays behind and the status is returned as is.
using CommitCheck = std::function<Status(const TableMetadata& current)>;

// Names new data files as Table::NewDataFileLocation does, from a copy of what it needs
// (the data directory and the default partition spec).
struct DataFileLocator {
  std::string dir;
  PartitionSpec spec;
  std::string Location(const PartitionTuple& partition, const std::string& file_name) const;
};

class Table {
 public:
  // Loads the table's current metadata. `catalog`, `io` and `clock` must outlive it.
  static Result<std::unique_ptr<Table>> Load(Catalog* catalog, const FileIO* io, TableIdentifier id,
                                             const Clock* clock, TableOptions options = {});

  const TableIdentifier& id() const { return id_; }
  const TableMetadata& metadata() const { return metadata_; }
  const std::string& metadata_location() const { return metadata_location_; }
  Status Refresh();

  // Every later commit of this handle (appends, replacements, expiry) carries `fence`,
  // checked in the catalog's transaction with the pointer swap (catalog_store.h); a
  // commit the fence refuses changes nothing and returns the fence's status. Null (the
  // default) commits unfenced. `fence` must outlive its use here.
  void SetFence(const CommitFence* fence) { fence_ = fence; }

  // "<data dir>/<partition path>/<file_name>" where data dir is write.data.path or
  // <location>/data.
  std::string NewDataFileLocation(const PartitionTuple& partition,
                                  const std::string& file_name) const;
  // The same naming as a value of its own, for a writer that names files while the handle
  // may be refreshed on another thread.
  DataFileLocator Locator() const;

  // Commits the files as a new "append" snapshot on main. `summary_extra` entries are
  // added to the snapshot summary (e.g. per-shard checkpoints). Files must use the
  // default partition spec (their spec_id is set) and have unique paths.
  // Errors: kInvalidArgument (bad files), kConflict (still losing after max_attempts),
  // kUnknownOutcome (the catalog could not tell; files are kept), others from I/O.
  Result<CommitResult> AppendFiles(const std::vector<DataFile>& files,
                                   const std::map<std::string, std::string>& summary_extra = {},
                                   const CommitCheck& check = nullptr);

  // Replaces `deleted` (by path; they must be live in the current snapshot) with
  // `added` in one "replace" snapshot: the caller promises the rows are the same
  // (compaction). Errors: kConflict when a file to delete is no longer live (another
  // commit removed it: re-plan), plus AppendFiles' errors.
  Result<CommitResult> ReplaceFiles(const std::vector<std::string>& deleted,
                                    const std::vector<DataFile>& added,
                                    const std::map<std::string, std::string>& summary_extra = {},
                                    const CommitCheck& check = nullptr);

  // Removes old snapshots from the metadata, then deletes the files only they
  // referenced (spec "Snapshot Retention Policy").
  Result<ExpireResult> ExpireSnapshots(const ExpireOptions& options);

  // Objects under the table location that no snapshot, metadata file or statistics
  // file references and that are older than `older_than_ms` (younger ones may belong
  // to a commit in flight).
  Result<std::vector<FileInfo>> ListOrphanFiles(int64_t older_than_ms);

 private:
  Table(Catalog* catalog, const FileIO* io, TableIdentifier id, const Clock* clock,
        TableOptions options);
  // The retry loop every snapshot-producing operation commits through (table_commit.cc):
  // `update` builds each attempt's manifests on the metadata the attempt starts from.
  Result<CommitResult> Commit(const SnapshotUpdate& update, const std::vector<DataFile>& added,
                              const std::map<std::string, std::string>& summary_extra,
                              const CommitCheck& check);
  int64_t NewSnapshotId() const;
  Result<LoadedTable> CommitToCatalog(const std::vector<TableRequirement>& requirements,
                                      const std::vector<TableUpdate>& updates);
  std::string MetadataDir() const;
  // One expiry attempt on the current metadata_ (kConflict when a ref moved meanwhile).
  Result<ExpireResult> ExpireSnapshotsOnce(const ExpireOptions& options);

  Catalog* catalog_;
  const FileIO* io_;
  TableIdentifier id_;
  const Clock* clock_;
  TableOptions options_;
  TableMetadata metadata_;
  std::string metadata_location_;
  const CommitFence* fence_ = nullptr;
};

}  // namespace icestream::iceberg
