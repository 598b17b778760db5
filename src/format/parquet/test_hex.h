// Test helper: hex strings in, hexdumps out (byte-exact encoder tests).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace icestream::format::parquet::testing {

// "15 04 1c" -> bytes (spaces ignored).
inline std::string Unhex(std::string_view hex) {
  std::string out;
  int hi = -1;
  for (char c : hex) {
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      v = c - 'A' + 10;
    } else {
      continue;
    }
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<char>(hi * 16 + v));
      hi = -1;
    }
  }
  return out;
}

inline std::string Hexdump(std::string_view bytes) {
  std::string out;
  char buf[4];
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned char>(bytes[i]));
    if (i > 0) out.push_back(i % 16 == 0 ? '\n' : ' ');
    out += buf;
  }
  return out;
}

}  // namespace icestream::format::parquet::testing

// EXPECT_EQ on bytes with both sides shown as hexdumps.
#define EXPECT_BYTES_EQ(expected_hex, actual)                                            \
  EXPECT_EQ(::icestream::format::parquet::testing::Hexdump(                              \
                ::icestream::format::parquet::testing::Unhex(expected_hex)),             \
            ::icestream::format::parquet::testing::Hexdump(actual))
