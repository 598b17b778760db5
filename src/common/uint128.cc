// Decimal conversions for 128-bit hash keys.
#include "common/uint128.h"

#include <algorithm>

namespace icestream {

std::string ToDecimal(uint128 v) {
  if (v == 0) return "0";
  std::string s;
  while (v > 0) {
    s.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  std::reverse(s.begin(), s.end());
  return s;
}

std::optional<uint128> ParseDecimal128(std::string_view s) {
  if (s.empty() || s.size() > 39) return std::nullopt;
  uint128 v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    uint128 d = static_cast<uint128>(c - '0');
    if (v > (kUint128Max - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

uint128 FromBigEndian(const unsigned char* b) {
  uint128 v = 0;
  for (int i = 0; i < 16; ++i) v = (v << 8) | b[i];
  return v;
}

}  // namespace icestream
