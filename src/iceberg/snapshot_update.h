// The builders of Table's snapshot-producing operations (fast append, file replacement):
// each turns the parent snapshot's manifests into the manifest list of one commit attempt;
// Table::Commit (table_commit.cc) owns the retries around them. Modelled on the shape of
// Iceberg's SnapshotUpdate (Java's SnapshotProducer, iceberg-cpp's update/).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "iceberg/file_io.h"
#include "iceberg/manifest.h"
#include "iceberg/snapshot_summary.h"
#include "iceberg/table_metadata.h"
#include "iceberg/table_options.h"

namespace icestream::iceberg {

// The files one commit writes, and which of them to delete when it does not land:
// manifests are "<metadata dir>/<commit uuid>-m<n>.avro" with n counting across all the
// commit's attempts, manifest lists "<metadata dir>/snap-<snapshot id>-<attempt>-<uuid>.avro".
// Files written before KeepForAllAttempts() (the added files' manifests) are reused by
// every attempt; the others belong to the current attempt. Not thread-safe.
class CommitFiles {
 public:
  // `io` must outlive this object.
  CommitFiles(const FileIO* io, std::string commit_uuid);

  const FileIO& io() const { return *io_; }
  // Starts an attempt writing under `metadata_dir`; the previous attempt's files are
  // forgotten (the caller deleted them, or they are part of the table now).
  void StartAttempt(std::string metadata_dir);
  std::string NextManifestPath();
  std::string ManifestListPath(int64_t snapshot_id, int attempt) const;
  // Writes one file of the current attempt; recorded only once written.
  Status Write(const std::string& location, const std::string& bytes);
  // The files written so far are reused by every attempt.
  void KeepForAllAttempts();
  // Deletes the current attempt's files (after a lost race).
  void DeleteAttemptFiles();
  // Deletes every file of the commit (it failed for good and cannot have landed).
  void DeleteAll();

 private:
  const FileIO* io_;
  std::string commit_uuid_;
  std::string metadata_dir_;
  int manifest_counter_ = 0;
  std::vector<std::string> shared_;
  std::vector<std::string> attempt_;
};

// What a builder works on in one attempt.
struct UpdateContext {
  const TableMetadata* base = nullptr;  // the table version the attempt builds on
  int64_t snapshot_id = 0;              // the new snapshot's
  const TableOptions* options = nullptr;
  CommitFiles* files = nullptr;  // where rewritten manifests go
  std::string table_name;        // for error messages
};

// One snapshot-producing operation. Immutable: Apply is called once per attempt, each
// time on a fresh version of the table, and keeps nothing between calls.
class SnapshotUpdate {
 public:
  virtual ~SnapshotUpdate() = default;
  // Checks the operation itself before anything is written (kInvalidArgument).
  virtual Status Validate() const { return Status::OK(); }
  // The new snapshot's manifests other than the added files' own, built from
  // `parent_manifests` (the current snapshot's manifest list; empty for the first
  // snapshot), with the summary fields they imply. Files it writes go through
  // ctx.files as the attempt's own; on error they stay there for the caller to delete.
  virtual Result<SnapshotChanges> Apply(
      const UpdateContext& ctx, const std::vector<ManifestFile>& parent_manifests) const = 0;
};

// A manifest-list entry with only DELETED entries of earlier snapshots: nothing in it is
// live any more, a new snapshot drops it.
inline bool HoldsOnlyEarlierDeletes(const ManifestFile& mf) {
  return mf.live_files_count() == 0 && mf.deleted_files_count > 0;
}

// The entries of one manifest, decoded with what its manifest-list entry says.
Result<std::vector<ManifestEntry>> ReadManifestEntries(const FileIO& io, const ManifestFile& mf);

// Writes `entries` (from manifests of `like`'s spec and content) as one new manifest of
// the snapshot: live entries become EXISTING, keeping their sequence numbers; live
// entries whose path is in *to_delete become DELETED by this snapshot, leave *to_delete
// and count in changes->deleted and changes->changed_partitions; DELETED entries of
// earlier snapshots are dropped. The new manifest is appended to changes->manifests;
// nothing is written when no entry is left. kCorruption when `like` names a spec the
// table does not have.
Status RewriteManifest(const UpdateContext& ctx, const ManifestFile& like,
                       std::vector<ManifestEntry> entries, std::set<std::string>* to_delete,
                       SnapshotChanges* changes);

// The manifests of a commit's added files, one per (partition spec, data or deletes),
// written through `files` with ADDED entries of `snapshot_id`. `schema` is the table
// schema the commit started from; every file's spec must be in `metadata`.
Result<std::vector<ManifestFile>> WriteAddedManifests(
    const Schema& schema, const TableMetadata& metadata, const std::vector<DataFile>& added,
    int64_t snapshot_id, const ManifestWriteOptions& options, CommitFiles* files);

}  // namespace icestream::iceberg
