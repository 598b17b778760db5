// CRC-32C: hardware (SSE4.2, three lanes) and portable (slicing-by-8) implementations.
#include "common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

namespace icestream::crc32c {
namespace {

constexpr uint32_t kPoly = 0x82f63b78u;  // reflected 0x1EDC6F41

struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  constexpr Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};
constexpr Tables kTables;

uint32_t ExtendPortable(uint32_t crc, const uint8_t* p, size_t n) {
  uint32_t c = ~crc;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    w ^= c;
    c = kTables.t[7][w & 0xff] ^ kTables.t[6][(w >> 8) & 0xff] ^ kTables.t[5][(w >> 16) & 0xff] ^
        kTables.t[4][(w >> 24) & 0xff] ^ kTables.t[3][(w >> 32) & 0xff] ^
        kTables.t[2][(w >> 40) & 0xff] ^ kTables.t[1][(w >> 48) & 0xff] ^
        kTables.t[0][(w >> 56) & 0xff];
    p += 8;
    n -= 8;
  }
  while (n--) c = (c >> 8) ^ kTables.t[0][(c ^ *p++) & 0xff];
  return ~c;
}

#if defined(__x86_64__)
// The crc32 instruction takes 3 cycles and issues one per cycle: one dependent chain of
// them reaches a third of what the core can do. Long inputs are cut into three lanes of
// equal length L, run side by side, and joined again. The raw register update is linear:
// state(s, D) = Shift_|D|(s) ^ state(0, D), with Shift_L what L zero bytes do to a state,
// so three lanes A, B, C started at (s, 0, 0) give state(s, ABC) =
// Shift_L(Shift_L(a) ^ b) ^ c. Shift_L is a linear map on 32 bits, applied here as four
// byte tables (built once from what L zero bytes do to each of the 32 unit states).
struct ShiftTable {
  std::array<std::array<uint32_t, 256>, 4> t{};
  explicit ShiftTable(size_t zeros) {
    uint32_t unit[32];
    for (int j = 0; j < 32; ++j) {
      uint32_t c = 1u << j;
      for (size_t i = 0; i < zeros; ++i) c = (c >> 8) ^ kTables.t[0][c & 0xff];
      unit[j] = c;
    }
    for (int k = 0; k < 4; ++k) {
      for (uint32_t b = 0; b < 256; ++b) {
        uint32_t v = 0;
        for (int i = 0; i < 8; ++i) {
          if (b & (1u << i)) v ^= unit[8 * k + i];
        }
        t[k][b] = v;
      }
    }
  }
  uint32_t Apply(uint32_t c) const {
    return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
  }
};

// Lane lengths: long inputs (whole segments) in 3 x 4 KiB rounds, a log frame of ~1 KiB in
// 3 x 128-byte rounds and its rest in one lane.
constexpr size_t kLongLane = 4096, kShortLane = 128;
const ShiftTable kShiftLong(kLongLane), kShiftShort(kShortLane);

__attribute__((target("sse4.2"))) uint64_t ThreeLanes(uint64_t c, const uint8_t* p, size_t lane,
                                                      const ShiftTable& shift) {
  uint64_t c1 = 0, c2 = 0;
  const uint8_t* b = p + lane;
  const uint8_t* d = p + 2 * lane;
  for (size_t i = 0; i < lane; i += 8) {
    uint64_t w0, w1, w2;
    std::memcpy(&w0, p + i, 8);
    std::memcpy(&w1, b + i, 8);
    std::memcpy(&w2, d + i, 8);
    c = _mm_crc32_u64(c, w0);
    c1 = _mm_crc32_u64(c1, w1);
    c2 = _mm_crc32_u64(c2, w2);
  }
  return shift.Apply(shift.Apply(static_cast<uint32_t>(c)) ^ static_cast<uint32_t>(c1)) ^
         static_cast<uint32_t>(c2);
}

__attribute__((target("sse4.2"))) uint32_t ExtendHardware(uint32_t crc, const uint8_t* p,
                                                          size_t n) {
  uint64_t c = ~crc;
  while (n >= 3 * kLongLane) {
    c = ThreeLanes(c, p, kLongLane, kShiftLong);
    p += 3 * kLongLane;
    n -= 3 * kLongLane;
  }
  while (n >= 3 * kShortLane) {
    c = ThreeLanes(c, p, kShortLane, kShiftShort);
    p += 3 * kShortLane;
    n -= 3 * kShortLane;
  }
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

bool DetectSse42() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return (c & bit_SSE4_2) != 0;
}
const bool kHasSse42 = DetectSse42();
#endif

}  // namespace

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  if (kHasSse42) return ExtendHardware(crc, p, n);
#endif
  return ExtendPortable(crc, p, n);
}

bool HardwareAccelerated() {
#if defined(__x86_64__)
  return kHasSse42;
#else
  return false;
#endif
}

}  // namespace icestream::crc32c
