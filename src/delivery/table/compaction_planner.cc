// Two-tier compaction planning.
#include "delivery/table/compaction_planner.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace icestream::delivery::table {

std::vector<CompactionTask> PlanCompaction(const std::vector<LiveFile>& files, int64_t now_ms,
                                           const CompactionOptions& options) {
  const int64_t target = std::max<int64_t>(2, options.target_size);
  std::map<std::pair<int32_t, int64_t>, std::vector<LiveFile>>
      by_partition;  // merged only within one
  for (const auto& f : files) {
    if (f.size < target / 2) by_partition[{f.spec_id, f.partition}].push_back(f);
  }
  std::vector<CompactionTask> fresh_tasks, merged_tasks;
  // Groups `list` (smallest first) into tasks that each reach `at_least` bytes (the rest
  // waits), or take everything (`all`); no task reads more than max_task_bytes.
  auto group = [&](int32_t spec_id, int64_t partition, std::vector<LiveFile> list, int64_t at_least,
                   bool all, std::vector<CompactionTask>* out) {
    std::sort(list.begin(), list.end(), [](const LiveFile& a, const LiveFile& b) {
      return std::tie(a.size, a.path) < std::tie(b.size, b.path);
    });
    CompactionTask t{partition, spec_id, {}, 0, all};
    auto flush = [&] {
      if (t.inputs.size() > 1) out->push_back(std::move(t));
      t = CompactionTask{partition, spec_id, {}, 0, all};
    };
    for (auto& f : list) {
      if (!t.inputs.empty() && t.input_bytes + f.size > options.max_task_bytes) flush();
      t.input_bytes += f.size;
      t.inputs.push_back(std::move(f));
      if (!all && t.input_bytes >= at_least) flush();
    }
    if (all) flush();
  };
  for (auto& [key, list] : by_partition) {
    if (list.size() < 2) continue;
    int64_t newest = 0;
    for (const auto& f : list) newest = std::max(newest, f.added_ms);
    if (now_ms - newest >= options.cold_after_ms) {
      group(key.first, key.second, std::move(list), 0, true, &merged_tasks);  // a quiet partition
      continue;
    }
    std::vector<LiveFile> fresh, merged;
    for (auto& f : list) (f.merged ? merged : fresh).push_back(std::move(f));
    if (!fresh.empty()) {
      std::vector<int64_t> sizes;
      for (const auto& f : fresh) sizes.push_back(std::max<int64_t>(1, f.size));
      std::nth_element(sizes.begin(), sizes.begin() + sizes.size() / 2, sizes.end());
      const double s = static_cast<double>(sizes[sizes.size() / 2]);
      const auto m = static_cast<int64_t>(std::clamp(std::sqrt(static_cast<double>(target) * s),
                                                     2 * s, static_cast<double>(target) / 2));
      group(key.first, key.second, std::move(fresh), m, false, &fresh_tasks);
    }
    if (!merged.empty())
      group(key.first, key.second, std::move(merged), target, false, &merged_tasks);
  }
  for (auto& t : merged_tasks) fresh_tasks.push_back(std::move(t));
  return fresh_tasks;
}

}  // namespace icestream::delivery::table
