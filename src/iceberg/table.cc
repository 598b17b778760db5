// Table handle: loading and refreshing, file naming, snapshot expiry and orphan listing
// (Iceberg spec "Snapshot Retention Policy"; formats.md §C.7). Commits of new snapshots
// are in table_commit.cc.
#include "iceberg/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/crypto.h"
#include "iceberg/table_files.h"

namespace icestream::iceberg {

Table::Table(Catalog* catalog, const FileIO* io, TableIdentifier id, const Clock* clock,
             TableOptions options)
    : catalog_(catalog), io_(io), id_(std::move(id)), clock_(clock), options_(options) {}

Result<std::unique_ptr<Table>> Table::Load(Catalog* catalog, const FileIO* io, TableIdentifier id,
                                           const Clock* clock, TableOptions options) {
  std::unique_ptr<Table> t(new Table(catalog, io, std::move(id), clock, options));
  RETURN_IF_ERROR(t->Refresh());
  return t;
}

Status Table::Refresh() {
  ASSIGN_OR_RETURN(LoadedTable t, catalog_->LoadTable(id_));
  if (!metadata_.table_uuid.empty() && t.metadata.table_uuid != metadata_.table_uuid) {
    // Spec: "Implementations must throw an exception if a table's UUID does not match
    // the expected UUID after refreshing metadata."
    return FailedPrecondition("table " + TableName(id_) + " was replaced: uuid " +
                              metadata_.table_uuid + " is now " + t.metadata.table_uuid);
  }
  metadata_ = std::move(t.metadata);
  metadata_location_ = std::move(t.metadata_location);
  return Status::OK();
}

std::string Table::MetadataDir() const {
  auto it = metadata_.properties.find("write.metadata.path");
  if (it != metadata_.properties.end() && !it->second.empty()) return it->second;
  return metadata_.location + "/metadata";
}

std::string DataFileLocator::Location(const PartitionTuple& partition,
                                      const std::string& file_name) const {
  if (spec.is_unpartitioned()) return dir + "/" + file_name;
  return dir + "/" + PartitionPath(spec, partition) + "/" + file_name;
}

DataFileLocator Table::Locator() const {
  DataFileLocator l;
  l.dir = metadata_.location + "/data";
  if (auto it = metadata_.properties.find("write.data.path");
      it != metadata_.properties.end() && !it->second.empty()) {
    l.dir = it->second;
  }
  if (const PartitionSpec* spec = metadata_.DefaultSpec()) l.spec = *spec;
  l.spec.spec_id = metadata_.default_spec_id;
  return l;
}

std::string Table::NewDataFileLocation(const PartitionTuple& partition,
                                       const std::string& file_name) const {
  return Locator().Location(partition, file_name);
}

int64_t Table::NewSnapshotId() const {
  while (true) {
    auto id = static_cast<int64_t>(crypto::RandomU64() & 0x7FFFFFFFFFFFFFFFULL);
    if (id != 0 && metadata_.SnapshotById(id) == nullptr) return id;
  }
}

Result<LoadedTable> Table::CommitToCatalog(const std::vector<TableRequirement>& requirements,
                                           const std::vector<TableUpdate>& updates) {
  if (fence_ != nullptr) return catalog_->CommitTableFenced(id_, requirements, updates, *fence_);
  return catalog_->CommitTable(id_, requirements, updates);
}

Result<ExpireResult> Table::ExpireSnapshots(const ExpireOptions& options) {
  // The snapshots to expire are chosen from one version of the metadata; the commit
  // asserts that no ref moved since (a rollback or a new commit could otherwise point a
  // ref at a snapshot being removed), and a conflict chooses again on fresh metadata.
  for (int attempt = 1;; ++attempt) {
    RETURN_IF_ERROR(Refresh());
    auto r = ExpireSnapshotsOnce(options);
    if (r.ok() || r.status().code() != StatusCode::kConflict || attempt >= options_.max_attempts)
      return r;
  }
}

Result<ExpireResult> Table::ExpireSnapshotsOnce(const ExpireOptions& options) {
  const TableMetadata before = metadata_;
  std::set<int64_t> retain;
  for (const auto& [name, ref] : before.refs) {
    retain.insert(ref.snapshot_id);
    if (ref.type != RefType::kBranch) continue;
    // Walk the branch's ancestry: the newest retain_last snapshots stay, and so does
    // any ancestor newer than the cutoff.
    int kept = 0;
    for (const Snapshot* s = before.SnapshotById(ref.snapshot_id); s != nullptr;
         s = s->parent_snapshot_id ? before.SnapshotById(*s->parent_snapshot_id) : nullptr) {
      if (kept < std::max(1, options.retain_last) || s->timestamp_ms >= options.older_than_ms)
        retain.insert(s->snapshot_id);
      ++kept;
    }
  }
  for (int64_t id : options.keep) retain.insert(id);
  ExpireResult result;
  std::set<int64_t> expired;
  for (const auto& s : before.snapshots) {
    if (!retain.count(s.snapshot_id) && s.timestamp_ms < options.older_than_ms) {
      expired.insert(s.snapshot_id);
      result.expired_snapshot_ids.push_back(s.snapshot_id);
    }
  }
  if (expired.empty()) return result;
  std::vector<TableRequirement> requirements = {requirement::AssertTableUuid{before.table_uuid}};
  for (const auto& [name, ref] : before.refs) {
    requirements.push_back(requirement::AssertRefSnapshotId{name, ref.snapshot_id});
  }
  auto committed = CommitToCatalog(
      requirements,
      {update::RemoveSnapshots{std::vector<int64_t>(expired.begin(), expired.end())}});
  if (!committed.ok()) return committed.status();
  metadata_ = std::move(committed->metadata);
  metadata_location_ = std::move(committed->metadata_location);
  if (!options.delete_files) return result;

  // What the remaining snapshots still need (read from the new metadata, which includes
  // snapshots committed meanwhile), and what the expired ones referenced.
  std::set<int64_t> remaining;
  for (const auto& s : metadata_.snapshots) remaining.insert(s.snapshot_id);
  ASSIGN_OR_RETURN(ReachableFiles keep,
                   CollectReachableFiles(*io_, metadata_, remaining, {}, false));
  ASSIGN_OR_RETURN(ReachableFiles gone,
                   CollectReachableFiles(*io_, before, expired, keep.manifests, false));
  for (const auto& f : gone.content_files) {
    if (keep.content_files.count(f)) continue;
    RETURN_IF_ERROR(io_->Delete(f));
    ++result.deleted_content_files;
  }
  for (const auto& f : gone.manifests) {
    if (keep.manifests.count(f)) continue;
    RETURN_IF_ERROR(io_->Delete(f));
    ++result.deleted_manifests;
  }
  for (const auto& f : gone.manifest_lists) {
    if (keep.manifest_lists.count(f)) continue;
    RETURN_IF_ERROR(io_->Delete(f));
    ++result.deleted_manifest_lists;
  }
  return result;
}

Result<std::vector<FileInfo>> Table::ListOrphanFiles(int64_t older_than_ms) {
  RETURN_IF_ERROR(Refresh());
  std::set<int64_t> all;
  for (const auto& s : metadata_.snapshots) all.insert(s.snapshot_id);
  ASSIGN_OR_RETURN(ReachableFiles reachable, CollectReachableFiles(*io_, metadata_, all));
  reachable.other.insert(metadata_location_);
  // Compared as object keys: metadata may spell a file "file:/x" or "s3a://b/x" where
  // the listing says "file:///x" or "s3://b/x". A reachable location that maps to no key
  // fails the listing (never report a live file as an orphan).
  std::set<std::string> live;
  for (const auto* set : {&reachable.manifest_lists, &reachable.manifests, &reachable.content_files,
                          &reachable.other}) {
    for (const auto& location : *set) {
      auto key = io_->KeyOf(location);
      if (!key.ok()) {
        return InvalidArgument("cannot list orphans: table file " + location +
                               " is outside the table's storage (" + key.status().message() + ")");
      }
      live.insert(std::move(key).value());
    }
  }
  ASSIGN_OR_RETURN(auto listed, io_->List(metadata_.location + "/"));
  std::vector<FileInfo> orphans;
  for (auto& f : listed) {
    if (f.last_modified_ms >= older_than_ms) continue;
    auto key = io_->KeyOf(f.location);
    if (!key.ok() || live.count(*key)) continue;
    orphans.push_back(std::move(f));
  }
  return orphans;
}

}  // namespace icestream::iceberg
