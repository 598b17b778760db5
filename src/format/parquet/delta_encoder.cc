// DELTA_BINARY_PACKED, DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT encoders (Encodings.md).
#include "format/parquet/delta_encoder.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// Bytes that the `width`-byte values at a and b share from their start.
size_t CommonPrefix(const char* a, const char* b, size_t width) {
  size_t k = 0;
  // Big-endian decimals differ late: compare 8 bytes at a time (the first differing
  // byte is the lowest set byte of the XOR of the two little-endian loads).
  for (; k + 8 <= width; k += 8) {
    uint64_t x, y;
    std::memcpy(&x, a + k, 8);
    std::memcpy(&y, b + k, 8);
    if (x != y) return k + static_cast<size_t>(__builtin_ctzll(x ^ y)) / 8;
  }
  while (k < width && a[k] == b[k]) ++k;
  return k;
}

}  // namespace

bool EncodeDeltaByteArrayFixed(const char* plain, size_t n, size_t width, size_t limit,
                               std::string* out) {
  // Lengths as PLAIN INT32 (little-endian), the input of the DELTA_BINARY_PACKED encoder.
  std::vector<int32_t> prefix(n), suffix(n);
  size_t suffix_bytes = width;
  prefix[0] = 0;
  suffix[0] = static_cast<int32_t>(width);
  for (size_t i = 1; i < n; ++i) {
    const size_t p = CommonPrefix(plain + (i - 1) * width, plain + i * width, width);
    prefix[i] = static_cast<int32_t>(p);
    suffix[i] = static_cast<int32_t>(width - p);
    suffix_bytes += width - p;
  }
  // The two length streams pack to a few bits per value; give up early when the suffixes
  // alone are as big as the limit (random values: UUID-like decimals).
  if (suffix_bytes >= limit) return false;
  const size_t start = out->size();
  EncodeDeltaBinaryPacked32(reinterpret_cast<const char*>(prefix.data()), n, out);
  EncodeDeltaBinaryPacked32(reinterpret_cast<const char*>(suffix.data()), n, out);
  if (out->size() - start + suffix_bytes >= limit) {
    out->resize(start);
    return false;
  }
  out->resize(out->size() + suffix_bytes);
  char* dst = out->data() + out->size() - suffix_bytes;
  for (size_t i = 0; i < n; ++i) {
    const auto p = static_cast<size_t>(prefix[i]);
    std::memcpy(dst, plain + i * width + p, width - p);
    dst += width - p;
  }
  return true;
}

namespace {

template <size_t kWidth>
void SplitStreams(const char* plain, size_t n, char* dst, size_t from = 0) {
  for (size_t i = from; i < n; ++i) {
    for (size_t k = 0; k < kWidth; ++k) dst[k * n + i] = plain[i * kWidth + k];
  }
}

#if defined(__SSE2__)
// 16 values at a time: their kWidth * 16 bytes in kWidth registers are a 16 x kWidth
// byte matrix to transpose. A byte's address in the block, value j (4 bits) then byte k
// (log2 kWidth bits), must become k then j: a rotation of the address bits by 4. One
// round of unpacklo/unpackhi_epi8 over registers i and i + kWidth/2 rotates the address
// by one bit (the register number's top bit becomes the byte's lowest), so four rounds
// leave register k holding byte k of the 16 values, in order.
template <size_t kWidth>
void SplitStreamsSse2(const char* plain, size_t n, char* dst) {
  constexpr size_t kHalf = kWidth / 2;
  const size_t blocks = n / 16;
  for (size_t b = 0; b < blocks; ++b) {
    __m128i r[kWidth], t[kWidth];
    // Fully unrolled, so that the arrays live in registers.
#pragma GCC unroll 8
    for (size_t i = 0; i < kWidth; ++i) {
      r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plain + (b * kWidth + i) * 16));
    }
#pragma GCC unroll 4
    for (int round = 0; round < 4; ++round) {
#pragma GCC unroll 4
      for (size_t i = 0; i < kHalf; ++i) {
        t[2 * i] = _mm_unpacklo_epi8(r[i], r[i + kHalf]);
        t[2 * i + 1] = _mm_unpackhi_epi8(r[i], r[i + kHalf]);
      }
#pragma GCC unroll 8
      for (size_t i = 0; i < kWidth; ++i) r[i] = t[i];
    }
#pragma GCC unroll 8
    for (size_t k = 0; k < kWidth; ++k) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + k * n + b * 16), r[k]);
    }
  }
  SplitStreams<kWidth>(plain, n, dst, blocks * 16);
}
#endif

}  // namespace

void EncodeByteStreamSplit(const char* plain, size_t n, size_t width, std::string* out) {
  const size_t start = out->size();
  out->resize(start + n * width);
  char* dst = out->data() + start;
  switch (width) {  // the widths in use, unrolled
#if defined(__SSE2__)
    case 4:
      return SplitStreamsSse2<4>(plain, n, dst);
    case 8:
      return SplitStreamsSse2<8>(plain, n, dst);
#else
    case 4:
      return SplitStreams<4>(plain, n, dst);
    case 8:
      return SplitStreams<8>(plain, n, dst);
#endif
    default:
      for (size_t i = 0; i < n; ++i) {
        for (size_t k = 0; k < width; ++k) dst[k * n + i] = plain[i * width + k];
      }
  }
}

}  // namespace icestream::format::parquet
