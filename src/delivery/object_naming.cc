// Deterministic object names.
#include "delivery/object_naming.h"

#include <fmt/format.h>

#include "common/crypto.h"

namespace icestream::delivery {

std::string ObjectSuffix(uint64_t first_offset, uint32_t shard_index, std::string_view channel_id,
                         std::string_view first_sequence_number) {
  std::string seed = std::string(channel_id) + "/" + std::string(first_sequence_number);
  std::string hex = crypto::Hex(crypto::Sha256(seed)).substr(0, 11);
  return fmt::format("-{:018d}-{:06d}-{}", first_offset % 1000000000000000000ull,
                     shard_index % 1000000, hex);
}

}  // namespace icestream::delivery
