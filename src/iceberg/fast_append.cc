// Fast append with tiered merging of small manifests (formats.md §C.11).
#include "iceberg/fast_append.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <utility>

namespace icestream::iceberg {

int ManifestSizeTier(int64_t manifest_bytes) {
  int t = 0;
  for (int64_t b = std::max<int64_t>(manifest_bytes, 1) >> 12; b > 0; b >>= 2) ++t;
  return t;
}

ManifestMergePlan PlanManifestMerge(const std::vector<ManifestFile>& parent_manifests,
                                    const TableOptions& options) {
  // Sizes are tiered (factors of 4): a merge takes manifests of one tier and makes one
  // of a higher tier, so each entry is rewritten about log(table)/log(min_count) times
  // and a commit never rewrites the bulk of a large table's manifests at once.
  ManifestMergePlan plan;
  std::map<std::pair<int32_t, int>, std::vector<ManifestFile>> small;
  const int64_t small_below =
      std::min(options.manifest_target_bytes, options.manifest_merge_max_input_bytes);
  for (const auto& mf : parent_manifests) {
    if (HoldsOnlyEarlierDeletes(mf)) continue;
    if (options.manifest_merge_enabled && mf.content == ManifestContent::kData &&
        mf.manifest_length < small_below) {
      small[{mf.partition_spec_id, ManifestSizeTier(mf.manifest_length)}].push_back(mf);
    } else {
      plan.kept.push_back(mf);
    }
  }
  for (auto& [key, group] : small) {
    if (static_cast<int>(group.size()) + 1 < options.manifest_min_count_to_merge) {
      plan.kept.insert(plan.kept.end(), group.begin(), group.end());
      continue;
    }
    std::vector<ManifestFile> bin;
    int64_t bin_bytes = 0;
    auto flush = [&] {
      if (bin.size() == 1) {
        plan.kept.push_back(bin[0]);
      } else if (bin.size() > 1) {
        plan.merges.push_back(std::move(bin));
      }
      bin.clear();
      bin_bytes = 0;
    };
    for (const auto& mf : group) {
      if (!bin.empty() && bin_bytes + mf.manifest_length > options.manifest_target_bytes) flush();
      bin.push_back(mf);
      bin_bytes += mf.manifest_length;
    }
    flush();
  }
  return plan;
}

FastAppend::FastAppend(const std::vector<DataFile>& added) : added_(added) {}

Status FastAppend::Validate() const {
  if (added_.empty()) return InvalidArgument("append: no files");
  return Status::OK();
}

Result<SnapshotChanges> FastAppend::Apply(const UpdateContext& ctx,
                                          const std::vector<ManifestFile>& parent_manifests) const {
  SnapshotChanges changes;
  const FileStats added = FileStats::Of(added_);
  if (added.delete_files > 0) {
    changes.operation = added.data_files > 0 ? operation::kOverwrite : operation::kDelete;
  }
  ManifestMergePlan plan = PlanManifestMerge(parent_manifests, *ctx.options);
  std::set<std::string> none_deleted;
  for (const auto& bin : plan.merges) {
    std::vector<ManifestEntry> entries;
    for (const auto& mf : bin) {
      ASSIGN_OR_RETURN(auto more, ReadManifestEntries(ctx.files->io(), mf));
      entries.insert(entries.end(), std::make_move_iterator(more.begin()),
                     std::make_move_iterator(more.end()));
    }
    RETURN_IF_ERROR(RewriteManifest(ctx, bin[0], std::move(entries), &none_deleted, &changes));
    changes.manifests_replaced += static_cast<int>(bin.size());
    ++changes.manifests_created;
  }
  changes.manifests_kept = static_cast<int>(plan.kept.size());
  changes.manifests.insert(changes.manifests.end(), plan.kept.begin(), plan.kept.end());
  return changes;
}

}  // namespace icestream::iceberg
