// Frame, segment-header and index encodings (docs/formats/log.md).
#include "log/format.h"

#include <cstring>

#include "common/bytes.h"
#include "common/crc32c.h"

namespace icestream::log {

std::string EncodeSegmentHeader(uint64_t base_offset) {
  std::string h(kSegmentHeaderSize, '\0');
  std::memcpy(h.data(), kSegmentMagic, 8);
  PutFixed32(h.data() + 8, kFormatVersion);
  PutFixed32(h.data() + 12, 0);
  PutFixed64(h.data() + 16, base_offset);
  PutFixed32(h.data() + 24, crc32c::Mask(crc32c::Value(h.data(), 24)));
  PutFixed32(h.data() + 28, 0);
  return h;
}

Result<uint64_t> DecodeSegmentHeader(std::string_view b) {
  if (b.size() < kSegmentHeaderSize) return Corruption("segment header truncated");
  if (std::memcmp(b.data(), kSegmentMagic, 8) != 0) return Corruption("bad segment magic");
  if (GetFixed32(b.data() + 8) != kFormatVersion) {
    return Corruption("unsupported segment version " + std::to_string(GetFixed32(b.data() + 8)));
  }
  if (crc32c::Unmask(GetFixed32(b.data() + 24)) != crc32c::Value(b.data(), 24)) {
    return Corruption("segment header checksum mismatch");
  }
  return GetFixed64(b.data() + 16);
}

void EncodeFrameHead(char* dst, uint64_t offset, int64_t arrival_ms, std::string_view pk,
                     size_t data_len) {
  PutFixed32(dst + 4, static_cast<uint32_t>(kFrameLenFixed + pk.size() + data_len));
  PutFixed64(dst + 8, offset);
  PutFixed64(dst + 16, static_cast<uint64_t>(arrival_ms));
  PutFixed16(dst + 24, static_cast<uint16_t>(pk.size()));
  PutFixed16(dst + 26, 0);
  PutFixed32(dst + 28, static_cast<uint32_t>(data_len));
  if (!pk.empty()) std::memcpy(dst + kFrameHeaderSize, pk.data(), pk.size());
}

void SealFrame(char* frame) {
  uint32_t len = GetFixed32(frame + 4);
  PutFixed32(frame, crc32c::Mask(crc32c::Value(frame + 4, size_t{len} + 4)));
}

void MarkWriteStart(char* frame) {
  PutFixed16(frame + 26, static_cast<uint16_t>(GetFixed16(frame + 26) | kFrameFlagWriteStart));
  SealFrame(frame);
}

void EncodeFrame(char* dst, uint64_t offset, int64_t arrival_ms, std::string_view pk,
                 std::string_view data) {
  EncodeFrameHead(dst, offset, arrival_ms, pk, data.size());
  if (!data.empty()) std::memcpy(dst + kFrameHeaderSize + pk.size(), data.data(), data.size());
  SealFrame(dst);
}

FrameParse ParseFrame(std::string_view buf, FrameView* out) {
  if (buf.size() < kFrameHeaderSize) return FrameParse::kIncomplete;
  const char* p = buf.data();
  uint32_t len = GetFixed32(p + 4);
  uint16_t pk_len = GetFixed16(p + 24);
  uint32_t data_len = GetFixed32(p + 28);
  if (len < kFrameLenFixed || pk_len > kMaxPartitionKeyBytes || data_len > kMaxDataBytes ||
      size_t{len} != kFrameLenFixed + pk_len + data_len) {
    return FrameParse::kCorrupt;
  }
  size_t total = size_t{len} + 8;
  if (buf.size() < total) return FrameParse::kIncomplete;
  if (crc32c::Unmask(GetFixed32(p)) != crc32c::Value(p + 4, size_t{len} + 4)) {
    return FrameParse::kCorrupt;
  }
  out->offset = GetFixed64(p + 8);
  out->arrival_ms = static_cast<int64_t>(GetFixed64(p + 16));
  out->flags = GetFixed16(p + 26);
  out->partition_key = std::string_view(p + kFrameHeaderSize, pk_len);
  out->data = std::string_view(p + kFrameHeaderSize + pk_len, data_len);
  out->frame_size = total;
  return FrameParse::kOk;
}

std::string EncodeIndex(const SegmentIndex& idx) {
  std::string out;
  out.reserve(kIndexHeaderSize + idx.entries.size() * kIndexEntrySize + kIndexTrailerSize);
  out.append(kIndexMagic, 8);
  AppendFixed32(&out, kFormatVersion);
  AppendFixed32(&out, static_cast<uint32_t>(idx.entries.size()));
  AppendFixed64(&out, idx.base_offset);
  AppendFixed64(&out, idx.end_offset);
  for (const auto& e : idx.entries) {
    AppendFixed64(&out, e.offset);
    AppendFixed64(&out, e.position);
    AppendFixed64(&out, static_cast<uint64_t>(e.arrival_ms));
  }
  AppendFixed64(&out, idx.valid_bytes);
  AppendFixed64(&out, static_cast<uint64_t>(idx.last_arrival_ms));
  AppendFixed32(&out, crc32c::Mask(crc32c::Value(out.data(), out.size())));
  AppendFixed32(&out, 0);
  return out;
}

Result<SegmentIndex> DecodeIndex(std::string_view b) {
  if (b.size() < kIndexHeaderSize + kIndexTrailerSize) return Corruption("index truncated");
  if (std::memcmp(b.data(), kIndexMagic, 8) != 0) return Corruption("bad index magic");
  if (GetFixed32(b.data() + 8) != kFormatVersion) return Corruption("unsupported index version");
  uint32_t count = GetFixed32(b.data() + 12);
  size_t expect = kIndexHeaderSize + size_t{count} * kIndexEntrySize + kIndexTrailerSize;
  if (b.size() != expect) return Corruption("index size mismatch");
  size_t crc_pos = expect - 8;
  if (crc32c::Unmask(GetFixed32(b.data() + crc_pos)) != crc32c::Value(b.data(), crc_pos)) {
    return Corruption("index checksum mismatch");
  }
  SegmentIndex idx;
  idx.base_offset = GetFixed64(b.data() + 16);
  idx.end_offset = GetFixed64(b.data() + 24);
  idx.entries.resize(count);
  const char* p = b.data() + kIndexHeaderSize;
  for (uint32_t i = 0; i < count; ++i, p += kIndexEntrySize) {
    idx.entries[i].offset = GetFixed64(p);
    idx.entries[i].position = GetFixed64(p + 8);
    idx.entries[i].arrival_ms = static_cast<int64_t>(GetFixed64(p + 16));
  }
  idx.valid_bytes = GetFixed64(p);
  idx.last_arrival_ms = static_cast<int64_t>(GetFixed64(p + 8));
  return idx;
}

}  // namespace icestream::log
