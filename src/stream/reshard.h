// Resharding as pure functions on the stream model (aws-api.md §B.6): SplitShard,
// MergeShards and UpdateShardCount's uniform scaling each take a stream's metadata and
// return the changed copy with the shards it created, or an error carrying AWS's text.
// No I/O and no locks: StreamManager opens the new shards' logs and commits the result.
//
// Shard ids are never reused: new shards take info.next_shard_index onwards. A closed
// shard keeps its range and gets closed_ms; its end offset is set by the caller (it knows
// where the log ends).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/uint128.h"
#include "stream/model.h"

namespace icestream::stream {

struct Reshard {
  StreamInfo next;
  std::vector<uint32_t> created;  // in creation order
};

// The shards of a new stream: `count` open shards splitting the hash space evenly.
std::vector<ShardInfo> InitialShards(uint32_t count, int64_t now_ms);

// Splits open shard `shard` at `new_starting_hash_key` (valid iff start+1 < k < end).
// Errors: kNotFound (no such shard), kFailedPrecondition (closed already),
// kInvalidArgument (key outside the shard).
Result<Reshard> Split(const StreamInfo& info, uint32_t shard, uint128 new_starting_hash_key,
                      int64_t now_ms, std::string_view account);

// Merges open, adjacent shards `shard` (the lower range) and `adjacent`.
Result<Reshard> Merge(const StreamInfo& info, uint32_t shard, uint32_t adjacent, int64_t now_ms,
                      std::string_view account);

struct ScaleLimits {
  uint32_t max_shards_per_stream = 10000;
  size_t max_scalings_per_day = 10;
};
// UpdateShardCount with UNIFORM_SCALING: splits and merges until the open shards split
// the hash space evenly into `target`. Errors: kResourceExhausted (10 scalings in 24 h,
// over the per-stream maximum), kInvalidArgument (target outside [current/2, 2*current]).
// Records the scaling in next.scaling_events_ms. Shards created and closed within the
// call (intermediate steps) hold no records.
Result<Reshard> ScaleUniformly(const StreamInfo& info, uint32_t target, int64_t now_ms,
                               std::string_view account, const ScaleLimits& limits = {});

}  // namespace icestream::stream
