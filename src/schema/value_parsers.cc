// Strict parsers for the string formats and numbers the converter accepts.
#include "schema/value_parsers.h"

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

ParseOutcome ParseTimestamp(std::string_view s, int64_t* micros) {
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

}  // namespace

ParseOutcome ParseUuid(std::string_view s, uint8_t out[16]) {
  if (s.size() != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-') {
    return ParseOutcome::kBadSyntax;
  }
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

constexpr int64_t kPow10[19] = {1,
                                10,
                                100,
                                1000,
                                10000,
                                100000,
                                1000000,
                                10000000,
                                100000000,
                                1000000000,
                                10000000000,
                                100000000000,
                                1000000000000,
                                10000000000000,
                                100000000000000,
                                1000000000000000,
                                10000000000000000,
                                100000000000000000,
                                1000000000000000000};

// The common shape of decimal amounts ("-123.45": at most 18 digits, no exponent) in one
// pass; false when the text is of another shape (the general path then decides).
bool FastDecimal(std::string_view s, int32_t precision, int32_t scale, int128* unscaled,
                 ParseOutcome* outcome) {
  const size_t n = s.size();
  if (n == 0 || n > 24 || scale > 18) return false;
  size_t i = 0;
  const bool negative = s[0] == '-';
  if (negative) ++i;
  if (i >= n) return false;
  int64_t v = 0;
  int kept = 0;  // digits accumulated into v (v < 10^kept)
  if (s[i] == '0') {
    ++i;
    if (i < n && Digit(s[i])) return false;  // "01": the general path refuses it
  } else {
    size_t start = i;
    while (i < n && Digit(s[i])) {
      if (++kept > 18) return false;
      v = v * 10 + (s[i++] - '0');
    }
    if (i == start) return false;
  }
  int frac = 0;
  bool dropped = false;  // a non-zero fraction digit beyond the scale
  if (i < n && s[i] == '.') {
    ++i;
    size_t start = i;
    while (i < n && Digit(s[i])) {
      if (frac < scale) {
        if (++kept > 18) return false;
        v = v * 10 + (s[i] - '0');
        ++frac;
      } else {
        dropped |= s[i] != '0';
      }
      ++i;
    }
    if (i == start) return false;
  }
  if (i != n) return false;  // an exponent or junk: the general path
  if (kept + (scale - frac) > 18) return false;
  if (dropped) {
    *outcome = ParseOutcome::kOutOfRange;  // not exact at this scale
    return true;
  }
  const int64_t scaled = v * kPow10[scale - frac];
  // Precision counts the digits of the unscaled value (leading zeros excluded).
  if (precision < 18 && scaled >= kPow10[precision]) {
    *outcome = ParseOutcome::kOutOfRange;
    return true;
  }
  *unscaled = negative ? -static_cast<int128>(scaled) : static_cast<int128>(scaled);
  *outcome = ParseOutcome::kOk;
  return true;
}

}  // namespace

ParseOutcome ParseDecimal(std::string_view s, int32_t precision, int32_t scale, int128* unscaled) {
  ParseOutcome fast;
  if (FastDecimal(s, precision, scale, unscaled, &fast)) return fast;
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

bool HasNonZeroDigit(std::string_view json_number) {
  for (char c : json_number) {
    if (c == 'e' || c == 'E') return false;
    if (c >= '1' && c <= '9') return true;
  }
  return false;
}

}  // namespace icestream::schema
