// Splitting a buffer into lines at '\n' without a library call per line: 64 bytes at a
// time become a bit mask of line ends (SSE2), walked bit by bit. For JSON lines of ~100
// bytes a memchr call per line was ~4% of `icestream convert`'s CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace icestream {

#if defined(__SSE2__)
// Bit i set when p[i] == '\n', for i in [0, 64). p[0, 64) must be readable.
inline uint64_t NewlineMask64(const char* p) {
  const __m128i nl = _mm_set1_epi8('\n');
  uint64_t mask = 0;
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    mask |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl))))
            << (16 * k);
  }
  return mask;
}
#endif

// Calls on_line(begin, end) for every line of [p, end), in order, without its '\n': the
// pieces between line ends, and the text after the last one when it is not empty (a
// buffer ending in '\n' has no empty last line; "a\n\nb" is "a", "", "b"). Reads nothing
// outside [p, end).
template <typename F>
inline void ForEachLine(const char* p, const char* end, F&& on_line) {
  const char* line = p;
  const char* q = p;
#if defined(__SSE2__)
  while (end - q >= 64) {
    uint64_t mask = NewlineMask64(q);
    while (mask != 0) {
      const char* nl = q + __builtin_ctzll(mask);
      on_line(line, nl);
      line = nl + 1;
      mask &= mask - 1;
    }
    q += 64;
  }
#endif
  while (q < end) {
    const auto* nl = static_cast<const char*>(std::memchr(q, '\n', static_cast<size_t>(end - q)));
    if (nl == nullptr) break;
    on_line(line, nl);
    line = q = nl + 1;
  }
  if (line < end) on_line(line, end);
}

}  // namespace icestream
