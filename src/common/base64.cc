// Base64 codec. Table driven, four characters at a time; decoding validates every
// character because invalid input must become a SerializationException, never garbage.
// Decoding, the ingest path's main cost (every PutRecords payload), also has an AVX2
// kernel for 32 characters at a time, chosen at run time.
#include "common/base64.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ICESTREAM_BASE64_AVX2 1
#endif

namespace icestream::base64 {
namespace {

constexpr char kStd[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr char kUrl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

constexpr uint32_t kBad = 0xffffffffu;

// Four tables: decoded value of a character pre-shifted into its place in the 24-bit
// group, so a group decodes with four lookups and three ORs; kBad marks invalid input.
struct DecodeTables {
  std::array<std::array<uint32_t, 256>, 4> t{};
  char c62, c63;  // the alphabet's two non-alphanumeric characters (values 62 and 63)
  constexpr explicit DecodeTables(const char* alphabet) : c62(alphabet[62]), c63(alphabet[63]) {
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

#ifdef ICESTREAM_BASE64_AVX2
// Decodes 32 characters at a time while at least 32 remain; returns how many characters
// it consumed (a multiple of 32), or SIZE_MAX when one of them is not in the alphabet.
// Each byte is classified by ranges (A-Z, a-z, 0-9 and the two extra characters; bytes
// >= 0x80 are negative as signed and match nothing), shifted to its 6-bit value, then
// each 4-byte group is packed to 24 bits with two multiply-adds and the 3 bytes are
// moved into place.
__attribute__((target("avx2"))) inline __m256i InRange(__m256i x, char lo, char hi) {
  return _mm256_and_si256(_mm256_cmpgt_epi8(x, _mm256_set1_epi8(static_cast<char>(lo - 1))),
                          _mm256_cmpgt_epi8(_mm256_set1_epi8(static_cast<char>(hi + 1)), x));
}

__attribute__((target("avx2"))) size_t DecodeAvx2(const uint8_t* s, size_t n, uint8_t* dst,
                                                  char c62, char c63) {
  const __m256i pack_pairs = _mm256_set1_epi32(0x01400140);  // (a << 6) | b per 16 bits
  const __m256i pack_quads = _mm256_set1_epi32(0x00011000);  // (ab << 12) | cd per 32 bits
  // Per 128-bit lane: the three value bytes of each 32-bit group, most significant first.
  const __m256i order = _mm256_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1,
                                         2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
  const __m256i compact = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    __m256i upper = InRange(x, 'A', 'Z');
    __m256i lower = InRange(x, 'a', 'z');
    __m256i digit = InRange(x, '0', '9');
    __m256i e62 = _mm256_cmpeq_epi8(x, _mm256_set1_epi8(c62));
    __m256i e63 = _mm256_cmpeq_epi8(x, _mm256_set1_epi8(c63));
    __m256i valid = _mm256_or_si256(_mm256_or_si256(upper, lower),
                                    _mm256_or_si256(digit, _mm256_or_si256(e62, e63)));
    if (_mm256_movemask_epi8(valid) != -1) return SIZE_MAX;
    __m256i shift = _mm256_or_si256(
        _mm256_or_si256(_mm256_and_si256(upper, _mm256_set1_epi8(-'A')),
                        _mm256_and_si256(lower, _mm256_set1_epi8(static_cast<char>(26 - 'a')))),
        _mm256_or_si256(
            _mm256_and_si256(digit, _mm256_set1_epi8(static_cast<char>(52 - '0'))),
            _mm256_or_si256(_mm256_and_si256(e62, _mm256_set1_epi8(static_cast<char>(62 - c62))),
                            _mm256_and_si256(e63, _mm256_set1_epi8(static_cast<char>(63 - c63))))));
    __m256i v = _mm256_add_epi8(x, shift);
    v = _mm256_maddubs_epi16(v, pack_pairs);
    v = _mm256_madd_epi16(v, pack_quads);
    v = _mm256_shuffle_epi8(v, order);
    v = _mm256_permutevar8x32_epi32(v, compact);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_castsi256_si128(v));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + 16), _mm256_extracti128_si256(v, 1));
    dst += 24;
  }
  return i;
}

bool HaveAvx2() {
  static const bool have = __builtin_cpu_supports("avx2");
  return have;
}
#endif

// Decodes full groups of `text` (length multiple of 4, no padding) into dst.
bool DecodeGroups(const DecodeTables& d, const uint8_t* s, size_t n, uint8_t* dst) {
#ifdef ICESTREAM_BASE64_AVX2
  if (n >= 32 && HaveAvx2()) {
    size_t done = DecodeAvx2(s, n, dst, d.c62, d.c63);
    if (done == SIZE_MAX) return false;
    s += done;
    n -= done;
    dst += done / 4 * 3;
  }
#endif
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
  // Canonical form only (RFC 4648 §3.5): the bits below the last whole byte are zero, so
  // each byte string has exactly one encoding ("+/+=" is refused, "+/8=" accepted).
  if (v & (sig == 3 ? 0xffu : 0xffffu)) return false;
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

std::string DecodeError(std::string_view text) {
  if (text.size() % 4 != 0) {
    return "Base64 encoded length is expected a multiple of 4 bytes but found: " +
           std::to_string(text.size());
  }
  size_t n = text.size();
  size_t pad = 0;
  if (n >= 1 && text[n - 1] == '=') pad = (n >= 2 && text[n - 2] == '=') ? 2 : 1;
  for (size_t i = 0; i < n - pad; ++i) {
    char c = text[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/';
    if (!ok) return std::string("Invalid Base64 character: '") + c + "'";
  }
  if (Decode(text)) return "";
  // AWS's text, misspelling included.
  return "Invalid last non-pad Base64 character dectected";
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
