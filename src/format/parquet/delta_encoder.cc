// DELTA_BINARY_PACKED and BYTE_STREAM_SPLIT encoders (Encodings.md).
#include "format/parquet/delta_encoder.h"

#include <algorithm>
#include <cstring>

namespace icestream::format::parquet {

namespace {

constexpr size_t kBlock = 128;
constexpr size_t kMiniblocks = 4;
constexpr size_t kPerMiniblock = kBlock / kMiniblocks;

// ULEB128 into dst; returns the bytes written (at most 10).
size_t Uleb(uint64_t v, unsigned char* dst) {
  size_t k = 0;
  while (v >= 0x80) {
    dst[k++] = static_cast<unsigned char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  dst[k++] = static_cast<unsigned char>(v);
  return k;
}

uint64_t Zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

// 32 values of `width` bits (1..64), LSB-first, into exactly 4 * width bytes at dst.
template <typename U>
void PackMiniblock(const U* v, int width, unsigned char* dst) {
  uint64_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < kPerMiniblock; ++i) {
    const auto x = static_cast<uint64_t>(v[i]);
    acc |= x << bits;  // bits < 64 here
    if (bits + width >= 64) {
      std::memcpy(dst, &acc, 8);
      dst += 8;
      const int spill = bits + width - 64;
      acc = spill > 0 ? x >> (width - spill) : 0;
      bits = spill;
    } else {
      bits += width;
    }
  }
  // 32 * width bits: a multiple of 64, or 32 bits left.
  if (bits > 0) std::memcpy(dst, &acc, static_cast<size_t>(bits) / 8);
}

// S: the column's signed type; U: its unsigned twin, in which deltas wrap.
template <typename S, typename U>
void EncodeDelta(const char* plain, size_t n, std::string* out) {
  auto load = [plain](size_t i) {
    U x;
    std::memcpy(&x, plain + i * sizeof(U), sizeof(U));
    return x;
  };
  unsigned char head[40];
  size_t h = Uleb(kBlock, head);
  h += Uleb(kMiniblocks, head + h);
  h += Uleb(n, head + h);
  h += Uleb(Zigzag(static_cast<S>(load(0))), head + h);
  out->append(reinterpret_cast<const char*>(head), h);

  // One block at most: min delta, widths, 4 miniblocks of up to 64-bit values.
  unsigned char block[10 + kMiniblocks + kBlock * 8];
  U d[kBlock];
  U prev = load(0);
  for (size_t i = 1; i < n; i += kBlock) {
    const size_t m = std::min(kBlock, n - i);
    S min_delta = 0;
    for (size_t j = 0; j < m; ++j) {
      const U x = load(i + j);
      d[j] = static_cast<U>(x - prev);
      prev = x;
      const auto s = static_cast<S>(d[j]);
      min_delta = j == 0 || s < min_delta ? s : min_delta;
    }
    for (size_t j = 0; j < m; ++j) d[j] = static_cast<U>(d[j] - static_cast<U>(min_delta));
    for (size_t j = m; j < kBlock; ++j) d[j] = 0;  // the last miniblock's padding
    size_t b = Uleb(Zigzag(min_delta), block);
    unsigned char* widths = block + b;
    b += kMiniblocks;
    for (size_t k = 0; k < kMiniblocks; ++k) {
      if (k * kPerMiniblock >= m) {
        widths[k] = 0;  // unused miniblock: no bytes
        continue;
      }
      U all = 0;
      for (size_t j = 0; j < kPerMiniblock; ++j) all |= d[k * kPerMiniblock + j];
      const int w = all == 0 ? 0 : 64 - __builtin_clzll(static_cast<uint64_t>(all));
      widths[k] = static_cast<unsigned char>(w);
      if (w == 0) continue;
      PackMiniblock(d + k * kPerMiniblock, w, block + b);
      b += kPerMiniblock * static_cast<size_t>(w) / 8;
    }
    out->append(reinterpret_cast<const char*>(block), b);
  }
}

}  // namespace

void EncodeDeltaBinaryPacked32(const char* plain, size_t n, std::string* out) {
  EncodeDelta<int32_t, uint32_t>(plain, n, out);
}

void EncodeDeltaBinaryPacked64(const char* plain, size_t n, std::string* out) {
  EncodeDelta<int64_t, uint64_t>(plain, n, out);
}

namespace {

template <size_t kWidth>
void SplitStreams(const char* plain, size_t n, char* dst) {
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < kWidth; ++k) dst[k * n + i] = plain[i * kWidth + k];
  }
}

}  // namespace

void EncodeByteStreamSplit(const char* plain, size_t n, size_t width, std::string* out) {
  const size_t start = out->size();
  out->resize(start + n * width);
  char* dst = out->data() + start;
  switch (width) {  // the widths in use, unrolled
    case 4:
      return SplitStreams<4>(plain, n, dst);
    case 8:
      return SplitStreams<8>(plain, n, dst);
    default:
      for (size_t i = 0; i < n; ++i) {
        for (size_t k = 0; k < width; ++k) dst[k * n + i] = plain[i * width + k];
      }
  }
}

}  // namespace icestream::format::parquet
