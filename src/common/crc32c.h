// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected), as used by the log frames.
// Uses the SSE4.2 crc32 instruction when the CPU has it (three independent lanes on long
// inputs), a slicing-by-8 table otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace icestream::crc32c {

// Extends `crc` (the CRC of earlier bytes; 0 to start) over data[0, n).
uint32_t Extend(uint32_t crc, const void* data, size_t n);

inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view s) { return Extend(0, s.data(), s.size()); }

// Stored CRCs are masked (LevelDB's trick) so that a CRC computed over bytes that
// themselves embed a CRC does not degenerate.
constexpr uint32_t kMaskDelta = 0xa282ead8u;
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
inline uint32_t Unmask(uint32_t masked) {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

// True when the hardware path is in use (for logs and benchmarks).
bool HardwareAccelerated();

}  // namespace icestream::crc32c
