// Resharding on the model alone: splits, merges and uniform scaling keep the open shards a
// partition of the hash space, never reuse ids, and refuse what AWS refuses with its text.
#include "stream/reshard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>

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

constexpr std::string_view kAccount = "000000000000";

TEST(Reshard, SplitKeysAtTheEdgesOfTheHashSpace) {
  StreamInfo info = Stream(1);  // one shard: [0, 2^128-1]
  // AWS's rule is start+1 < k < end: the first two keys and the last one are refused.
  for (uint128 k : {uint128{0}, uint128{1}, kUint128Max}) {
    auto r = Split(info, 0, k, 2000, kAccount);
    EXPECT_STATUS(kInvalidArgument, r) << ToDecimal(k);
    EXPECT_EQ(r.status().message(),
              "NewStartingHashKey " + ToDecimal(k) +
                  " used in SplitShard() on shard shardId-000000000000 in stream s under account "
                  "000000000000 is not both greater than one plus the shard's StartingHashKey 0 "
                  "and less than the shard's EndingHashKey " +
                  ToDecimal(kUint128Max) + ".");
  }
  // The first and last keys AWS accepts leave shards of two keys and one.
  ASSERT_OK_AND_ASSIGN(auto low, Split(info, 0, 2, 2000, kAccount));
  EXPECT_EQ(low.next.FindShard(1)->range.start, 0);
  EXPECT_EQ(low.next.FindShard(1)->range.end, 1);
  EXPECT_EQ(low.next.FindShard(2)->range.start, 2);
  EXPECT_EQ(low.next.FindShard(2)->range.end, kUint128Max);
  ExpectPartition(low.next);
  ASSERT_OK_AND_ASSIGN(auto high, Split(info, 0, kUint128Max - 1, 2000, kAccount));
  EXPECT_EQ(high.next.FindShard(1)->range.end, kUint128Max - 2);
  EXPECT_EQ(high.next.FindShard(2)->range.start, kUint128Max - 1);
  EXPECT_EQ(high.next.FindShard(2)->range.end, kUint128Max);
  EXPECT_EQ(*high.next.FindShard(1)->parent, 0u);
  EXPECT_EQ(*high.next.FindShard(2)->parent, 0u);
  EXPECT_FALSE(high.next.FindShard(2)->adjacent_parent.has_value());
  EXPECT_EQ(high.next.FindShard(0)->closed_ms, 2000);
  ExpectPartition(high.next);
}

TEST(Reshard, SplitAtAShardsFirstKeyIsRefused) {
  StreamInfo info = Stream(3);
  const HashRange second = info.FindShard(1)->range;
  for (uint128 k : {second.start, second.start + 1, second.end, second.end + 1}) {
    auto r = Split(info, 1, k, 2000, kAccount);
    EXPECT_STATUS(kInvalidArgument, r) << ToDecimal(k);
    EXPECT_NE(r.status().message().find("StartingHashKey " + ToDecimal(second.start) +
                                        " and less than the shard's EndingHashKey " +
                                        ToDecimal(second.end) + "."),
              std::string::npos)
        << r.status().message();
  }
  ASSERT_OK(Split(info, 1, second.start + 2, 2000, kAccount));
  // A shard closed by a split is not eligible again, whatever the key.
  ASSERT_OK_AND_ASSIGN(auto r, Split(info, 1, second.start + 2, 2000, kAccount));
  auto again = Split(r.next, 1, second.start + 5, 3000, kAccount);
  EXPECT_STATUS(kFailedPrecondition, again);
  EXPECT_EQ(again.status().message(),
            "Shard shardId-000000000001 in stream s under account 000000000000 has already been "
            "merged or split, and thus is not eligible for merging or splitting.");
}

TEST(Reshard, MergeNeedsTwoOpenAdjacentShardsLowerFirst) {
  StreamInfo info = Stream(3);
  const std::string not_adjacent =
      " in stream s under account 000000000000 are not an adjacent pair of shards eligible for "
      "merging";
  EXPECT_EQ(Merge(info, 0, 2, 2000, kAccount).status().message(),
            "Shards shardId-000000000000 and shardId-000000000002" + not_adjacent);
  EXPECT_EQ(Merge(info, 1, 1, 2000, kAccount).status().message(),
            "Shards shardId-000000000001 and shardId-000000000001" + not_adjacent);
  // The last shard ends at 2^128-1: one past it is no shard's start (not 0, the first's).
  EXPECT_EQ(Merge(info, 2, 0, 2000, kAccount).status().message(),
            "Shards shardId-000000000002 and shardId-000000000000" + not_adjacent);
  EXPECT_EQ(Merge(info, 0, 7, 2000, kAccount).status().message(),
            "Could not find shard shardId-000000000007 in stream s under account 000000000000.");
  ASSERT_OK_AND_ASSIGN(auto r, Merge(info, 1, 2, 2000, kAccount));
  const ShardInfo* child = r.next.FindShard(3);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(*child->parent, 1u);
  EXPECT_EQ(*child->adjacent_parent, 2u);
  EXPECT_EQ(child->range.start, info.FindShard(1)->range.start);
  EXPECT_EQ(child->range.end, kUint128Max);
  EXPECT_EQ(r.next.next_shard_index, 4u);
  ExpectPartition(r.next);
  EXPECT_STATUS(kFailedPrecondition, Merge(r.next, 0, 1, 3000, kAccount));
}

// The open shards of `info` are EvenSplit(n), and every shard created has one parent, or
// two adjacent ones whose ranges it covers exactly.
void ExpectEvenLayoutWithSoundParents(const StreamInfo& info, uint32_t n) {
  std::vector<HashRange> open;
  for (const auto& s : info.shards) {
    if (s.open()) open.push_back(s.range);
  }
  std::sort(open.begin(), open.end(), [](auto& a, auto& b) { return a.start < b.start; });
  auto goal = EvenSplit(n);
  ASSERT_EQ(open.size(), goal.size());
  for (size_t i = 0; i < goal.size(); ++i) {
    EXPECT_EQ(open[i].start, goal[i].start) << i;
    EXPECT_EQ(open[i].end, goal[i].end) << i;
  }
  for (const auto& s : info.shards) {
    if (!s.parent) continue;
    const ShardInfo* p = info.FindShard(*s.parent);
    ASSERT_NE(p, nullptr);
    EXPECT_FALSE(p->open());
    if (!s.adjacent_parent) {
      EXPECT_TRUE(p->range.start <= s.range.start && s.range.end <= p->range.end);
      continue;
    }
    const ShardInfo* q = info.FindShard(*s.adjacent_parent);
    ASSERT_NE(q, nullptr);
    EXPECT_FALSE(q->open());
    EXPECT_EQ(p->range.end + 1, q->range.start);
    EXPECT_EQ(s.range.start, p->range.start);
    EXPECT_EQ(s.range.end, q->range.end);
  }
}

TEST(Reshard, UniformScalingDoublesAndHalves) {
  StreamInfo info = Stream(4);
  ASSERT_OK_AND_ASSIGN(auto doubled, ScaleUniformly(info, 8, 5000, kAccount));
  // Doubling splits each shard once, at the new boundary in its middle: no merges.
  EXPECT_EQ(doubled.created.size(), 8u);
  ExpectEvenLayoutWithSoundParents(doubled.next, 8);
  EXPECT_EQ(doubled.next.scaling_events_ms, (std::vector<int64_t>{5000}));
  ASSERT_OK_AND_ASSIGN(auto halved, ScaleUniformly(doubled.next, 4, 6000, kAccount));
  // Halving merges each pair: the old boundaries are the new ones.
  EXPECT_EQ(halved.created.size(), 4u);
  ExpectEvenLayoutWithSoundParents(halved.next, 4);
  ASSERT_OK_AND_ASSIGN(auto one, ScaleUniformly(Stream(2), 1, 5000, kAccount));
  ExpectEvenLayoutWithSoundParents(one.next, 1);
  ASSERT_OK_AND_ASSIGN(auto two, ScaleUniformly(one.next, 2, 6000, kAccount));
  ExpectEvenLayoutWithSoundParents(two.next, 2);
  // From an uneven layout (after a split by hand) to the even one.
  ASSERT_OK_AND_ASSIGN(auto uneven, Split(Stream(2), 0, 12345, 5000, kAccount));
  ASSERT_OK_AND_ASSIGN(auto evened, ScaleUniformly(uneven.next, 3, 6000, kAccount));
  ExpectEvenLayoutWithSoundParents(evened.next, 3);
}

TEST(Reshard, UniformScalingKeepsAwsLimits) {
  StreamInfo info = Stream(4);
  // Between half and double the open shard count.
  for (uint32_t target : {1u, 9u, 0u}) {
    auto r = ScaleUniformly(info, target, 5000, kAccount);
    EXPECT_STATUS(kInvalidArgument, r) << target;
    EXPECT_NE(r.status().message().find("from 4 to " + std::to_string(target) + " shards"),
              std::string::npos)
        << r.status().message();
  }
  ASSERT_OK(ScaleUniformly(info, 2, 5000, kAccount));
  ASSERT_OK(ScaleUniformly(info, 8, 5000, kAccount));
  // At most 10000 shards per stream.
  ScaleLimits small;
  small.max_shards_per_stream = 6;
  auto over = ScaleUniformly(info, 7, 5000, kAccount, small);
  EXPECT_STATUS(kResourceExhausted, over);
  EXPECT_EQ(over.status().message(), "A stream can have at most 6 shards.");
  ASSERT_OK(ScaleUniformly(info, 6, 5000, kAccount, small));
  // Ten scalings in a rolling 24 hours; the eleventh waits until the first is over a day old.
  const int64_t day = 24 * 3600 * 1000LL;
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK_AND_ASSIGN(auto r, ScaleUniformly(info, i % 2 ? 4 : 5, 1000 + i, kAccount));
    info = r.next;
  }
  auto eleventh = ScaleUniformly(info, 4, 1000 + day - 1, kAccount);
  EXPECT_STATUS(kResourceExhausted, eleventh);
  EXPECT_EQ(eleventh.status().message(),
            "Stream s under account 000000000000 has already been scaled 10 times in the last "
            "24 hours; try again later.");
  ASSERT_OK_AND_ASSIGN(auto later, ScaleUniformly(info, 4, 1000 + day + 1, kAccount));
  EXPECT_EQ(later.next.scaling_events_ms.size(), 10u);  // the first one aged out
}

}  // namespace
}  // namespace icestream::stream
