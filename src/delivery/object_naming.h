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

// "-<18-digit first offset>-<6-digit shard>-<11 hex>": deterministic in the shard and
// the first record's sequence number, so a replayed batch rewrites the same key.
std::string ObjectSuffix(uint64_t first_offset, uint32_t shard_index, std::string_view channel_id,
                         std::string_view first_sequence_number);

}  // namespace icestream::delivery
