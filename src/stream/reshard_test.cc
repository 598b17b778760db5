// Resharding on the model alone: splits, merges and uniform scaling keep the open shards a
// partition of the hash space, never reuse ids, and refuse what AWS refuses with its text.
#include "stream/reshard.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/testing/status_assertions.h"
#include "stream/hash_key.h"

namespace icestream::stream {
namespace {

StreamInfo Stream(uint32_t shards) {
  StreamInfo info;
  info.name = "s";
  info.shards = InitialShards(shards, 1000);
  info.next_shard_index = shards;
  return info;
}

// The open shards cover [0, 2^128-1] exactly, without gaps or overlaps.
void ExpectPartition(const StreamInfo& info) {
  std::vector<HashRange> open;
  for (const auto& s : info.shards) {
    if (s.open()) open.push_back(s.range);
  }
  std::sort(open.begin(), open.end(), [](auto& a, auto& b) { return a.start < b.start; });
  ASSERT_FALSE(open.empty());
  EXPECT_EQ(open.front().start, 0);
  EXPECT_EQ(open.back().end, kUint128Max);
  for (size_t i = 1; i < open.size(); ++i) EXPECT_EQ(open[i].start, open[i - 1].end + 1);
}

TEST(Reshard, SplitThenMergeBack) {
  StreamInfo info = Stream(2);
  uint128 mid = info.shards[0].range.end / 2;
  ASSERT_OK_AND_ASSIGN(auto split, Split(info, 0, mid, 2000, "000000000000"));
  EXPECT_EQ(split.created, (std::vector<uint32_t>{2, 3}));
  EXPECT_FALSE(split.next.FindShard(0)->open());
  EXPECT_EQ(*split.next.FindShard(2)->parent, 0u);
  ExpectPartition(split.next);
  EXPECT_TRUE(info.FindShard(0)->open()) << "the input is not changed";
  ASSERT_OK_AND_ASSIGN(auto merged, Merge(split.next, 2, 3, 3000, "000000000000"));
  EXPECT_EQ(merged.created, (std::vector<uint32_t>{4}));
  EXPECT_EQ(merged.next.FindShard(4)->range.start, info.shards[0].range.start);
  EXPECT_EQ(*merged.next.FindShard(4)->adjacent_parent, 3u);
  ExpectPartition(merged.next);
}

TEST(Reshard, RefusalsCarryAwsTexts) {
  StreamInfo info = Stream(2);
  auto bad = Split(info, 0, 1, 2000, "000000000000");
  EXPECT_STATUS(kInvalidArgument, bad);
  EXPECT_NE(bad.status().message().find("is not both greater than one plus the shard's "
                                        "StartingHashKey 0"),
            std::string::npos);
  EXPECT_EQ(Split(info, 9, 5, 2000, "000000000000").status().message(),
            "Could not find shard shardId-000000000009 in stream s under account 000000000000.");
  auto reversed = Merge(info, 1, 0, 2000, "000000000000");
  EXPECT_EQ(reversed.status().message(),
            "Shards shardId-000000000001 and shardId-000000000000 in stream s under account "
            "000000000000 are not an adjacent pair of shards eligible for merging");
  ASSERT_OK_AND_ASSIGN(auto split, Split(info, 0, 1000, 2000, "000000000000"));
  EXPECT_STATUS(kFailedPrecondition, Merge(split.next, 0, 1, 3000, "000000000000"));
}

TEST(Reshard, UniformScalingReachesAnEvenLayout) {
  StreamInfo info = Stream(3);
  for (uint32_t target : {6u, 4u, 2u, 3u}) {
    auto r = ScaleUniformly(info, target, 5000, "000000000000");
    ASSERT_OK(r) << target;
    auto goal = EvenSplit(target);
    std::vector<HashRange> open;
    for (const auto& s : r->next.shards) {
      if (s.open()) open.push_back(s.range);
    }
    std::sort(open.begin(), open.end(), [](auto& a, auto& b) { return a.start < b.start; });
    ASSERT_EQ(open.size(), goal.size()) << target;
    for (size_t i = 0; i < goal.size(); ++i) {
      EXPECT_EQ(open[i].start, goal[i].start);
      EXPECT_EQ(open[i].end, goal[i].end);
    }
    // Every child has at most two parents, and ids were never reused.
    std::vector<uint32_t> ids;
    for (const auto& s : r->next.shards) ids.push_back(s.index);
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
    info = r->next;
  }
  EXPECT_STATUS(kInvalidArgument, ScaleUniformly(info, 7, 6000, "000000000000"));
  ScaleLimits limits;
  limits.max_scalings_per_day = 4;
  EXPECT_STATUS(kResourceExhausted, ScaleUniformly(info, 4, 7000, "000000000000", limits));
}

}  // namespace
}  // namespace icestream::stream
