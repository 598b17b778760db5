// Options of a Table handle: commit retries, and when the appends of a fast-append
// commit merge the parent's small manifests.
#pragma once

#include <cstdint>

#include "iceberg/manifest_avro.h"

namespace icestream::iceberg {

struct TableOptions {
  // Attempts per commit (Java: commit.retry.num-retries = 4, i.e. 5 attempts; a
  // streaming committer shares its table with compaction, so allow more).
  int max_attempts = 10;
  int64_t min_retry_wait_ms = 20;
  int64_t max_retry_wait_ms = 2000;
  // Manifest merging (Java: commit.manifest.target-size-bytes = 8 MiB,
  // commit.manifest.min-count-to-merge = 100, commit.manifest-merge.enabled = true).
  int64_t manifest_target_bytes = 8 << 20;
  int manifest_min_count_to_merge = 100;
  // Manifests at least this big are never merged again. Java merges every manifest
  // below the target size, so a table whose manifests sit just under it rewrites all
  // of them every `min_count` commits — a cost that grows with the table. With this
  // floor a merge rewrites at most ~min_count x this many bytes, whatever the size of
  // the table.
  int64_t manifest_merge_max_input_bytes = 2 << 20;
  bool manifest_merge_enabled = true;
  ManifestWriteOptions manifest;
};

}  // namespace icestream::iceberg
