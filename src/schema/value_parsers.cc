// Strict parsers for the string formats and numbers the converter accepts.
#include "schema/value_parsers.h"

#include <cmath>
#include <cstring>
#include <limits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace icestream::schema {
namespace {

bool Digit(char c) { return c >= '0' && c <= '9'; }

// Reads exactly n digits at s[pos].
bool Digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!Digit(s[pos + i])) return false;
    v = v * 10 + (s[pos + i] - '0');
  }
  *out = v;
  return true;
}

bool IsLeap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(int y, int m) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

// "YYYY-MM-DD" at the start of s (10 chars).
ParseOutcome DatePart(std::string_view s, int64_t* days) {
  int y, m, d;
  if (s.size() < 10 || !Digits(s, 0, 4, &y) || s[4] != '-' || !Digits(s, 5, 2, &m) || s[7] != '-' ||
      !Digits(s, 8, 2, &d)) {
    return ParseOutcome::kBadSyntax;
  }
  if (m < 1 || m > 12 || d < 1 || d > DaysInMonth(y, m)) return ParseOutcome::kOutOfRange;
  *days = DaysFromCivil(y, static_cast<unsigned>(m), static_cast<unsigned>(d));
  return ParseOutcome::kOk;
}

// "HH:MM:SS[.frac]" at the start of s; *consumed = characters used.
ParseOutcome TimePart(std::string_view s, int64_t* micros, size_t* consumed) {
  int h, mi, se;
  if (s.size() < 8 || !Digits(s, 0, 2, &h) || s[2] != ':' || !Digits(s, 3, 2, &mi) || s[5] != ':' ||
      !Digits(s, 6, 2, &se)) {
    return ParseOutcome::kBadSyntax;
  }
  size_t pos = 8;
  int64_t frac = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t start = pos;
    int64_t scale = 100000;
    while (pos < s.size() && Digit(s[pos])) {
      if (scale > 0) frac += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return ParseOutcome::kBadSyntax;
  }
  if (h > 23 || mi > 59 || se > 59) return ParseOutcome::kOutOfRange;
  *micros = ((h * 60LL + mi) * 60 + se) * 1000000 + frac;
  *consumed = pos;
  return ParseOutcome::kOk;
}

// "" (none), "Z"/"z", "+HH:MM"/"-HH:MM" -> offset in microseconds east of UTC.
ParseOutcome Offset(std::string_view s, int64_t* offset) {
  *offset = 0;
  if (s.empty()) return ParseOutcome::kOk;
  if (s == "Z" || s == "z") return ParseOutcome::kOk;
  int h, m;
  if (s.size() != 6 || (s[0] != '+' && s[0] != '-') || !Digits(s, 1, 2, &h) || s[3] != ':' ||
      !Digits(s, 4, 2, &m)) {
    return ParseOutcome::kBadSyntax;
  }
  if (h > 23 || m > 59) return ParseOutcome::kOutOfRange;
  *offset = (h * 60LL + m) * 60 * 1000000 * (s[0] == '-' ? -1 : 1);
  return ParseOutcome::kOk;
}

constexpr int64_t kMicrosPerDay = 86400LL * 1000000;

}  // namespace

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

ParseOutcome ParseDate(std::string_view s, int32_t* days) {
  if (s.size() != 10) return ParseOutcome::kBadSyntax;
  int64_t d;
  ParseOutcome o = DatePart(s, &d);
  if (o == ParseOutcome::kOk) *days = static_cast<int32_t>(d);
  return o;
}

ParseOutcome ParseTime(std::string_view s, int64_t* micros) {
  size_t used = 0;
  int64_t t, off;
  ParseOutcome o = TimePart(s, &t, &used);
  if (o != ParseOutcome::kOk) return o;
  o = Offset(s.substr(used), &off);
  if (o != ParseOutcome::kOk) return o;
  t -= off;
  t %= kMicrosPerDay;
  if (t < 0) t += kMicrosPerDay;
  *micros = t;
  return ParseOutcome::kOk;
}

namespace {

uint64_t Load8(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Whether the bytes of x selected by `mask` (0xFF per byte) are all ASCII digits.
bool DigitsAt(uint64_t x, uint64_t mask) {
  constexpr uint64_t kHigh = 0xF0F0F0F0F0F0F0F0ull, kLow = 0x0F0F0F0F0F0F0F0Full;
  return (x & kHigh & mask) == (0x3030303030303030ull & mask) &&
         (((x & kLow) + 0x0606060606060606ull) & kHigh & mask) == 0;
}

// The value of eight ASCII digits (checked), first digit most significant, in three
// multiplies (pairs, then quads, then the two halves).
int64_t EightDigits(uint64_t x) {
  x -= 0x3030303030303030ull;
  x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFull;
  x = (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFull;
  x = (x * 10000 + (x >> 32)) & 0xFFFFFFFFull;
  return static_cast<int64_t>(x);
}

// The common shapes of a date-time, "YYYY-MM-DDTHH:MM:SS" then ".f…" and "Z" or
// "+HH:MM", in straight-line code (three 8-byte loads checked as words); false for any
// other shape (the general parser then decides, so both always agree).
bool FastTimestamp(std::string_view s, int64_t* micros, ParseOutcome* outcome) {
  if (s.size() < 20) return false;
  const char* p = s.data();
  const uint64_t a = Load8(p), b = Load8(p + 8), c = Load8(p + 11);
  // a = "YYYY-MM-", b = "DD?HH:MM" (only DD and ? used), c = "HH:MM:SS".
  constexpr uint64_t kDateDigits = 0x00FFFF00FFFFFFFFull, kDateSeps = 0x2D00002D00000000ull;
  constexpr uint64_t kTimeDigits = 0xFFFF00FFFF00FFFFull, kTimeSeps = 0x00003A00003A0000ull;
  if (!DigitsAt(a, kDateDigits) || (a & ~kDateDigits) != kDateSeps) return false;
  if (!DigitsAt(b, 0xFFFF) || !DigitsAt(c, kTimeDigits) || (c & ~kTimeDigits) != kTimeSeps)
    return false;
  const char t = p[10];
  if (t != 'T' && t != 't' && t != ' ') return false;
  auto dg = [p](int i) { return p[i] - '0'; };
  const int y = dg(0) * 1000 + dg(1) * 100 + dg(2) * 10 + dg(3);
  const int m = dg(5) * 10 + dg(6), d = dg(8) * 10 + dg(9);
  const int h = dg(11) * 10 + dg(12), mi = dg(14) * 10 + dg(15), se = dg(17) * 10 + dg(18);
  size_t pos = 19;
  int64_t frac = 0;
  if (p[pos] == '.' && s.size() >= 27 && !Digit(p[26])) {
    // ".ffffff": the eight bytes from s[18] with the two before the digits made '0'.
    const uint64_t x = (Load8(p + 18) & ~0xFFFFull) | 0x3030;
    if (!DigitsAt(x, ~0ull)) return false;
    frac = EightDigits(x);
    pos = 26;
  } else if (p[pos] == '.') {
    // Microseconds: the first six digits, scaled by a table (no division per digit).
    static constexpr int32_t kScale[7] = {1000000, 100000, 10000, 1000, 100, 10, 1};
    ++pos;
    size_t start = pos;
    int32_t v = 0;
    while (pos < s.size() && Digit(p[pos])) {
      if (pos - start < 6) v = v * 10 + (p[pos] - '0');
      ++pos;
    }
    if (pos == start) return false;
    frac = static_cast<int64_t>(v) * kScale[pos - start < 6 ? pos - start : 6];
  }
  int64_t off = 0;
  if (pos + 1 == s.size() && (p[pos] == 'Z' || p[pos] == 'z')) {
    // UTC
  } else if (pos + 6 == s.size() && (p[pos] == '+' || p[pos] == '-') && p[pos + 3] == ':' &&
             Digit(p[pos + 1]) && Digit(p[pos + 2]) && Digit(p[pos + 4]) && Digit(p[pos + 5])) {
    const int oh = dg(static_cast<int>(pos) + 1) * 10 + dg(static_cast<int>(pos) + 2);
    const int om = dg(static_cast<int>(pos) + 4) * 10 + dg(static_cast<int>(pos) + 5);
    if (oh > 23 || om > 59) return false;
    off = (oh * 60LL + om) * 60 * 1000000 * (p[pos] == '-' ? -1 : 1);
  } else {
    return false;
  }
  if (m < 1 || m > 12 || d < 1 || d > DaysInMonth(y, m) || h > 23 || mi > 59 || se > 59) {
    *outcome = ParseOutcome::kOutOfRange;
    return true;
  }
  const int64_t days = DaysFromCivil(y, static_cast<unsigned>(m), static_cast<unsigned>(d));
  *micros = days * kMicrosPerDay + ((h * 60LL + mi) * 60 + se) * 1000000 + frac - off;
  *outcome = ParseOutcome::kOk;
  return true;
}

}  // namespace

ParseOutcome ParseTimestamp(std::string_view s, int64_t* micros) {
  ParseOutcome fast;
  if (FastTimestamp(s, micros, &fast)) return fast;
  return ParseTimestampGeneral(s, micros);
}

ParseOutcome ParseTimestampGeneral(std::string_view s, int64_t* micros) {
  int64_t days;
  if (s.size() < 19) return ParseOutcome::kBadSyntax;
  ParseOutcome o = DatePart(s, &days);
  if (o != ParseOutcome::kOk) return o;
  if (s[10] != 'T' && s[10] != 't' && s[10] != ' ') return ParseOutcome::kBadSyntax;
  size_t used = 0;
  int64_t t, off;
  o = TimePart(s.substr(11), &t, &used);
  if (o != ParseOutcome::kOk) return o;
  o = Offset(s.substr(11 + used), &off);
  if (o != ParseOutcome::kOk) return o;
  *micros = days * kMicrosPerDay + t - off;
  return ParseOutcome::kOk;
}

namespace {

#if !defined(__SSE2__)
// Hex digit values; 0xFF = not a hex digit.
struct HexTable {
  uint8_t v[256];
  constexpr HexTable() : v() {
    for (int i = 0; i < 256; ++i) v[i] = 0xFF;
    for (int i = 0; i < 10; ++i) v['0' + i] = static_cast<uint8_t>(i);
    for (int i = 0; i < 6; ++i) {
      v['a' + i] = static_cast<uint8_t>(10 + i);
      v['A' + i] = static_cast<uint8_t>(10 + i);
    }
  }
};
constexpr HexTable kHex;
#endif

}  // namespace

ParseOutcome ParseUuid(std::string_view s, uint8_t out[16]) {
  if (s.size() != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-') {
    return ParseOutcome::kBadSyntax;
  }
#if defined(__SSE2__)
  // The 32 hex digits side by side, then 16 lanes at a time (SSE2, the x86-64 baseline):
  // validity and nibble value per byte, then nibble pairs packed into bytes.
  alignas(16) char hex[32];
  std::memcpy(hex, s.data(), 8);
  std::memcpy(hex + 8, s.data() + 9, 4);
  std::memcpy(hex + 12, s.data() + 14, 4);
  std::memcpy(hex + 16, s.data() + 19, 4);
  std::memcpy(hex + 20, s.data() + 24, 12);
  const __m128i lo_nibble = _mm_set1_epi16(0x00FF);
  __m128i packed[2];
  __m128i bad = _mm_setzero_si128();
  for (int half = 0; half < 2; ++half) {
    __m128i c = _mm_load_si128(reinterpret_cast<const __m128i*>(hex + 16 * half));
    // Bytes >= 0x80 compare as negative: below '0' and below 'a', so invalid.
    __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(c, _mm_set1_epi8('0' - 1)),
                                  _mm_cmplt_epi8(c, _mm_set1_epi8('9' + 1)));
    __m128i lower = _mm_or_si128(c, _mm_set1_epi8(0x20));
    __m128i alpha = _mm_and_si128(_mm_cmpgt_epi8(lower, _mm_set1_epi8('a' - 1)),
                                  _mm_cmplt_epi8(lower, _mm_set1_epi8('f' + 1)));
    bad = _mm_or_si128(bad, _mm_andnot_si128(_mm_or_si128(digit, alpha), _mm_set1_epi8(-1)));
    // '0'..'9' -> 0..9 (low nibble); 'a'..'f' and 'A'..'F' -> low nibble 1..6, plus 9.
    __m128i nib =
        _mm_add_epi8(_mm_and_si128(c, _mm_set1_epi8(0x0F)), _mm_and_si128(alpha, _mm_set1_epi8(9)));
    // Each 16-bit lane holds (first digit, second digit): first << 4 | second.
    packed[half] =
        _mm_or_si128(_mm_slli_epi16(_mm_and_si128(nib, lo_nibble), 4), _mm_srli_epi16(nib, 8));
  }
  if (_mm_movemask_epi8(bad) != 0) return ParseOutcome::kBadSyntax;
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_packus_epi16(packed[0], packed[1]));
  return ParseOutcome::kOk;
#else
  // Byte i of the UUID starts at this offset of the text.
  static constexpr uint8_t kPos[16] = {0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34};
  uint8_t bad = 0;
  for (int i = 0; i < 16; ++i) {
    uint8_t hi = kHex.v[static_cast<uint8_t>(s[kPos[i]])];
    uint8_t lo = kHex.v[static_cast<uint8_t>(s[kPos[i] + 1])];
    bad |= hi | lo;
    out[i] = static_cast<uint8_t>((hi << 4) | (lo & 0x0F));
  }
  return (bad & 0xF0) ? ParseOutcome::kBadSyntax : ParseOutcome::kOk;
#endif
}

bool IsJsonNumber(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  if (i >= s.size()) return false;
  if (s[i] == '0') {
    ++i;
  } else if (s[i] >= '1' && s[i] <= '9') {
    while (i < s.size() && Digit(s[i])) ++i;
  } else {
    return false;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    size_t start = i;
    while (i < s.size() && Digit(s[i])) ++i;
    if (i == start) return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t start = i;
    while (i < s.size() && Digit(s[i])) ++i;
    if (i == start) return false;
  }
  return i == s.size();
}

namespace {

// A JSON number's significant digits and the power of ten they are scaled by:
// value = (negative ? -1 : 1) * digits * 10^exp10. Leading zeros are dropped; zeros
// beyond the 128 digits kept are folded into exp10 when nothing but zeros follows, so
// "1.000…0" of any length stays exact. `too_many`: a non-zero digit beyond the 128th.
struct Significand {
  char digits[128];
  int nd = 0;
  int64_t exp10 = 0;
  bool negative = false;
  bool too_many = false;
};

// Precondition: IsJsonNumber(s).
void Decompose(std::string_view s, Significand* out) {
  out->negative = s[0] == '-';
  size_t i = out->negative ? 1 : 0;
  int pending_zeros = 0;  // integer-part zeros not kept (the buffer was full)
  auto push = [&](char c, bool fraction) {
    if (out->nd == 0 && c == '0') {
      if (fraction) --out->exp10;  // 0.05: the zero still scales the digits after it
      return;
    }
    if (out->nd < 128) {
      out->digits[out->nd++] = c;
      if (fraction) --out->exp10;
    } else if (c == '0') {
      if (!fraction) ++pending_zeros;  // a dropped fraction zero changes nothing
    } else {
      out->too_many = true;
    }
  };
  while (i < s.size() && Digit(s[i])) push(s[i++], false);
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && Digit(s[i])) push(s[i++], true);
  }
  out->exp10 += pending_zeros;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool eneg = false;
    if (s[i] == '+' || s[i] == '-') eneg = s[i++] == '-';
    int64_t e = 0;
    while (i < s.size()) {
      if (e < 100000) e = e * 10 + (s[i] - '0');  // larger exponents are out of every range
      ++i;
    }
    out->exp10 += eneg ? -e : e;
  }
}

// Drops the digits that exp10 < 0 puts after the decimal point of the value scaled by
// 10^scale; false when one of them is not zero (the value is not a multiple of
// 10^-scale). *shift: the power of ten the kept digits are then multiplied by.
bool ExactShift(Significand* d, int64_t scale, int64_t* shift) {
  int64_t sh = d->exp10 + scale;
  if (sh < 0) {
    if (-sh > d->nd) return false;
    for (int k = d->nd + static_cast<int>(sh); k < d->nd; ++k) {
      if (d->digits[k] != '0') return false;
    }
    d->nd += static_cast<int>(sh);
    sh = 0;
  }
  *shift = sh;
  return true;
}

int128 DigitsValue(const Significand& d, int64_t shift) {
  int128 v = 0;
  for (int k = 0; k < d.nd; ++k) v = v * 10 + (d.digits[k] - '0');
  for (int64_t k = 0; k < shift; ++k) v *= 10;
  return d.negative ? -v : v;
}

// The common shape of decimal amounts ("-123.45": at most 19 characters, no exponent) in
// two tight loops; false when the text is of another shape (the general path then
// decides, so both always agree).
bool FastDecimal(std::string_view s, int32_t precision, int32_t scale, int128* unscaled,
                 ParseOutcome* outcome) {
  const size_t n = s.size();
  // 19 characters hold at most 19 digits: < 10^19, inside a uint64.
  if (n == 0 || n > 19 || scale > 19) return false;
  const char* p = s.data();
  const char* const end = p + n;
  const bool negative = *p == '-';
  p += negative;
  uint64_t v = 0;
  const char* q = p;
  while (q < end && static_cast<unsigned>(*q - '0') < 10)
    v = v * 10 + static_cast<unsigned>(*q++ - '0');
  if (q == p || (*p == '0' && q - p > 1)) return false;  // no digit, or "01"
  int frac = 0;
  if (q < end) {
    if (*q != '.') return false;  // an exponent or junk
    const char* f = ++q;
    while (q < end && static_cast<unsigned>(*q - '0') < 10)
      v = v * 10 + static_cast<unsigned>(*q++ - '0');
    frac = static_cast<int>(q - f);
    if (frac == 0 || q != end) return false;
  }
  // v = value * 10^frac exactly; bring it to the column's scale, exactly or not at all.
  if (frac > scale) {
    const uint64_t drop = kPow10[frac - scale];
    if (v % drop != 0) {
      *outcome = ParseOutcome::kOutOfRange;  // not exact at this scale
      return true;
    }
    v /= drop;
  } else if (frac < scale) {
    const uint64_t mul = kPow10[scale - frac];
    if (v > UINT64_MAX / mul) return false;
    v *= mul;
  }
  // Precision counts the digits of the unscaled value.
  if (precision <= 19 && v >= kPow10[precision]) {
    *outcome = ParseOutcome::kOutOfRange;
    return true;
  }
  *unscaled = negative ? -static_cast<int128>(v) : static_cast<int128>(v);
  *outcome = ParseOutcome::kOk;
  return true;
}

}  // namespace

ParseOutcome ParseDecimal(std::string_view s, int32_t precision, int32_t scale, int128* unscaled) {
  ParseOutcome fast;
  if (FastDecimal(s, precision, scale, unscaled, &fast)) return fast;
  return ParseDecimalGeneral(s, precision, scale, unscaled);
}

ParseOutcome ParseDecimalGeneral(std::string_view s, int32_t precision, int32_t scale,
                                 int128* unscaled) {
  if (!IsJsonNumber(s)) return ParseOutcome::kBadSyntax;
  Significand d;
  Decompose(s, &d);
  if (d.too_many) return ParseOutcome::kOutOfRange;
  if (d.nd == 0) {
    *unscaled = 0;
    return ParseOutcome::kOk;
  }
  // unscaled = digits * 10^(exp10 + scale), exactly (no rounding: an inexact value is
  // refused).
  int64_t shift = 0;
  if (!ExactShift(&d, scale, &shift)) return ParseOutcome::kOutOfRange;
  if (d.nd + shift > precision) return ParseOutcome::kOutOfRange;
  *unscaled = DigitsValue(d, shift);
  return ParseOutcome::kOk;
}

ParseOutcome ParseJsonInteger(std::string_view s, int128* value) {
  if (!IsJsonNumber(s)) return ParseOutcome::kBadSyntax;
  Significand d;
  Decompose(s, &d);
  if (d.nd == 0) {
    *value = 0;
    return ParseOutcome::kOk;
  }
  int64_t shift = 0;
  if (!ExactShift(&d, 0, &shift)) return ParseOutcome::kNotInteger;
  // A non-zero digit beyond the 128th: either 10^128 or more, or a fraction that 128
  // digits cannot hold; refused either way.
  if (d.too_many || d.nd + shift > 38) return ParseOutcome::kOutOfRange;
  *value = DigitsValue(d, shift);
  return ParseOutcome::kOk;
}

namespace {

// The value of the m <= 8 ASCII digits at p (p[0, 8) readable): the word loaded, the
// digits moved to its high bytes behind '0's, checked and converted at once. false when
// any of them is not a digit.
inline bool UpToEightDigits(const char* p, size_t m, uint64_t* v) {
  uint64_t x;
  std::memcpy(&x, p, 8);
  const unsigned shift = static_cast<unsigned>(8 * (8 - m));
  const uint64_t digits = shift == 64 ? 0 : x << shift;
  const uint64_t zeros = shift == 0 ? 0 : 0x3030303030303030ull >> (64 - shift);
  const uint64_t word = digits | zeros;
  if (!DigitsAt(word, ~uint64_t{0})) return false;
  *v = static_cast<uint64_t>(EightDigits(word));
  return true;
}

}  // namespace

bool ParseJsonInt64Fast(const char* p, size_t n, int64_t* out) {
  const bool negative = n > 0 && *p == '-';
  const char* q = p + negative;
  const size_t m = n - negative;
  // Empty, "-", "01", more digits than int64 has: the full parser.
  if (m == 0 || m > 19 || (*q == '0' && m != 1)) return false;
  // The token's length is known: its digits are read as at most three words of eight,
  // whose digits are checked and converted without a loop (the last word ends at the
  // token's end, the first holds what is left).
  uint64_t v, a, b, c;
  if (m <= 8) {
    if (!UpToEightDigits(q, m, &v)) return false;
  } else if (m <= 16) {
    if (!UpToEightDigits(q, m - 8, &a) || !UpToEightDigits(q + m - 8, 8, &b)) return false;
    v = a * 100000000ull + b;
  } else {
    if (!UpToEightDigits(q, m - 16, &a) || !UpToEightDigits(q + m - 16, 8, &b) ||
        !UpToEightDigits(q + m - 8, 8, &c)) {
      return false;
    }
    v = a * 10000000000000000ull + b * 100000000ull + c;  // < 10^19 < 2^64
  }
  if (negative) {
    if (v > 9223372036854775808ull) return false;
    *out = static_cast<int64_t>(0 - v);
  } else {
    if (v > 9223372036854775807ull) return false;
    *out = static_cast<int64_t>(v);
  }
  return true;
}

bool HasNonZeroDigit(std::string_view json_number) {
  for (char c : json_number) {
    if (c == 'e' || c == 'E') return false;
    if (c >= '1' && c <= '9') return true;
  }
  return false;
}

}  // namespace icestream::schema
