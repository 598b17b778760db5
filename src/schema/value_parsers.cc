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
  if (s.size() < 10 || !Digits(s, 0, 4, &y) || s[4] != '-' || !Digits(s, 5, 2, &m) ||
      s[7] != '-' || !Digits(s, 8, 2, &d)) {
    return ParseOutcome::kBadSyntax;
  }
  if (m < 1 || m > 12 || d < 1 || d > DaysInMonth(y, m)) return ParseOutcome::kOutOfRange;
  *days = DaysFromCivil(y, static_cast<unsigned>(m), static_cast<unsigned>(d));
  return ParseOutcome::kOk;
}

// "HH:MM:SS[.frac]" at the start of s; *consumed = characters used.
ParseOutcome TimePart(std::string_view s, int64_t* micros, size_t* consumed) {
  int h, mi, se;
  if (s.size() < 8 || !Digits(s, 0, 2, &h) || s[2] != ':' || !Digits(s, 3, 2, &mi) ||
      s[5] != ':' || !Digits(s, 6, 2, &se)) {
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

ParseOutcome ParseDecimal(std::string_view s, int32_t precision, int32_t scale, int128* unscaled) {
  if (!IsJsonNumber(s)) return ParseOutcome::kBadSyntax;
  bool negative = s[0] == '-';
  size_t i = negative ? 1 : 0;
  // Collect significant digits and the power of ten they are scaled by.
  char digits[128];
  int nd = 0;
  int64_t exp10 = 0;
  bool too_many = false;
  auto push = [&](char c) {
    if (nd == 0 && c == '0') return;  // leading zeros carry nothing
    if (nd < 128) {
      digits[nd++] = c;
    } else {
      too_many = true;
    }
  };
  while (i < s.size() && Digit(s[i])) push(s[i++]);
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && Digit(s[i])) {
      push(s[i++]);
      --exp10;
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool eneg = false;
    if (s[i] == '+' || s[i] == '-') eneg = s[i++] == '-';
    int64_t e = 0;
    while (i < s.size()) {
      if (e < 100000) e = e * 10 + (s[i] - '0');
      ++i;
    }
    exp10 += eneg ? -e : e;
  }
  if (too_many) return ParseOutcome::kOutOfRange;
  // value = digits * 10^exp10; unscaled = digits * 10^(exp10 + scale).
  int64_t shift = exp10 + scale;
  if (nd == 0) {
    *unscaled = 0;
    return ParseOutcome::kOk;
  }
  if (shift < 0) {
    // The last -shift digits must be zeros (no rounding: an inexact value is refused).
    if (-shift > nd) return ParseOutcome::kOutOfRange;
    for (int k = nd + static_cast<int>(shift); k < nd; ++k) {
      if (digits[k] != '0') return ParseOutcome::kOutOfRange;
    }
    nd += static_cast<int>(shift);
    shift = 0;
  }
  if (nd + shift > precision) return ParseOutcome::kOutOfRange;
  int128 v = 0;
  for (int k = 0; k < nd; ++k) v = v * 10 + (digits[k] - '0');
  for (int64_t k = 0; k < shift; ++k) v *= 10;
  *unscaled = negative ? -v : v;
  return ParseOutcome::kOk;
}

}  // namespace icestream::schema
