// Partition-key hashing and even hash-range splits.
#include "stream/hash_key.h"

#include "common/crypto.h"

namespace icestream::stream {

uint128 PartitionKeyHash(std::string_view partition_key) {
  auto d = crypto::Md5(partition_key);
  return FromBigEndian(d.data());
}

std::vector<HashRange> EvenSplit(size_t n) {
  std::vector<HashRange> out;
  if (n == 0) return out;
  // floor(2^128 / n) without a 129-bit number: (2^128 - 1) / n, plus one when n divides
  // 2^128 exactly (n a power of two), i.e. when (2^128 - 1) % n == n - 1.
  uint128 w = kUint128Max / n;
  if (kUint128Max % n == n - 1) w += 1;
  for (size_t i = 0; i < n; ++i) {
    HashRange r;
    r.start = w * i;
    r.end = (i + 1 == n) ? kUint128Max : w * (i + 1) - 1;
    out.push_back(r);
  }
  return out;
}

}  // namespace icestream::stream
