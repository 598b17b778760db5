// Deterministic object names.
#include "delivery/object_naming.h"

#include <fmt/format.h>

#include "common/crypto.h"

namespace icestream::delivery {

uint64_t ShardNumber(std::string_view shard_id) {
  size_t i = shard_id.size();
  while (i > 0 && shard_id[i - 1] >= '0' && shard_id[i - 1] <= '9') --i;
  uint64_t v = 0;
  for (size_t k = i; k < shard_id.size() && k < i + 18; ++k) {
    v = v * 10 + static_cast<uint64_t>(shard_id[k] - '0');
  }
  return v;
}

std::string ObjectSuffix(uint64_t first_ordinal, std::string_view shard_id,
                         std::string_view channel_id, std::string_view first_sequence_number) {
  std::string seed = std::string(channel_id) + "/" + std::string(first_sequence_number);
  std::string hex = crypto::Hex(crypto::Sha256(seed)).substr(0, 11);
  return fmt::format("-{:018d}-{:06d}-{}", first_ordinal % 1000000000000000000ull,
                     ShardNumber(shard_id) % 1000000, hex);
}

}  // namespace icestream::delivery
