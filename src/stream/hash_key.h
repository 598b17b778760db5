// The Kinesis hash-key space (aws-api.md §C.2): partition keys hash with MD5 to an
// unsigned 128-bit big-endian integer; shards own contiguous ranges of it.
#pragma once

#include <string_view>
#include <vector>

#include "common/uint128.h"

namespace icestream::stream {

struct HashRange {
  uint128 start = 0;
  uint128 end = 0;  // inclusive
  bool Contains(uint128 h) const { return h >= start && h <= end; }
  bool operator==(const HashRange&) const = default;
};

// MD5 of the key's UTF-8 bytes, read as an unsigned big-endian integer.
uint128 PartitionKeyHash(std::string_view partition_key);

// The even split AWS uses for n shards: width floor(2^128 / n), the last shard takes the
// remainder.
std::vector<HashRange> EvenSplit(size_t n);

}  // namespace icestream::stream
