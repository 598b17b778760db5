// Base64 codec. Table driven, four characters at a time; decoding validates every
// character because invalid input must become a SerializationException, never garbage.
#include "common/base64.h"

#include <array>
#include <cstring>

namespace icestream::base64 {
namespace {

constexpr char kStd[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr char kUrl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

constexpr uint32_t kBad = 0xffffffffu;

// Four tables: decoded value of a character pre-shifted into its place in the 24-bit
// group, so a group decodes with four lookups and three ORs; kBad marks invalid input.
struct DecodeTables {
  std::array<std::array<uint32_t, 256>, 4> t{};
  constexpr explicit DecodeTables(const char* alphabet) {
    for (auto& tab : t) tab.fill(kBad);
    for (uint32_t i = 0; i < 64; ++i) {
      auto c = static_cast<uint8_t>(alphabet[i]);
      t[0][c] = i << 18;
      t[1][c] = i << 12;
      t[2][c] = i << 6;
      t[3][c] = i;
    }
  }
};
constexpr DecodeTables kStdDec(kStd);
constexpr DecodeTables kUrlDec(kUrl);

void EncodeWith(const char* alphabet, const uint8_t* p, size_t n, char* out, bool pad) {
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8) | p[i + 2];
    *out++ = alphabet[v >> 18];
    *out++ = alphabet[(v >> 12) & 63];
    *out++ = alphabet[(v >> 6) & 63];
    *out++ = alphabet[v & 63];
  }
  size_t rest = n - i;
  if (rest == 1) {
    uint32_t v = uint32_t{p[i]} << 16;
    *out++ = alphabet[v >> 18];
    *out++ = alphabet[(v >> 12) & 63];
    if (pad) {
      *out++ = '=';
      *out++ = '=';
    }
  } else if (rest == 2) {
    uint32_t v = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8);
    *out++ = alphabet[v >> 18];
    *out++ = alphabet[(v >> 12) & 63];
    *out++ = alphabet[(v >> 6) & 63];
    if (pad) *out++ = '=';
  }
}

// Decodes full groups of `text` (length multiple of 4, no padding) into dst.
bool DecodeGroups(const DecodeTables& d, const uint8_t* s, size_t n, uint8_t* dst) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; i += 4) {
    uint32_t v = d.t[0][s[i]] | d.t[1][s[i + 1]] | d.t[2][s[i + 2]] | d.t[3][s[i + 3]];
    bad |= v & 0xff000000u;  // any kBad sets the top byte
    dst[0] = static_cast<uint8_t>(v >> 16);
    dst[1] = static_cast<uint8_t>(v >> 8);
    dst[2] = static_cast<uint8_t>(v);
    dst += 3;
  }
  return bad == 0;
}

// Decodes the final group of 2 or 3 significant characters.
bool DecodeTail(const DecodeTables& d, const uint8_t* s, size_t sig, uint8_t* dst) {
  uint32_t v = d.t[0][s[0]] | d.t[1][s[1]];
  if (sig == 3) v |= d.t[2][s[2]];
  if (v & 0xff000000u) return false;
  dst[0] = static_cast<uint8_t>(v >> 16);
  if (sig == 3) dst[1] = static_cast<uint8_t>(v >> 8);
  return true;
}

}  // namespace

size_t EncodedSize(size_t n) { return (n + 2) / 3 * 4; }

void EncodeTo(const void* data, size_t n, char* dst) {
  EncodeWith(kStd, static_cast<const uint8_t*>(data), n, dst, true);
}

void EncodeAppend(const void* data, size_t n, std::string* out) {
  size_t old = out->size();
  out->resize(old + EncodedSize(n));
  EncodeTo(data, n, out->data() + old);
}

std::string Encode(std::string_view data) {
  std::string out;
  EncodeAppend(data.data(), data.size(), &out);
  return out;
}

std::optional<size_t> DecodedSize(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  size_t n = text.size() / 4 * 3;
  if (!text.empty() && text.back() == '=') --n;
  if (text.size() >= 2 && text[text.size() - 2] == '=') --n;
  return n;
}

bool DecodeTo(std::string_view text, uint8_t* dst) {
  if (text.size() % 4 != 0) return false;
  if (text.empty()) return true;
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  size_t n = text.size();
  size_t pad = 0;
  if (s[n - 1] == '=') pad = (s[n - 2] == '=') ? 2 : 1;
  size_t full = pad ? n - 4 : n;
  if (!DecodeGroups(kStdDec, s, full, dst)) return false;
  if (pad) return DecodeTail(kStdDec, s + full, 4 - pad, dst + full / 4 * 3);
  return true;
}

std::optional<std::string> Decode(std::string_view text) {
  auto size = DecodedSize(text);
  if (!size) return std::nullopt;
  std::string out(*size, '\0');
  if (!DecodeTo(text, reinterpret_cast<uint8_t*>(out.data()))) return std::nullopt;
  return out;
}

std::string EncodeUrl(std::string_view data) {
  std::string out;
  out.resize(EncodedSize(data.size()));
  EncodeWith(kUrl, reinterpret_cast<const uint8_t*>(data.data()), data.size(), out.data(),
             false);
  size_t n = data.size();
  size_t len = n / 3 * 4 + (n % 3 == 0 ? 0 : n % 3 + 1);
  out.resize(len);
  return out;
}

std::optional<std::string> DecodeUrl(std::string_view text) {
  size_t rem = text.size() % 4;
  if (rem == 1) return std::nullopt;
  size_t full = text.size() - rem;
  std::string out(full / 4 * 3 + (rem ? rem - 1 : 0), '\0');
  auto* dst = reinterpret_cast<uint8_t*>(out.data());
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  if (!DecodeGroups(kUrlDec, s, full, dst)) return std::nullopt;
  if (rem && !DecodeTail(kUrlDec, s + full, rem, dst + full / 4 * 3)) return std::nullopt;
  return out;
}

}  // namespace icestream::base64
