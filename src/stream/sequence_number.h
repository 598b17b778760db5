// Kinesis sequence numbers: 56-digit decimal strings naming (stream, shard, position)
// (docs/formats/log.md, "Sequence numbers"; aws-api.md §C.1).
//
//   "4" | stream uid (15) | shard index (10) | position (20) | check (10)
//
// position = record offset + 1; 0 is the shard's StartingSequenceNumber. Fixed width, so
// string order equals numeric order, and within a shard both follow append order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace icestream::stream {

inline constexpr size_t kSequenceNumberDigits = 56;
inline constexpr uint64_t kMinStreamUid = 100000000000000ull;  // 10^14
inline constexpr uint64_t kMaxStreamUid = 999999999999999ull;  // 10^15 - 1

struct SequenceNumber {
  uint64_t stream_uid = 0;
  uint32_t shard_index = 0;
  uint64_t position = 0;

  std::string ToString() const;
  void AppendTo(std::string* out) const;  // appends ToString()
  // Parses a string produced by ToString. nullopt for anything else (wrong length,
  // non-digits, bad check digits).
  static std::optional<SequenceNumber> Parse(std::string_view s);

  static SequenceNumber ForRecord(uint64_t uid, uint32_t shard, uint64_t offset) {
    return {uid, shard, offset + 1};
  }
  static SequenceNumber ShardStart(uint64_t uid, uint32_t shard) { return {uid, shard, 0}; }
};

// Writes the sequence numbers of one shard's records, the same as AppendTo of each but
// cheaper for records in order (a GetRecords page, a delivery chunk): the stream and shard
// digits are written once, the position's digits are counted up in place from the last
// one, and the check's part of the hash that depends on stream and shard is made once.
class ShardSequenceWriter {
 public:
  ShardSequenceWriter(uint64_t uid, uint32_t shard);
  void Append(uint64_t position, std::string* out);
  void AppendRecord(uint64_t offset, std::string* out) { Append(offset + 1, out); }

 private:
  char buf_[kSequenceNumberDigits];
  uint64_t seed_;                   // the check's hash of stream and shard
  uint64_t position_ = UINT64_MAX;  // in buf_ (none yet)
};

}  // namespace icestream::stream
