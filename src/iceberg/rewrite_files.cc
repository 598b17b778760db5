// Replacing files: rewrite the manifests that hold them, keep the rest.
#include "iceberg/rewrite_files.h"

#include <set>
#include <utility>

namespace icestream::iceberg {

RewriteFiles::RewriteFiles(const std::vector<std::string>& deleted) : deleted_(deleted) {}

Result<SnapshotChanges> RewriteFiles::Apply(
    const UpdateContext& ctx, const std::vector<ManifestFile>& parent_manifests) const {
  SnapshotChanges changes;
  changes.operation = operation::kReplace;
  std::set<std::string> to_delete(deleted_.begin(), deleted_.end());
  for (const auto& mf : parent_manifests) {
    if (HoldsOnlyEarlierDeletes(mf)) continue;
    // Writers that leave the counts out (all zero) may still list live files.
    bool unknown_counts =
        mf.added_files_count == 0 && mf.existing_files_count == 0 && mf.deleted_files_count == 0;
    bool may_hold =
        mf.content == ManifestContent::kData && (mf.live_files_count() > 0 || unknown_counts);
    bool touched = false;
    std::vector<ManifestEntry> entries;
    if (may_hold && !to_delete.empty()) {
      ASSIGN_OR_RETURN(entries, ReadManifestEntries(ctx.files->io(), mf));
      for (const auto& e : entries)
        touched |= e.live() && to_delete.count(e.data_file.file_path) > 0;
    }
    if (!touched) {
      changes.manifests.push_back(mf);
      ++changes.manifests_kept;
      continue;
    }
    RETURN_IF_ERROR(RewriteManifest(ctx, mf, std::move(entries), &to_delete, &changes));
    ++changes.manifests_replaced;
  }
  if (!to_delete.empty()) {
    return Conflict("replace: data file " + *to_delete.begin() + " is no longer in table " +
                    ctx.table_name);
  }
  changes.summary[summary::kDeletedDataFiles] = std::to_string(changes.deleted.data_files);
  changes.summary[summary::kDeletedRecords] = std::to_string(changes.deleted.records);
  changes.summary[summary::kRemovedFilesSize] = std::to_string(changes.deleted.size);
  return changes;
}

}  // namespace icestream::iceberg
