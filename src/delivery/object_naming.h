// Names of the objects a channel writes that must come out the same when a batch is
// replayed: the 38-character unique suffix of S3 object keys and DLQ objects
// (kds-delivery-spec.md §3.4) is derived from the batch's first record, never from the
// clock or a random number.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace icestream::delivery {

inline constexpr size_t kSuffixLength = 38;

// "-<18-digit ordinal>-<6-digit shard number>-<11 hex>": deterministic in the shard and
// the first record (its ordinal, StreamRecord::ordinal, and sequence number), so a
// replayed batch rewrites the same key. The shard number is the digits of the shard id
// ("shardId-000000000007" → 7).
std::string ObjectSuffix(uint64_t first_ordinal, std::string_view shard_id,
                         std::string_view channel_id, std::string_view first_sequence_number);

// The number in a shard id: its trailing digits (AWS's ids are "shardId-" + 12 digits).
uint64_t ShardNumber(std::string_view shard_id);

}  // namespace icestream::delivery
