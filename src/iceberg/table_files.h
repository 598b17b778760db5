// Walking a table's file tree: snapshot -> manifest list -> manifests -> data and
// delete files (Iceberg spec "Overview", "Scan Planning"). Used by readers, snapshot
// expiry, orphan-file listing and purge.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "iceberg/file_io.h"
#include "iceberg/manifest.h"
#include "iceberg/table_metadata.h"

namespace icestream::iceberg {

// The manifests of a snapshot: its manifest list, or a v1 snapshot's inline list
// (then only manifest_path is known). Errors from reading or decoding the list.
Result<std::vector<ManifestFile>> SnapshotManifests(const FileIO& io, const Snapshot& snapshot);

// The live entries (ADDED and EXISTING) of every manifest of the snapshot, data and
// delete files alike, with inherited snapshot ids and sequence numbers filled in.
Result<std::vector<ManifestEntry>> LiveEntries(const FileIO& io, const Snapshot& snapshot);

struct ReachableFiles {
  std::set<std::string> manifest_lists;
  std::set<std::string> manifests;
  std::set<std::string> content_files;  // data and delete files
  std::set<std::string> other;          // statistics files, metadata files

  bool Contains(const std::string& location) const {
    return manifest_lists.count(location) || manifests.count(location) || content_files.count(location) ||
           other.count(location);
  }
};

// Files the given snapshots reference. Data files of DELETED entries are left out
// (they are not part of those snapshots). `skip_manifests` are not read (already
// accounted for by the caller). Statistics files of the metadata are included when
// `include_table_files` is set, with the metadata-log files.
Result<ReachableFiles> CollectReachableFiles(const FileIO& io, const TableMetadata& metadata,
                                             const std::set<int64_t>& snapshot_ids,
                                             const std::set<std::string>& skip_manifests = {},
                                             bool include_table_files = true);

}  // namespace icestream::iceberg
