// The builder of a replace commit (compaction): files leave the table and others take
// their place, the rows staying the same (spec "Snapshots", operation "replace").
#pragma once

#include <string>
#include <vector>

#include "iceberg/snapshot_update.h"

namespace icestream::iceberg {

class RewriteFiles : public SnapshotUpdate {
 public:
  // `deleted` (paths) must outlive this object; the added files are the commit's.
  explicit RewriteFiles(const std::vector<std::string>& deleted);

  // The manifests that hold a file to delete are rewritten with its entry DELETED; the
  // others are kept as they are, and those with only earlier deletes are dropped.
  // kConflict when a file to delete is not live in the parent (another commit removed
  // it: re-plan), kCorruption for a manifest of an unknown spec, or I/O errors.
  Result<SnapshotChanges> Apply(const UpdateContext& ctx,
                                const std::vector<ManifestFile>& parent_manifests) const override;

 private:
  const std::vector<std::string>& deleted_;
};

}  // namespace icestream::iceberg
