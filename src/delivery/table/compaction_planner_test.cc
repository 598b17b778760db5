// The compaction planner over a simulated partition: appends of small files at a steady
// rate, every plan carried out (merged files cut at the target size). Write amplification
// stays within 3, live files stay few, and quiet partitions are finished off.
#include "delivery/table/compaction_planner.h"

#include <gtest/gtest.h>

#include <cmath>

namespace icestream::delivery::table {
namespace {

struct Sim {
  CompactionOptions options;
  std::vector<LiveFile> live;
  int64_t appended = 0, written = 0, now = 0;
  int n = 0;

  void Append(int64_t partition, int64_t size) {
    live.push_back({"a" + std::to_string(n++), size, size / 100, partition, 0, now, false});
    appended += size;
    written += size;
  }
  void Compact() {
    for (const auto& t : PlanCompaction(live, now, options)) {
      int64_t total = 0;
      for (const auto& in : t.inputs) {
        total += in.size;
        auto it = std::find_if(live.begin(), live.end(),
                               [&](const LiveFile& f) { return f.path == in.path; });
        ASSERT_NE(it, live.end()) << "a task reads a file that is not live: " << in.path;
        ASSERT_EQ(it->partition, t.partition);
        live.erase(it);
      }
      ASSERT_EQ(total, t.input_bytes);
      ASSERT_LE(total, options.max_task_bytes + options.target_size);
      written += total;
      int64_t piece = t.cut_at_target ? options.target_size : total;
      for (int64_t left = total; left > 0; left -= piece) {
        live.push_back(
            {"m" + std::to_string(n++), std::min(left, piece), 0, t.partition, 0, now, true});
      }
    }
  }
  size_t LiveIn(int64_t partition) const {
    return std::count_if(live.begin(), live.end(),
                         [&](const LiveFile& f) { return f.partition == partition; });
  }
};

TEST(CompactionPlanner, SteadySmallAppendsStayWithinThreeTimesTheirBytes) {
  for (int64_t ratio : {50, 1000, 20000}) {  // target / appended file size
    Sim sim;
    sim.options.target_size = 64ll << 20;
    const int64_t s = sim.options.target_size / ratio;
    size_t max_small = 0;
    for (int i = 0; i < 20000; ++i) {
      sim.now += 1000;
      sim.Append(7, s);
      sim.Compact();
      size_t small = std::count_if(sim.live.begin(), sim.live.end(), [&](const LiveFile& f) {
        return f.size < sim.options.target_size / 2;
      });
      max_small = std::max(max_small, small);
    }
    double wa = static_cast<double>(sim.written) / static_cast<double>(sim.appended);
    EXPECT_LE(wa, 3.0) << "ratio " << ratio;
    // About sqrt(T/s) fresh plus sqrt(T/s) merged files at most.
    EXPECT_LE(max_small, static_cast<size_t>(4 * std::sqrt(static_cast<double>(ratio)) + 4))
        << "ratio " << ratio;
    // The mean live file is large once the partition holds several targets.
    if (sim.appended >= 4 * sim.options.target_size) {
      double mean = static_cast<double>(sim.appended) / static_cast<double>(sim.live.size());
      EXPECT_GE(mean, static_cast<double>(sim.options.target_size) / 4) << "ratio " << ratio;
    }
  }
}

TEST(CompactionPlanner, QuietPartitionsAreFinishedOffAndPartitionsNeverMix) {
  Sim sim;
  sim.options.target_size = 1 << 20;
  sim.options.cold_after_ms = 60000;
  for (int i = 0; i < 7; ++i) sim.Append(1, 1000);
  for (int i = 0; i < 7; ++i) sim.Append(2, 1000);
  sim.Compact();  // too few and too fresh: nothing to do
  EXPECT_EQ(sim.LiveIn(1), 7u);
  sim.now += 61000;
  sim.Append(2, 1000);  // partition 2 is still being written
  sim.Compact();
  EXPECT_EQ(sim.LiveIn(1), 1u);
  EXPECT_EQ(sim.LiveIn(2), 8u);
  // Large files are never inputs.
  Sim big;
  big.options.target_size = 1 << 20;
  for (int i = 0; i < 5; ++i) big.Append(1, 600 << 10);
  big.now += 1ll << 40;
  EXPECT_TRUE(PlanCompaction(big.live, big.now, big.options).empty());
}

TEST(CompactionPlanner, TasksAreBoundedAndThePlanIsDeterministic) {
  Sim sim;
  sim.options.target_size = 64 << 20;
  sim.options.max_task_bytes = 4 << 20;
  for (int i = 0; i < 500; ++i) sim.Append(3, 100 << 10);
  sim.now += 1ll << 40;
  auto a = PlanCompaction(sim.live, sim.now, sim.options);
  auto b = PlanCompaction(sim.live, sim.now, sim.options);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GT(a.size(), 1u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_LE(a[i].input_bytes, sim.options.max_task_bytes);
    ASSERT_EQ(a[i].inputs.size(), b[i].inputs.size());
    for (size_t j = 0; j < a[i].inputs.size(); ++j)
      EXPECT_EQ(a[i].inputs[j].path, b[i].inputs[j].path);
  }
}

}  // namespace
}  // namespace icestream::delivery::table
