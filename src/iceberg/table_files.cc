// Snapshot file trees (Iceberg spec "Scan Planning").
#include "iceberg/table_files.h"

#include <nlohmann/json.hpp>

#include "iceberg/manifest_avro.h"

namespace icestream::iceberg {

Result<std::vector<ManifestFile>> SnapshotManifests(const FileIO& io, const Snapshot& snapshot) {
  if (!snapshot.manifest_list.empty()) {
    ASSIGN_OR_RETURN(std::string bytes, io.Read(snapshot.manifest_list));
    auto list = ReadManifestList(bytes);
    if (!list.ok()) return list.status().WithContext("manifest list " + snapshot.manifest_list);
    return list;
  }
  std::vector<ManifestFile> out;
  for (const auto& path : snapshot.manifests) {
    ManifestFile mf;
    mf.manifest_path = path;
    mf.sequence_number = 0;
    mf.min_sequence_number = 0;
    mf.added_snapshot_id = snapshot.snapshot_id;
    out.push_back(std::move(mf));
  }
  return out;
}

Result<std::vector<ManifestEntry>> LiveEntries(const FileIO& io, const Snapshot& snapshot) {
  ASSIGN_OR_RETURN(auto manifests, SnapshotManifests(io, snapshot));
  std::vector<ManifestEntry> out;
  for (const auto& mf : manifests) {
    ASSIGN_OR_RETURN(std::string bytes, io.Read(mf.manifest_path));
    auto contents = ReadManifest(bytes, &mf);
    if (!contents.ok()) return contents.status().WithContext("manifest " + mf.manifest_path);
    for (auto& e : contents->entries) {
      if (e.live()) out.push_back(std::move(e));
    }
  }
  return out;
}

Result<ReachableFiles> CollectReachableFiles(const FileIO& io, const TableMetadata& metadata,
                                             const std::set<int64_t>& snapshot_ids,
                                             const std::set<std::string>& skip_manifests,
                                             bool include_table_files) {
  ReachableFiles r;
  for (const auto& s : metadata.snapshots) {
    if (!snapshot_ids.count(s.snapshot_id)) continue;
    if (!s.manifest_list.empty()) r.manifest_lists.insert(s.manifest_list);
    ASSIGN_OR_RETURN(auto manifests, SnapshotManifests(io, s));
    for (const auto& mf : manifests) {
      if (!r.manifests.insert(mf.manifest_path).second || skip_manifests.count(mf.manifest_path)) continue;
      ASSIGN_OR_RETURN(std::string bytes, io.Read(mf.manifest_path));
      auto contents = ReadManifest(bytes, &mf);
      if (!contents.ok()) return contents.status().WithContext("manifest " + mf.manifest_path);
      for (const auto& e : contents->entries) {
        if (e.live()) r.content_files.insert(e.data_file.file_path);
      }
    }
  }
  if (include_table_files) {
    for (const auto* files : {&metadata.statistics, &metadata.partition_statistics}) {
      for (const auto& f : *files) {
        auto j = nlohmann::json::parse(f.json, nullptr, false);
        if (j.is_object() && j.contains("statistics-path") && j["statistics-path"].is_string()) {
          r.other.insert(j["statistics-path"].get<std::string>());
        }
      }
    }
    for (const auto& e : metadata.metadata_log) r.other.insert(e.metadata_file);
  }
  return r;
}

}  // namespace icestream::iceberg
