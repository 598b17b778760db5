// The builder of an append commit: the parent's manifests are kept as they are, and small
// data manifests are merged once there are many of about the same size (Java's
// MergeAppend, with size tiers so that a commit's cost does not grow with the table).
#pragma once

#include <cstdint>
#include <vector>

#include "iceberg/snapshot_update.h"

namespace icestream::iceberg {

// A manifest's size tier: 0 below 4 KiB, then one more per factor of 4 (4 KiB, 16 KiB,
// 64 KiB, ...). Only manifests of one tier are merged together.
int ManifestSizeTier(int64_t manifest_bytes);

// Which of the parent's manifests an append keeps and which it merges.
struct ManifestMergePlan {
  // Stay in the manifest list as they are, in this order.
  std::vector<ManifestFile> kept;
  // Each becomes one new manifest, in this order (before the kept ones in the list).
  std::vector<std::vector<ManifestFile>> merges;
};

// Small data manifests (below min(manifest_target_bytes, manifest_merge_max_input_bytes))
// are grouped by partition spec and size tier; a group of at least min_count_to_merge - 1
// (the new manifest counts too) is bin-packed, in manifest-list order, into bins of at
// most manifest_target_bytes, and a bin of one stays as it is. Manifests that hold only
// earlier deletes are dropped. Other manifests, and all of them when merging is disabled,
// are kept.
ManifestMergePlan PlanManifestMerge(const std::vector<ManifestFile>& parent_manifests,
                                    const TableOptions& options);

class FastAppend : public SnapshotUpdate {
 public:
  // `added` must outlive this object (the files' own manifests are written by the commit).
  explicit FastAppend(const std::vector<DataFile>& added);

  // kInvalidArgument for an append without files.
  Status Validate() const override;
  // "append" when only data files are added (incremental readers skip such snapshots'
  // deletes); added delete files make it an "overwrite", or a "delete" without data files.
  Result<SnapshotChanges> Apply(const UpdateContext& ctx,
                                const std::vector<ManifestFile>& parent_manifests) const override;

 private:
  const std::vector<DataFile>& added_;
};

}  // namespace icestream::iceberg
