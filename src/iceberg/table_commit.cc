// Table's commit loop: one attempt after another until a snapshot lands, built each time
// by an operation's builder (fast_append.h, rewrite_files.h) on the freshest table version
// (Iceberg spec "Optimistic Concurrency", "Commit Conflict Resolution and Retry").
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "common/crypto.h"
#include "iceberg/fast_append.h"
#include "iceberg/rewrite_files.h"
#include "iceberg/snapshot_update.h"
#include "iceberg/table.h"
#include "iceberg/table_files.h"

namespace icestream::iceberg {

namespace {

// Exponential backoff from min to max wait, jittered to [wait/2, wait] so that writers
// that lost the same race do not meet again.
void WaitBeforeAttempt(int attempt, const TableOptions& options) {
  int64_t wait =
      std::min(options.max_retry_wait_ms, options.min_retry_wait_ms << std::min(attempt - 2, 20));
  wait = wait / 2 + static_cast<int64_t>(crypto::RandomU64() % static_cast<uint64_t>(wait / 2 + 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(wait));
}

// Every added file has a path of its own and a partition spec of the table.
Status CheckAddedFiles(const TableMetadata& metadata, const std::vector<DataFile>& added) {
  std::set<std::string> paths;
  for (const auto& f : added) {
    if (f.file_path.empty()) return InvalidArgument("data file without a path");
    if (!paths.insert(f.file_path).second)
      return InvalidArgument("data file added twice: " + f.file_path);
    if (metadata.SpecById(f.spec_id) == nullptr) {
      return InvalidArgument(
          fmt::format("data file {} uses unknown partition spec {}", f.file_path, f.spec_id));
    }
  }
  return Status::OK();
}

}  // namespace

Result<CommitResult> Table::AppendFiles(const std::vector<DataFile>& files,
                                        const std::map<std::string, std::string>& summary_extra,
                                        const CommitCheck& check) {
  return Commit(FastAppend(files), files, summary_extra, check);
}

Result<CommitResult> Table::ReplaceFiles(const std::vector<std::string>& deleted,
                                         const std::vector<DataFile>& added,
                                         const std::map<std::string, std::string>& summary_extra,
                                         const CommitCheck& check) {
  if (deleted.empty()) return InvalidArgument("replace: no files to delete");
  return Commit(RewriteFiles(deleted), added, summary_extra, check);
}

Result<CommitResult> Table::Commit(const SnapshotUpdate& update, const std::vector<DataFile>& added,
                                   const std::map<std::string, std::string>& summary_extra,
                                   const CommitCheck& check) {
  if (metadata_.format_version != 2) {
    return Unimplemented(
        fmt::format("table {} is format v{}: this writer commits to v2 tables only", TableName(id_),
                    metadata_.format_version));
  }
  RETURN_IF_ERROR(update.Validate());
  if (check) RETURN_IF_ERROR(check(metadata_));
  RETURN_IF_ERROR(CheckAddedFiles(metadata_, added));
  // A copy: a retry's Refresh() replaces metadata_.
  const Schema schema = *metadata_.CurrentSchema();
  const int64_t snapshot_id = NewSnapshotId();
  CommitFiles files(io_, crypto::RandomUuid());

  // The manifests of the new files, written once and reused by every attempt.
  files.StartAttempt(MetadataDir());
  auto written =
      WriteAddedManifests(schema, metadata_, added, snapshot_id, options_.manifest, &files);
  if (!written.ok()) {
    files.DeleteAll();
    return written.status();
  }
  const std::vector<ManifestFile> new_manifests = std::move(written).value();
  files.KeepForAllAttempts();
  const FileStats added_stats = FileStats::Of(added);
  // Deletes every file of the commit: only for a commit that cannot have landed.
  auto fail = [&](const Status& st) -> Status {
    files.DeleteAll();
    return st;
  };

  Status last_conflict;
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    if (attempt > 1) {
      WaitBeforeAttempt(attempt, options_);
      if (Status st = Refresh(); !st.ok()) return fail(st);
      if (check) {
        if (Status st = check(metadata_); !st.ok()) return fail(st);
      }
    }
    files.StartAttempt(MetadataDir());
    const Snapshot* parent = metadata_.CurrentSnapshot();
    std::optional<int64_t> parent_id;
    if (parent) parent_id = parent->snapshot_id;
    std::vector<ManifestFile> existing;
    if (parent) {
      auto m = SnapshotManifests(*io_, *parent);
      if (!m.ok()) return fail(m.status());
      existing = std::move(m).value();
    }
    UpdateContext ctx;
    ctx.base = &metadata_;
    ctx.snapshot_id = snapshot_id;
    ctx.options = &options_;
    ctx.files = &files;
    ctx.table_name = TableName(id_);
    auto applied = update.Apply(ctx, existing);
    if (!applied.ok()) return fail(applied.status());
    SnapshotChanges changes = std::move(applied).value();
    changes.manifests.insert(changes.manifests.begin(), new_manifests.begin(), new_manifests.end());
    changes.manifests_created += static_cast<int>(new_manifests.size());
    for (const auto& f : added) {
      if (const PartitionSpec* spec = metadata_.SpecById(f.spec_id)) {
        changes.changed_partitions.insert(
            fmt::format("{}/{}", f.spec_id, PartitionPath(*spec, f.partition)));
      }
    }

    const int64_t sequence_number = metadata_.last_sequence_number + 1;
    Snapshot snap;
    snap.snapshot_id = snapshot_id;
    snap.parent_snapshot_id = parent_id;
    snap.sequence_number = sequence_number;
    snap.timestamp_ms = std::max(clock_->NowMillis(), metadata_.last_updated_ms);
    snap.schema_id = metadata_.current_schema_id;
    snap.summary = SnapshotSummary(summary_extra, added_stats, changes, parent);

    auto list = WriteManifestList(snapshot_id, parent_id, sequence_number, changes.manifests,
                                  options_.manifest);
    if (!list.ok()) return fail(list.status());
    snap.manifest_list = files.ManifestListPath(snapshot_id, attempt);
    if (Status w = files.Write(snap.manifest_list, *list); !w.ok()) return fail(w);

    std::vector<TableRequirement> requirements = {
        requirement::AssertTableUuid{metadata_.table_uuid},
        requirement::AssertRefSnapshotId{kMainBranch, parent_id}};
    std::vector<TableUpdate> updates = {
        update::AddSnapshot{snap},
        update::SetSnapshotRef{kMainBranch,
                               SnapshotRef{snapshot_id, RefType::kBranch, {}, {}, {}}}};
    auto committed = CommitToCatalog(requirements, updates);
    auto succeeded = [&] {
      CommitResult result;
      result.snapshot_id = snapshot_id;
      result.sequence_number = metadata_.SnapshotById(snapshot_id)->sequence_number;
      result.metadata_location = metadata_location_;
      result.attempts = attempt;
      result.manifests_created = changes.manifests_created;
      result.manifests_kept = changes.manifests_kept;
      result.manifests_replaced = changes.manifests_replaced;
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
    files.DeleteAttemptFiles();
    last_conflict = cst;
  }
  files.DeleteAll();
  return Conflict(fmt::format("commit to {} lost {} times in a row: {}", TableName(id_),
                              options_.max_attempts, last_conflict.message()));
}

}  // namespace icestream::iceberg
