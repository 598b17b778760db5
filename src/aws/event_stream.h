// The `application/vnd.amazon.eventstream` message framing of AWS event streams
// (SubscribeToShard; aws-api.md §A.10):
//
//   +-------------+--------------+-------------+---------+---------+-------------+
//   | total len   | headers len  | prelude CRC | headers | payload | message CRC |
//   | u32 BE      | u32 BE       | CRC32 of    |         |         | CRC32 of    |
//   |             |              | the 8 bytes |         |         | all before  |
//   +-------------+--------------+-------------+---------+---------+-------------+
//   header: name len u8 · name · type u8 (7 = string) · value len u16 BE · value
//
// CRC32 is the IEEE/zlib polynomial. Only string-valued headers are written; the decoder
// (for tests and fuzzing) reads every header type. Thread-safety: free functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace icestream::aws {

using EventHeaders = std::vector<std::pair<std::string, std::string>>;

uint32_t Crc32(std::string_view data, uint32_t crc = 0);

// One framed message with string headers.
std::string EncodeEventMessage(const EventHeaders& headers, std::string_view payload);

struct EventMessage {
  EventHeaders headers;  // values of non-string headers are their raw bytes
  std::string payload;
};
// Decodes the message at the start of `in`; on success sets *consumed. nullopt for a
// truncated or damaged message (bad lengths, CRCs or header types).
std::optional<EventMessage> DecodeEventMessage(std::string_view in, size_t* consumed);

}  // namespace icestream::aws
