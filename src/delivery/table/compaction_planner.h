// Compaction planning for streaming tables (inline compaction, issue 10): which small
// data files of a partition to merge, so that a table written at a short freshness does
// not fill with small files while each byte is rewritten only a few times.
//
// Two tiers below the target size T, so that every byte is rewritten at most twice
// (write amplification <= 3): in each partition, the files appends wrote ("fresh") are
// merged into "merged" files of about M = sqrt(T x s), s being the fresh files' median
// size, once they add up to M; merged files are merged into files of T once they add up
// to T. A partition then holds at most about sqrt(T / s) fresh and sqrt(T / s) merged
// files besides its full ones. A partition that received nothing for `cold_after_ms` (a
// past hour) is finished off: everything below T / 2 is merged at once. Files of at
// least T / 2 are left alone.
//
// Pure: same input, same plan. Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace icestream::delivery::table {

struct LiveFile {
  std::string path;
  int64_t size = 0;
  int64_t records = 0;
  int64_t partition = 0;  // the partition hour
  int32_t spec_id = 0;
  int64_t added_ms = 0;  // commit time of the snapshot that added it
  bool merged = false;   // written by compaction (not by an append)
  // Its manifest entry's NaN counts by field id (a merge that copies the file's row
  // groups as they are reports them; Parquet's statistics have none).
  std::map<int32_t, int64_t> nan_counts;
};

struct CompactionOptions {
  int64_t target_size = 128ll << 20;
  int64_t cold_after_ms = 10ll * 60 * 1000;
  // A task reads at most this many bytes (memory and latency of one rewrite).
  int64_t max_task_bytes = 256ll << 20;
};

struct CompactionTask {
  int64_t partition = 0;
  int32_t spec_id = 0;
  std::vector<LiveFile> inputs;
  int64_t input_bytes = 0;
  // Write the output as files of the target size (a quiet partition's whole rest); else
  // as one file, which may exceed the target by the last input (a cut would leave a
  // small remainder to be rewritten again).
  bool cut_at_target = false;
};

// Tasks: merges of fresh files first (they remove the most files), then of merged files.
std::vector<CompactionTask> PlanCompaction(const std::vector<LiveFile>& files, int64_t now_ms,
                                           const CompactionOptions& options);

}  // namespace icestream::delivery::table
