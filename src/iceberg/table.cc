// Table operations: fast append, replace, snapshot expiry, orphan listing (Iceberg spec
// "Optimistic Concurrency", "Sequence Numbers", "Snapshot Retention Policy";
// formats.md §C.7, §C.11).
#include "iceberg/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "common/crypto.h"
#include "iceberg/table_files.h"

namespace icestream::iceberg {

namespace {

// Summary totals: the parent's value plus the change, or absent when the parent does
// not carry it (a table written by someone who does not keep totals).
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

struct FileStats {
  int64_t data_files = 0, delete_files = 0, records = 0, size = 0, position_deletes = 0,
          equality_deletes = 0;
  void Add(const DataFile& f) {
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
};

}  // namespace

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

Result<CommitResult> Table::AppendFiles(const std::vector<DataFile>& files,
                                        const std::map<std::string, std::string>& summary_extra,
                                        const CommitCheck& check) {
  return Commit(files, {}, summary_extra, check);
}

Result<CommitResult> Table::ReplaceFiles(const std::vector<std::string>& deleted,
                                         const std::vector<DataFile>& added,
                                         const std::map<std::string, std::string>& summary_extra,
                                         const CommitCheck& check) {
  if (deleted.empty()) return InvalidArgument("replace: no files to delete");
  return Commit(added, deleted, summary_extra, check);
}

Result<CommitResult> Table::Commit(const std::vector<DataFile>& added,
                                   const std::vector<std::string>& deleted,
                                   const std::map<std::string, std::string>& summary_extra,
                                   const CommitCheck& check) {
  if (metadata_.format_version != 2) {
    return Unimplemented(
        fmt::format("table {} is format v{}: this writer commits to v2 tables only", TableName(id_),
                    metadata_.format_version));
  }
  const bool replace = !deleted.empty();
  if (added.empty() && !replace) return InvalidArgument("append: no files");
  if (check) RETURN_IF_ERROR(check(metadata_));
  {
    std::set<std::string> paths;
    for (const auto& f : added) {
      if (f.file_path.empty()) return InvalidArgument("data file without a path");
      if (!paths.insert(f.file_path).second)
        return InvalidArgument("data file added twice: " + f.file_path);
      if (metadata_.SpecById(f.spec_id) == nullptr) {
        return InvalidArgument(
            fmt::format("data file {} uses unknown partition spec {}", f.file_path, f.spec_id));
      }
    }
  }
  // A copy: a retry's Refresh() replaces metadata_.
  const Schema schema = *metadata_.CurrentSchema();
  const int64_t snapshot_id = NewSnapshotId();
  const std::string commit_uuid = crypto::RandomUuid();
  int manifest_counter = 0;
  auto manifest_location = [&] {
    return fmt::format("{}/{}-m{}.avro", MetadataDir(), commit_uuid, manifest_counter++);
  };

  // The manifests of the new files, written once and reused by every attempt.
  std::vector<ManifestFile> new_manifests;
  auto delete_all = [&](const std::vector<ManifestFile>& mfs) {
    for (const auto& mf : mfs) (void)io_->Delete(mf.manifest_path);
  };
  {
    std::map<std::pair<int32_t, bool>, std::vector<const DataFile*>> groups;
    for (const auto& f : added) groups[{f.spec_id, f.content != FileContent::kData}].push_back(&f);
    for (const auto& [key, group] : groups) {
      ASSIGN_OR_RETURN(auto writer, ManifestWriter::Make(schema, *metadata_.SpecById(key.first),
                                                         key.second ? ManifestContent::kDeletes
                                                                    : ManifestContent::kData,
                                                         snapshot_id, options_.manifest));
      for (const DataFile* f : group) {
        Status st = writer->AddAdded(*f);
        if (!st.ok()) {
          delete_all(new_manifests);
          return st;
        }
      }
      ManifestFile mf;
      ASSIGN_OR_RETURN(std::string bytes, writer->Finish(&mf));
      mf.manifest_path = manifest_location();
      if (Status st = io_->Write(mf.manifest_path, bytes); !st.ok()) {
        delete_all(new_manifests);
        return st;
      }
      new_manifests.push_back(std::move(mf));
    }
  }
  FileStats added_stats;
  for (const auto& f : added) added_stats.Add(f);

  Status last_conflict;
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    if (attempt > 1) {
      int64_t wait = std::min(options_.max_retry_wait_ms,
                              options_.min_retry_wait_ms << std::min(attempt - 2, 20));
      wait = wait / 2 +
             static_cast<int64_t>(crypto::RandomU64() % static_cast<uint64_t>(wait / 2 + 1));
      std::this_thread::sleep_for(std::chrono::milliseconds(wait));
      if (Status st = Refresh(); !st.ok()) {
        delete_all(new_manifests);
        return st;
      }
      if (check) {
        if (Status st = check(metadata_); !st.ok()) {
          delete_all(new_manifests);
          return st;
        }
      }
    }
    const Snapshot* parent = metadata_.CurrentSnapshot();
    std::optional<int64_t> parent_id;
    if (parent) parent_id = parent->snapshot_id;
    std::vector<ManifestFile> existing;
    if (parent) {
      auto m = SnapshotManifests(*io_, *parent);
      if (!m.ok()) {
        delete_all(new_manifests);
        return m.status();
      }
      existing = std::move(m).value();
    }
    std::vector<ManifestFile> written;  // this attempt's own files, to clean up on failure
    auto fail = [&](const Status& st) -> Status {
      delete_all(written);
      delete_all(new_manifests);
      return st;
    };
    CommitResult result;
    result.manifests_created = static_cast<int>(new_manifests.size());
    std::vector<ManifestFile> manifests = new_manifests;
    FileStats deleted_stats;
    std::set<std::string> changed_partitions;
    for (const auto& f : added) {
      if (const PartitionSpec* spec = metadata_.SpecById(f.spec_id)) {
        changed_partitions.insert(
            fmt::format("{}/{}", f.spec_id, PartitionPath(*spec, f.partition)));
      }
    }

    // A manifest-list entry with only DELETED entries of earlier snapshots: nothing in
    // it is live any more, the new snapshot drops it.
    auto only_old_deletes = [](const ManifestFile& mf) {
      return mf.live_files_count() == 0 && mf.deleted_files_count > 0;
    };
    auto read_entries = [&](const ManifestFile& mf) -> Result<std::vector<ManifestEntry>> {
      ASSIGN_OR_RETURN(std::string bytes, io_->Read(mf.manifest_path));
      ASSIGN_OR_RETURN(ManifestContents contents, ReadManifest(bytes, &mf));
      return std::move(contents.entries);
    };
    // Writes entries of manifests of `like`'s spec and content as one new manifest: live
    // entries become EXISTING (keeping their sequence numbers), entries named in
    // `to_delete` become DELETED by this snapshot, DELETED entries of earlier snapshots
    // are dropped.
    std::set<std::string> to_delete(deleted.begin(), deleted.end());
    auto rewrite = [&](const ManifestFile& like, std::vector<ManifestEntry> entries) -> Status {
      const PartitionSpec* spec = metadata_.SpecById(like.partition_spec_id);
      if (spec == nullptr) {
        return Corruption(fmt::format("manifest {} names unknown spec {}", like.manifest_path,
                                      like.partition_spec_id));
      }
      ASSIGN_OR_RETURN(auto writer,
                       ManifestWriter::Make(*metadata_.CurrentSchema(), *spec, like.content,
                                            snapshot_id, options_.manifest));
      for (auto& e : entries) {
        if (!e.live()) continue;
        if (to_delete.erase(e.data_file.file_path)) {
          deleted_stats.Add(e.data_file);
          changed_partitions.insert(fmt::format("{}/{}", e.data_file.spec_id,
                                                PartitionPath(*spec, e.data_file.partition)));
          e.status = EntryStatus::kDeleted;
          e.snapshot_id = snapshot_id;
        } else {
          e.status = EntryStatus::kExisting;
        }
        RETURN_IF_ERROR(writer->Add(e));
      }
      if (writer->entry_count() == 0) return Status::OK();
      ManifestFile mf;
      ASSIGN_OR_RETURN(std::string out, writer->Finish(&mf));
      mf.manifest_path = manifest_location();
      RETURN_IF_ERROR(io_->Write(mf.manifest_path, out));
      written.push_back(mf);
      manifests.push_back(std::move(mf));
      return Status::OK();
    };

    if (replace) {
      // Rewrite the manifests that hold a file to delete; keep the others as they are.
      for (const auto& mf : existing) {
        if (only_old_deletes(mf)) continue;
        bool unknown_counts = mf.added_files_count == 0 && mf.existing_files_count == 0 &&
                              mf.deleted_files_count == 0;
        bool may_hold =
            mf.content == ManifestContent::kData && (mf.live_files_count() > 0 || unknown_counts);
        bool touched = false;
        std::vector<ManifestEntry> entries;
        if (may_hold && !to_delete.empty()) {
          auto read = read_entries(mf);
          if (!read.ok()) return fail(read.status());
          entries = std::move(read).value();
          for (const auto& e : entries)
            touched |= e.live() && to_delete.count(e.data_file.file_path) > 0;
        }
        if (!touched) {
          manifests.push_back(mf);
          ++result.manifests_kept;
          continue;
        }
        if (Status st = rewrite(mf, std::move(entries)); !st.ok()) return fail(st);
        ++result.manifests_replaced;
      }
      if (!to_delete.empty()) {
        return fail(Conflict("replace: data file " + *to_delete.begin() +
                             " is no longer in table " + TableName(id_)));
      }
    } else {
      // Fast append: keep the parent's manifests; merge small data manifests once there
      // are many of about the same size (bin-packed by size, newest first). Sizes are
      // tiered (factors of 4): a merge takes manifests of one tier and makes one of a
      // higher tier, so each entry is rewritten about log(table)/log(min_count) times and
      // a commit never rewrites the bulk of a large table's manifests at once.
      auto tier = [](int64_t bytes) {
        int t = 0;
        for (int64_t b = std::max<int64_t>(bytes, 1) >> 12; b > 0; b >>= 2)
          ++t;  // 4 KiB, 16 KiB, ...
        return t;
      };
      std::map<std::pair<int32_t, int>, std::vector<ManifestFile>> small;
      std::vector<ManifestFile> kept;
      for (const auto& mf : existing) {
        if (only_old_deletes(mf)) continue;
        if (options_.manifest_merge_enabled && mf.content == ManifestContent::kData &&
            mf.manifest_length <
                std::min(options_.manifest_target_bytes, options_.manifest_merge_max_input_bytes)) {
          small[{mf.partition_spec_id, tier(mf.manifest_length)}].push_back(mf);
        } else {
          kept.push_back(mf);
        }
      }
      for (auto& [key, group] : small) {
        if (static_cast<int>(group.size()) + 1 < options_.manifest_min_count_to_merge) {
          kept.insert(kept.end(), group.begin(), group.end());
          continue;
        }
        std::vector<ManifestFile> bin;
        int64_t bin_bytes = 0;
        auto flush = [&]() -> Status {
          if (bin.size() == 1) {
            kept.push_back(bin[0]);
          } else if (bin.size() > 1) {
            std::vector<ManifestEntry> entries;
            for (const auto& mf : bin) {
              ASSIGN_OR_RETURN(auto more, read_entries(mf));
              entries.insert(entries.end(), std::make_move_iterator(more.begin()),
                             std::make_move_iterator(more.end()));
            }
            RETURN_IF_ERROR(rewrite(bin[0], std::move(entries)));
            result.manifests_replaced += static_cast<int>(bin.size());
            ++result.manifests_created;
          }
          bin.clear();
          bin_bytes = 0;
          return Status::OK();
        };
        for (const auto& mf : group) {
          if (!bin.empty() && bin_bytes + mf.manifest_length > options_.manifest_target_bytes) {
            if (Status st = flush(); !st.ok()) return fail(st);
          }
          bin.push_back(mf);
          bin_bytes += mf.manifest_length;
        }
        if (Status st = flush(); !st.ok()) return fail(st);
      }
      result.manifests_kept = static_cast<int>(kept.size());
      manifests.insert(manifests.end(), kept.begin(), kept.end());
    }

    const int64_t sequence_number = metadata_.last_sequence_number + 1;
    Snapshot snap;
    snap.snapshot_id = snapshot_id;
    snap.parent_snapshot_id = parent_id;
    snap.sequence_number = sequence_number;
    snap.timestamp_ms = std::max(clock_->NowMillis(), metadata_.last_updated_ms);
    snap.schema_id = metadata_.current_schema_id;
    auto& s = snap.summary;
    s = summary_extra;
    // "append" promises data files only (incremental readers skip such snapshots'
    // deletes): added delete files make it an overwrite, or a delete without data files.
    const char* op = operation::kAppend;
    if (replace) {
      op = operation::kReplace;
    } else if (added_stats.delete_files > 0) {
      op = added_stats.data_files > 0 ? operation::kOverwrite : operation::kDelete;
    }
    s[summary::kOperation] = op;
    if (added_stats.data_files)
      s[summary::kAddedDataFiles] = std::to_string(added_stats.data_files);
    if (added_stats.delete_files)
      s[summary::kAddedDeleteFiles] = std::to_string(added_stats.delete_files);
    if (added_stats.records) s[summary::kAddedRecords] = std::to_string(added_stats.records);
    s[summary::kAddedFilesSize] = std::to_string(added_stats.size);
    if (replace) {
      s[summary::kDeletedDataFiles] = std::to_string(deleted_stats.data_files);
      s[summary::kDeletedRecords] = std::to_string(deleted_stats.records);
      s[summary::kRemovedFilesSize] = std::to_string(deleted_stats.size);
    }
    s[summary::kChangedPartitionCount] = std::to_string(changed_partitions.size());
    Total(&s, parent, summary::kTotalDataFiles, added_stats.data_files - deleted_stats.data_files);
    Total(&s, parent, summary::kTotalDeleteFiles,
          added_stats.delete_files - deleted_stats.delete_files);
    Total(&s, parent, summary::kTotalRecords, added_stats.records - deleted_stats.records);
    Total(&s, parent, summary::kTotalFilesSize, added_stats.size - deleted_stats.size);
    Total(&s, parent, summary::kTotalPositionDeletes,
          added_stats.position_deletes - deleted_stats.position_deletes);
    Total(&s, parent, summary::kTotalEqualityDeletes,
          added_stats.equality_deletes - deleted_stats.equality_deletes);
    s[summary::kManifestsCreated] = std::to_string(result.manifests_created);
    s[summary::kManifestsKept] = std::to_string(result.manifests_kept);
    s[summary::kManifestsReplaced] = std::to_string(result.manifests_replaced);

    auto list =
        WriteManifestList(snapshot_id, parent_id, sequence_number, manifests, options_.manifest);
    if (!list.ok()) return fail(list.status());
    snap.manifest_list =
        fmt::format("{}/snap-{}-{}-{}.avro", MetadataDir(), snapshot_id, attempt, commit_uuid);
    if (Status w = io_->Write(snap.manifest_list, *list); !w.ok()) return fail(w);
    ManifestFile list_file;
    list_file.manifest_path = snap.manifest_list;
    written.push_back(list_file);

    std::vector<TableRequirement> requirements = {
        requirement::AssertTableUuid{metadata_.table_uuid},
        requirement::AssertRefSnapshotId{kMainBranch, parent_id}};
    std::vector<TableUpdate> updates = {
        update::AddSnapshot{snap},
        update::SetSnapshotRef{kMainBranch,
                               SnapshotRef{snapshot_id, RefType::kBranch, {}, {}, {}}}};
    auto committed = CommitToCatalog(requirements, updates);
    auto succeeded = [&] {
      result.snapshot_id = snapshot_id;
      result.sequence_number = metadata_.SnapshotById(snapshot_id)->sequence_number;
      result.metadata_location = metadata_location_;
      result.attempts = attempt;
      return result;
    };
    if (committed.ok()) {
      metadata_ = std::move(committed->metadata);
      metadata_location_ = std::move(committed->metadata_location);
      return succeeded();
    }
    const Status cst = committed.status();
    if (cst.code() == StatusCode::kUnknownOutcome) return cst;         // the files may be live now
    if (cst.code() == StatusCode::kInvalidArgument) return fail(cst);  // refused as such
    // A conflict or a server error can also answer a commit that did land (a request
    // delivered twice, a proxy failing after the catalog applied it): look at the table
    // before deleting anything this attempt wrote, or the new snapshot would point at
    // deleted files.
    if (Status rs = Refresh(); !rs.ok()) return cst;  // cannot tell: keep the files
    if (metadata_.SnapshotById(snapshot_id) != nullptr) return succeeded();
    if (cst.code() != StatusCode::kConflict) return fail(cst);
    delete_all(written);
    last_conflict = cst;
  }
  delete_all(new_manifests);
  return Conflict(fmt::format("commit to {} lost {} times in a row: {}", TableName(id_),
                              options_.max_attempts, last_conflict.message()));
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
