// Snapshot summaries of the commits of Table (spec Appendix F; Java's SnapshotSummary).
#include "iceberg/snapshot_summary.h"

namespace icestream::iceberg {

namespace {

// The parent's value plus the change, or absent when the parent does not carry it.
void Total(std::map<std::string, std::string>* summary, const Snapshot* parent, const char* key,
           int64_t delta) {
  int64_t base = 0;
  if (parent) {
    auto it = parent->summary.find(key);
    if (it == parent->summary.end()) return;
    try {
      base = std::stoll(it->second);
    } catch (...) {
      return;
    }
  }
  (*summary)[key] = std::to_string(base + delta);
}

}  // namespace

void FileStats::Add(const DataFile& f) {
  size += f.file_size_in_bytes;
  switch (f.content) {
    case FileContent::kData:
      ++data_files;
      records += f.record_count;
      break;
    case FileContent::kPositionDeletes:
      ++delete_files;
      position_deletes += f.record_count;
      break;
    case FileContent::kEqualityDeletes:
      ++delete_files;
      equality_deletes += f.record_count;
      break;
  }
}

FileStats FileStats::Of(const std::vector<DataFile>& files) {
  FileStats stats;
  for (const auto& f : files) stats.Add(f);
  return stats;
}

std::map<std::string, std::string> SnapshotSummary(const std::map<std::string, std::string>& extra,
                                                   const FileStats& added,
                                                   const SnapshotChanges& changes,
                                                   const Snapshot* parent) {
  std::map<std::string, std::string> s = extra;
  const FileStats& deleted = changes.deleted;
  s[summary::kOperation] = changes.operation;
  if (added.data_files) s[summary::kAddedDataFiles] = std::to_string(added.data_files);
  if (added.delete_files) s[summary::kAddedDeleteFiles] = std::to_string(added.delete_files);
  if (added.records) s[summary::kAddedRecords] = std::to_string(added.records);
  s[summary::kAddedFilesSize] = std::to_string(added.size);
  for (const auto& [key, value] : changes.summary) s[key] = value;
  s[summary::kChangedPartitionCount] = std::to_string(changes.changed_partitions.size());
  Total(&s, parent, summary::kTotalDataFiles, added.data_files - deleted.data_files);
  Total(&s, parent, summary::kTotalDeleteFiles, added.delete_files - deleted.delete_files);
  Total(&s, parent, summary::kTotalRecords, added.records - deleted.records);
  Total(&s, parent, summary::kTotalFilesSize, added.size - deleted.size);
  Total(&s, parent, summary::kTotalPositionDeletes,
        added.position_deletes - deleted.position_deletes);
  Total(&s, parent, summary::kTotalEqualityDeletes,
        added.equality_deletes - deleted.equality_deletes);
  s[summary::kManifestsCreated] = std::to_string(changes.manifests_created);
  s[summary::kManifestsKept] = std::to_string(changes.manifests_kept);
  s[summary::kManifestsReplaced] = std::to_string(changes.manifests_replaced);
  return s;
}

}  // namespace icestream::iceberg
