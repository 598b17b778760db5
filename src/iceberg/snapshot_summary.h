// The summary of a new snapshot: what its operation added and removed, the table totals
// carried over from the parent, and the manifest counts (Iceberg spec Appendix F,
// "Optional Snapshot Summary Fields").
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "iceberg/manifest.h"
#include "iceberg/snapshot.h"

namespace icestream::iceberg {

// Counts of content files by kind, as the summary reports them.
struct FileStats {
  int64_t data_files = 0;
  int64_t delete_files = 0;
  int64_t records = 0;  // rows of data files
  int64_t size = 0;     // bytes of all files
  int64_t position_deletes = 0;
  int64_t equality_deletes = 0;

  void Add(const DataFile& f);
  static FileStats Of(const std::vector<DataFile>& files);
};

// What one attempt of an operation puts into the new snapshot, as a builder
// (snapshot_update.h) reports it: the manifest list in order, the counts the summary
// reports, and the operation's own summary fields.
struct SnapshotChanges {
  const char* operation = operation::kAppend;
  std::vector<ManifestFile> manifests;
  int manifests_created = 0;
  int manifests_kept = 0;
  int manifests_replaced = 0;
  FileStats deleted;  // files this snapshot marks DELETED
  // "<spec id>/<partition path>" of every partition a file was added to or deleted from.
  std::set<std::string> changed_partitions;
  // Fields only this operation writes (e.g. replace's deleted-data-files, even when 0).
  std::map<std::string, std::string> summary;
};

// The summary of a snapshot with `changes`, adding the files of `added` on top of
// `parent` (null for the first snapshot). Entries of `extra` (e.g. per-shard
// checkpoints) come first; a standard field of the same name replaces them. A total is
// left out when the parent does not carry it (a table written by someone who does not
// keep totals).
std::map<std::string, std::string> SnapshotSummary(const std::map<std::string, std::string>& extra,
                                                   const FileStats& added,
                                                   const SnapshotChanges& changes,
                                                   const Snapshot* parent);

}  // namespace icestream::iceberg
