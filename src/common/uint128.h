// Unsigned 128-bit integers as decimal strings: the Kinesis hash-key space.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace icestream {

__extension__ typedef unsigned __int128 uint128;  // GCC/Clang extension; -Wpedantic-clean

constexpr uint128 kUint128Max = ~uint128{0};

std::string ToDecimal(uint128 v);
// Parses a decimal string without sign or leading '+'. Returns nullopt on any non-digit,
// an empty string or a value >= 2^128.
std::optional<uint128> ParseDecimal128(std::string_view s);
// Reads 16 bytes as an unsigned big-endian integer.
uint128 FromBigEndian(const unsigned char* b16);

}  // namespace icestream
