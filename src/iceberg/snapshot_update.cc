// The pieces the snapshot builders share: a commit's files, and writing manifests.
#include "iceberg/snapshot_update.h"

#include <fmt/format.h>

#include <map>
#include <utility>

#include "iceberg/manifest_avro.h"
#include "iceberg/partition_spec.h"

namespace icestream::iceberg {

CommitFiles::CommitFiles(const FileIO* io, std::string commit_uuid)
    : io_(io), commit_uuid_(std::move(commit_uuid)) {}

void CommitFiles::StartAttempt(std::string metadata_dir) {
  metadata_dir_ = std::move(metadata_dir);
  attempt_.clear();
}

std::string CommitFiles::NextManifestPath() {
  return fmt::format("{}/{}-m{}.avro", metadata_dir_, commit_uuid_, manifest_counter_++);
}

std::string CommitFiles::ManifestListPath(int64_t snapshot_id, int attempt) const {
  return fmt::format("{}/snap-{}-{}-{}.avro", metadata_dir_, snapshot_id, attempt, commit_uuid_);
}

Status CommitFiles::Write(const std::string& location, const std::string& bytes) {
  RETURN_IF_ERROR(io_->Write(location, bytes));
  attempt_.push_back(location);
  return Status::OK();
}

void CommitFiles::KeepForAllAttempts() {
  shared_.insert(shared_.end(), attempt_.begin(), attempt_.end());
  attempt_.clear();
}

void CommitFiles::DeleteAttemptFiles() {
  // Best effort: a file left behind is an orphan for ListOrphanFiles, never a loss.
  for (const auto& f : attempt_) (void)io_->Delete(f);
  attempt_.clear();
}

void CommitFiles::DeleteAll() {
  DeleteAttemptFiles();
  for (const auto& f : shared_) (void)io_->Delete(f);
  shared_.clear();
}

Result<std::vector<ManifestEntry>> ReadManifestEntries(const FileIO& io, const ManifestFile& mf) {
  ASSIGN_OR_RETURN(std::string bytes, io.Read(mf.manifest_path));
  ASSIGN_OR_RETURN(ManifestContents contents, ReadManifest(bytes, &mf));
  return std::move(contents.entries);
}

Status RewriteManifest(const UpdateContext& ctx, const ManifestFile& like,
                       std::vector<ManifestEntry> entries, std::set<std::string>* to_delete,
                       SnapshotChanges* changes) {
  const TableMetadata& base = *ctx.base;
  const PartitionSpec* spec = base.SpecById(like.partition_spec_id);
  if (spec == nullptr) {
    return Corruption(fmt::format("manifest {} names unknown spec {}", like.manifest_path,
                                  like.partition_spec_id));
  }
  ASSIGN_OR_RETURN(auto writer, ManifestWriter::Make(*base.CurrentSchema(), *spec, like.content,
                                                     ctx.snapshot_id, ctx.options->manifest));
  for (auto& e : entries) {
    if (!e.live()) continue;
    if (to_delete->erase(e.data_file.file_path)) {
      changes->deleted.Add(e.data_file);
      changes->changed_partitions.insert(
          fmt::format("{}/{}", e.data_file.spec_id, PartitionPath(*spec, e.data_file.partition)));
      e.status = EntryStatus::kDeleted;
      e.snapshot_id = ctx.snapshot_id;
    } else {
      e.status = EntryStatus::kExisting;
    }
    RETURN_IF_ERROR(writer->Add(e));
  }
  if (writer->entry_count() == 0) return Status::OK();
  ManifestFile mf;
  ASSIGN_OR_RETURN(std::string out, writer->Finish(&mf));
  mf.manifest_path = ctx.files->NextManifestPath();
  RETURN_IF_ERROR(ctx.files->Write(mf.manifest_path, out));
  changes->manifests.push_back(std::move(mf));
  return Status::OK();
}

Result<std::vector<ManifestFile>> WriteAddedManifests(
    const Schema& schema, const TableMetadata& metadata, const std::vector<DataFile>& added,
    int64_t snapshot_id, const ManifestWriteOptions& options, CommitFiles* files) {
  // Data and delete files never share a manifest (spec "Manifests": a manifest holds one
  // kind of content), nor do files of different specs.
  std::map<std::pair<int32_t, bool>, std::vector<const DataFile*>> groups;
  for (const auto& f : added) groups[{f.spec_id, f.content != FileContent::kData}].push_back(&f);
  std::vector<ManifestFile> manifests;
  for (const auto& [key, group] : groups) {
    ASSIGN_OR_RETURN(auto writer, ManifestWriter::Make(schema, *metadata.SpecById(key.first),
                                                       key.second ? ManifestContent::kDeletes
                                                                  : ManifestContent::kData,
                                                       snapshot_id, options));
    for (const DataFile* f : group) RETURN_IF_ERROR(writer->AddAdded(*f));
    ManifestFile mf;
    ASSIGN_OR_RETURN(std::string bytes, writer->Finish(&mf));
    mf.manifest_path = files->NextManifestPath();
    RETURN_IF_ERROR(files->Write(mf.manifest_path, bytes));
    manifests.push_back(std::move(mf));
  }
  return manifests;
}

}  // namespace icestream::iceberg
