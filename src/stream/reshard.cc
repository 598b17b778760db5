// Resharding on the stream model (see reshard.h).
#include "stream/reshard.h"

#include <fmt/format.h>

#include <algorithm>

#include "stream/hash_key.h"

namespace icestream::stream {

namespace {

constexpr int64_t kDayMs = 24 * 3600 * 1000LL;

ShardInfo* Find(StreamInfo& info, uint32_t index) {
  for (auto& sh : info.shards) {
    if (sh.index == index) return &sh;
  }
  return nullptr;
}

// SplitShard and MergeShards name a missing shard this way (kinesalite's suite).
Status ShardNotFound(const StreamInfo& info, uint32_t shard, std::string_view account) {
  return CouldNotFindShardError(ShardIdString(shard), info.name, account);
}

Status NotEligible(const StreamInfo& info, uint32_t shard, std::string_view account) {
  return FailedPrecondition(fmt::format(
      "Shard {} in stream {} under account {} has already been merged or split, and thus is "
      "not eligible for merging or splitting.",
      ShardIdString(shard), info.name, account));
}

// Splits in place (the caller works on a copy).
Status SplitInPlace(StreamInfo& info, uint32_t shard, uint128 k, int64_t now,
                    std::string_view account, std::vector<uint32_t>* created) {
  ShardInfo* parent = Find(info, shard);
  if (!parent) return ShardNotFound(info, shard, account);
  if (!parent->open()) return NotEligible(info, shard, account);
  parent->closed_ms = now;
  ShardInfo left, right;
  left.index = info.next_shard_index++;
  right.index = info.next_shard_index++;
  left.parent = right.parent = shard;
  left.range = {parent->range.start, k - 1};
  right.range = {k, parent->range.end};
  left.created_ms = right.created_ms = now;
  info.shards.push_back(left);
  info.shards.push_back(right);
  created->push_back(left.index);
  created->push_back(right.index);
  return Status::OK();
}

Status MergeInPlace(StreamInfo& info, uint32_t a, uint32_t b, int64_t now, std::string_view account,
                    std::vector<uint32_t>* created) {
  ShardInfo* sa = Find(info, a);
  ShardInfo* sb = Find(info, b);
  for (auto [p, idx] : {std::pair{sa, a}, std::pair{sb, b}}) {
    if (!p) return ShardNotFound(info, idx, account);
    if (!p->open()) return NotEligible(info, idx, account);
  }
  // ShardToMerge must be the lower-range shard of the pair: AWS refuses the inverted
  // order with the same message (recorded by kinesalite's suite against AWS).
  bool adjacent = sa->range.end != kUint128Max && sa->range.end + 1 == sb->range.start;
  if (a == b || !adjacent) {
    return InvalidArgument(fmt::format(
        "Shards {} and {} in stream {} under account {} are not an adjacent pair of shards "
        "eligible for merging",
        ShardIdString(a), ShardIdString(b), info.name, account));
  }
  sa->closed_ms = now;
  sb->closed_ms = now;
  ShardInfo child;
  child.index = info.next_shard_index++;
  child.parent = a;
  child.adjacent_parent = b;
  child.range = {std::min(sa->range.start, sb->range.start),
                 std::max(sa->range.end, sb->range.end)};
  child.created_ms = now;
  info.shards.push_back(child);
  created->push_back(child.index);
  return Status::OK();
}

}  // namespace

std::vector<ShardInfo> InitialShards(uint32_t count, int64_t now_ms) {
  std::vector<ShardInfo> out;
  auto ranges = EvenSplit(count);
  out.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    ShardInfo shard;
    shard.index = i;
    shard.range = ranges[i];
    shard.created_ms = now_ms;
    out.push_back(shard);
  }
  return out;
}

Result<Reshard> Split(const StreamInfo& info, uint32_t shard, uint128 k, int64_t now_ms,
                      std::string_view account) {
  const ShardInfo* p = info.FindShard(shard);
  if (p && p->open() && !(k > p->range.start + 1 && k < p->range.end)) {
    return InvalidArgument(fmt::format(
        "NewStartingHashKey {} used in SplitShard() on shard {} in stream {} under account {} is "
        "not both greater than one plus the shard's StartingHashKey {} and less than the shard's "
        "EndingHashKey {}.",
        ToDecimal(k), ShardIdString(shard), info.name, account, ToDecimal(p->range.start),
        ToDecimal(p->range.end)));
  }
  Reshard r{info, {}};
  RETURN_IF_ERROR(SplitInPlace(r.next, shard, k, now_ms, account, &r.created));
  return r;
}

Result<Reshard> Merge(const StreamInfo& info, uint32_t shard, uint32_t adjacent, int64_t now_ms,
                      std::string_view account) {
  Reshard r{info, {}};
  RETURN_IF_ERROR(MergeInPlace(r.next, shard, adjacent, now_ms, account, &r.created));
  return r;
}

Result<Reshard> ScaleUniformly(const StreamInfo& info, uint32_t target, int64_t now_ms,
                               std::string_view account, const ScaleLimits& limits) {
  Reshard r{info, {}};
  StreamInfo& next = r.next;
  uint32_t current = static_cast<uint32_t>(info.OpenShardCount());
  std::erase_if(next.scaling_events_ms, [&](int64_t t) { return t < now_ms - kDayMs; });
  if (next.scaling_events_ms.size() >= limits.max_scalings_per_day) {
    return ResourceExhausted(fmt::format(
        "Stream {} under account {} has already been scaled {} times in the last 24 hours; try "
        "again later.",
        info.name, account, limits.max_scalings_per_day));
  }
  if (target > 2 * current || 2 * target < current) {
    return InvalidArgument(fmt::format(
        "UpdateShardCount cannot scale stream {} under account {} from {} to {} shards: the "
        "target must be between half and double the current open shard count.",
        info.name, account, current, target));
  }
  if (target > limits.max_shards_per_stream) {
    return ResourceExhausted(
        fmt::format("A stream can have at most {} shards.", limits.max_shards_per_stream));
  }
  next.scaling_events_ms.push_back(now_ms);
  auto goal = EvenSplit(target);
  // Split phase: cut open shards at every goal boundary that falls inside them.
  for (size_t j = 1; j < goal.size(); ++j) {
    uint128 b = goal[j].start;
    for (const auto& sh : next.shards) {
      if (sh.open() && sh.range.start < b && b <= sh.range.end) {
        uint32_t idx = sh.index;
        RETURN_IF_ERROR(SplitInPlace(next, idx, b, now_ms, account, &r.created));
        break;
      }
    }
  }
  // Merge phase: fold the open shards inside each goal range into one, pairwise.
  for (const auto& g : goal) {
    std::vector<std::pair<uint128, uint32_t>> inside;
    for (const auto& sh : next.shards) {
      if (sh.open() && sh.range.start >= g.start && sh.range.end <= g.end) {
        inside.emplace_back(sh.range.start, sh.index);
      }
    }
    std::sort(inside.begin(), inside.end());
    if (inside.empty()) continue;
    uint32_t acc = inside[0].second;
    for (size_t i = 1; i < inside.size(); ++i) {
      RETURN_IF_ERROR(MergeInPlace(next, acc, inside[i].second, now_ms, account, &r.created));
      acc = r.created.back();
    }
  }
  return r;
}

}  // namespace icestream::stream
