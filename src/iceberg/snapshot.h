// Snapshots, snapshot references and the two history logs of table metadata (Iceberg
// spec "Snapshots", "Snapshot References", "Table Metadata Fields").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace icestream::iceberg {

// Snapshot summary keys (spec Appendix F, "Optional Snapshot Summary Fields").
namespace summary {
inline constexpr const char* kOperation = "operation";
inline constexpr const char* kAddedDataFiles = "added-data-files";
inline constexpr const char* kDeletedDataFiles = "deleted-data-files";
inline constexpr const char* kTotalDataFiles = "total-data-files";
inline constexpr const char* kAddedDeleteFiles = "added-delete-files";
inline constexpr const char* kRemovedDeleteFiles = "removed-delete-files";
inline constexpr const char* kTotalDeleteFiles = "total-delete-files";
inline constexpr const char* kAddedRecords = "added-records";
inline constexpr const char* kDeletedRecords = "deleted-records";
inline constexpr const char* kTotalRecords = "total-records";
inline constexpr const char* kAddedFilesSize = "added-files-size";
inline constexpr const char* kRemovedFilesSize = "removed-files-size";
inline constexpr const char* kTotalFilesSize = "total-files-size";
inline constexpr const char* kTotalPositionDeletes = "total-position-deletes";
inline constexpr const char* kTotalEqualityDeletes = "total-equality-deletes";
inline constexpr const char* kChangedPartitionCount = "changed-partition-count";
inline constexpr const char* kManifestsCreated = "manifests-created";
inline constexpr const char* kManifestsKept = "manifests-kept";
inline constexpr const char* kManifestsReplaced = "manifests-replaced";
inline constexpr const char* kEntriesProcessed = "entries-processed";
}  // namespace summary

// Values of summary["operation"].
namespace operation {
inline constexpr const char* kAppend = "append";
inline constexpr const char* kReplace = "replace";
inline constexpr const char* kOverwrite = "overwrite";
inline constexpr const char* kDelete = "delete";
}  // namespace operation

struct Snapshot {
  int64_t snapshot_id = 0;
  std::optional<int64_t> parent_snapshot_id;
  int64_t sequence_number = 0;  // 0 for v1 snapshots
  int64_t timestamp_ms = 0;
  std::string manifest_list;
  // v1 only: manifest paths listed inline instead of a manifest list.
  std::vector<std::string> manifests;
  std::map<std::string, std::string> summary;  // includes "operation"
  std::optional<int32_t> schema_id;

  std::string operation() const {
    auto it = summary.find(summary::kOperation);
    return it == summary.end() ? std::string() : it->second;
  }
  bool operator==(const Snapshot& other) const = default;
};

enum class RefType : uint8_t { kBranch, kTag };

struct SnapshotRef {
  int64_t snapshot_id = 0;
  RefType type = RefType::kBranch;
  std::optional<int32_t> min_snapshots_to_keep;  // branches
  std::optional<int64_t> max_snapshot_age_ms;    // branches
  std::optional<int64_t> max_ref_age_ms;

  bool operator==(const SnapshotRef& other) const = default;
};

inline constexpr const char* kMainBranch = "main";

struct SnapshotLogEntry {
  int64_t timestamp_ms = 0;
  int64_t snapshot_id = 0;
  bool operator==(const SnapshotLogEntry& other) const = default;
};

struct MetadataLogEntry {
  int64_t timestamp_ms = 0;
  std::string metadata_file;
  bool operator==(const MetadataLogEntry& other) const = default;
};

}  // namespace icestream::iceberg
