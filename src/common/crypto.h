// Thin wrappers over OpenSSL digests: MD5 (partition-key hashing), SHA-256 and
// HMAC-SHA256 (SigV4, iterator tokens), hex, and cryptographic random bytes.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace icestream::crypto {

using Md5Digest = std::array<uint8_t, 16>;
using Sha256Digest = std::array<uint8_t, 32>;

Md5Digest Md5(std::string_view data);
Sha256Digest Sha256(std::string_view data);
Sha256Digest HmacSha256(std::string_view key, std::string_view data);

std::string Hex(const uint8_t* data, size_t n);
template <size_t N>
std::string Hex(const std::array<uint8_t, N>& d) {
  return Hex(d.data(), N);
}
inline std::string AsString(const Sha256Digest& d) {
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

// Fills with cryptographically strong random bytes.
void RandomBytes(void* dst, size_t n);
uint64_t RandomU64();
// A random RFC 4122 version-4 UUID, lower-case canonical form.
std::string RandomUuid();

}  // namespace icestream::crypto
