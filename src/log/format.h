// Byte layout of segment files, frames and sparse-index files (docs/formats/log.md).
// Pure functions over byte buffers: no I/O here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace icestream::log {

inline constexpr char kSegmentMagic[8] = {'I', 'S', 'L', 'O', 'G', 'S', 'E', 'G'};
inline constexpr char kIndexMagic[8] = {'I', 'S', 'L', 'O', 'G', 'I', 'D', 'X'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kSegmentHeaderSize = 32;
// crc(4) + len(4) + offset(8) + arrival(8) + pk_len(2) + flags(2) + data_len(4).
inline constexpr size_t kFrameHeaderSize = 32;
// Bytes counted by `len` before the key and data.
inline constexpr size_t kFrameLenFixed = 24;
inline constexpr size_t kMaxPartitionKeyBytes = 1024;
inline constexpr size_t kMaxDataBytes = 10 * 1024 * 1024;
inline constexpr size_t kIndexHeaderSize = 32;
inline constexpr size_t kIndexEntrySize = 24;
inline constexpr size_t kIndexTrailerSize = 24;

// Size of the frame holding a record with these key and data sizes.
constexpr size_t FrameSize(size_t pk_len, size_t data_len) {
  return kFrameHeaderSize + pk_len + data_len;
}

std::string EncodeSegmentHeader(uint64_t base_offset);
// Returns the base offset, or Corruption.
Result<uint64_t> DecodeSegmentHeader(std::string_view bytes);

// Writes a complete frame into dst (FrameSize(pk.size(), data.size()) bytes).
void EncodeFrame(char* dst, uint64_t offset, int64_t arrival_ms, std::string_view pk,
                 std::string_view data);

// Writes the frame header and key, leaving `data_len` bytes at dst + kFrameHeaderSize +
// pk.size() for the caller to fill, after which SealFrame computes the CRC. Lets the
// caller decode base64 straight into the frame.
void EncodeFrameHead(char* dst, uint64_t offset, int64_t arrival_ms, std::string_view pk,
                     size_t data_len);
void SealFrame(char* frame);

// Frame flag bit 0: the first frame of one write (one pwrite + fdatasync of the group
// commit). A write starts only after the one before it was synced, so an intact
// write-start frame after damage proves the damaged write was durable (recovery tells a
// torn last write from corruption by it).
inline constexpr uint16_t kFrameFlagWriteStart = 1;
// Sets kFrameFlagWriteStart on a sealed frame and seals it again.
void MarkWriteStart(char* frame);

struct FrameView {
  uint64_t offset = 0;
  int64_t arrival_ms = 0;
  std::string_view partition_key;
  std::string_view data;
  size_t frame_size = 0;
  uint16_t flags = 0;
};

enum class FrameParse { kOk, kIncomplete, kCorrupt };

// Parses the frame at the start of `buf`. kIncomplete: `buf` ends inside the frame
// (need more bytes, or a torn tail at end of file). kCorrupt: impossible length or CRC
// mismatch. The view points into `buf`.
FrameParse ParseFrame(std::string_view buf, FrameView* out);

struct IndexEntry {
  uint64_t offset = 0;
  uint64_t position = 0;  // file position of the frame
  int64_t arrival_ms = 0;
};

struct SegmentIndex {
  uint64_t base_offset = 0;
  uint64_t end_offset = 0;  // offset after the last record
  uint64_t valid_bytes = 0;  // file length that holds valid frames
  int64_t last_arrival_ms = 0;
  std::vector<IndexEntry> entries;
};

std::string EncodeIndex(const SegmentIndex& index);
Result<SegmentIndex> DecodeIndex(std::string_view bytes);

}  // namespace icestream::log
