// Tests of the strict value parsers (RFC 3339 formats, UUIDs, decimals, JSON numbers).
#include "schema/value_parsers.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace icestream::schema {
namespace {

TEST(ValueParsersTest, Dates) {
  int32_t d = -1;
  EXPECT_EQ(ParseDate("1970-01-01", &d), ParseOutcome::kOk);
  EXPECT_EQ(d, 0);
  EXPECT_EQ(ParseDate("2017-11-16", &d), ParseOutcome::kOk);
  EXPECT_EQ(d, 17486);  // Iceberg spec Appendix B test vector date
  EXPECT_EQ(ParseDate("1969-12-31", &d), ParseOutcome::kOk);
  EXPECT_EQ(d, -1);
  EXPECT_EQ(ParseDate("2024-02-29", &d), ParseOutcome::kOk);
  EXPECT_EQ(ParseDate("2023-02-29", &d), ParseOutcome::kOutOfRange);
  EXPECT_EQ(ParseDate("2023-13-01", &d), ParseOutcome::kOutOfRange);
  EXPECT_EQ(ParseDate("2023-1-01", &d), ParseOutcome::kBadSyntax);
  EXPECT_EQ(ParseDate("2023-01-01x", &d), ParseOutcome::kBadSyntax);
  EXPECT_EQ(ParseDate("", &d), ParseOutcome::kBadSyntax);
}

TEST(ValueParsersTest, Times) {
  int64_t t = -1;
  EXPECT_EQ(ParseTime("22:31:08", &t), ParseOutcome::kOk);
  EXPECT_EQ(t, (22 * 3600 + 31 * 60 + 8) * 1000000LL);
  EXPECT_EQ(ParseTime("00:00:00.000001", &t), ParseOutcome::kOk);
  EXPECT_EQ(t, 1);
  EXPECT_EQ(ParseTime("00:00:00.1234569", &t), ParseOutcome::kOk);
  EXPECT_EQ(t, 123456);
  EXPECT_EQ(ParseTime("01:00:00+02:00", &t), ParseOutcome::kOk);  // 23:00 UTC
  EXPECT_EQ(t, 23 * 3600 * 1000000LL);
  EXPECT_EQ(ParseTime("12:00:00Z", &t), ParseOutcome::kOk);
  EXPECT_EQ(ParseTime("24:00:00", &t), ParseOutcome::kOutOfRange);
  EXPECT_EQ(ParseTime("12:00", &t), ParseOutcome::kBadSyntax);
  EXPECT_EQ(ParseTime("12:00:00.", &t), ParseOutcome::kBadSyntax);
}

TEST(ValueParsersTest, Timestamps) {
  int64_t ts = 0;
  EXPECT_EQ(ParseTimestamp("2017-11-16T22:31:08Z", &ts), ParseOutcome::kOk);
  EXPECT_EQ(ts, 1510871468000000LL);
  EXPECT_EQ(ParseTimestamp("2017-11-16t22:31:08.000001z", &ts), ParseOutcome::kOk);
  EXPECT_EQ(ts, 1510871468000001LL);
  EXPECT_EQ(ParseTimestamp("2017-11-16 23:31:08+01:00", &ts), ParseOutcome::kOk);
  EXPECT_EQ(ts, 1510871468000000LL);
  EXPECT_EQ(ParseTimestamp("2017-11-16T22:31:08", &ts), ParseOutcome::kOk);  // no offset = UTC
  EXPECT_EQ(ts, 1510871468000000LL);
  EXPECT_EQ(ParseTimestamp("1969-12-31T23:59:59.999999Z", &ts), ParseOutcome::kOk);
  EXPECT_EQ(ts, -1);
  EXPECT_EQ(ParseTimestamp("0001-01-01T00:00:00Z", &ts), ParseOutcome::kOk);
  EXPECT_EQ(ts, -62135596800000000LL);
  EXPECT_EQ(ParseTimestamp("9999-12-31T23:59:59.999999Z", &ts), ParseOutcome::kOk);
  EXPECT_EQ(ts, 253402300799999999LL);
  EXPECT_EQ(ParseTimestamp("2017-11-16T22:31:08+0100", &ts), ParseOutcome::kBadSyntax);
  EXPECT_EQ(ParseTimestamp("2017-11-16X22:31:08Z", &ts), ParseOutcome::kBadSyntax);
  EXPECT_EQ(ParseTimestamp("2017-11-31T22:31:08Z", &ts), ParseOutcome::kOutOfRange);
  EXPECT_EQ(ParseTimestamp("2017-11-16T22:61:08Z", &ts), ParseOutcome::kOutOfRange);
}

TEST(ValueParsersTest, Uuids) {
  uint8_t b[16];
  ASSERT_EQ(ParseUuid("f79c3e09-677c-4bbd-a479-3f349cb785e7", b), ParseOutcome::kOk);
  EXPECT_EQ(b[0], 0xf7);
  EXPECT_EQ(b[15], 0xe7);
  EXPECT_EQ(ParseUuid("F79C3E09-677C-4BBD-A479-3F349CB785E7", b), ParseOutcome::kOk);
  EXPECT_EQ(ParseUuid("f79c3e09677c4bbda4793f349cb785e7", b), ParseOutcome::kBadSyntax);
  EXPECT_EQ(ParseUuid("g79c3e09-677c-4bbd-a479-3f349cb785e7", b), ParseOutcome::kBadSyntax);
}

std::string Str(int128 v) {
  bool neg = v < 0;
  std::string s;
  do {
    int d = static_cast<int>(v % 10);
    s.insert(s.begin(), static_cast<char>('0' + (d < 0 ? -d : d)));
    v /= 10;
  } while (v != 0);
  return neg ? "-" + s : s;
}

// The word-at-a-time path for common date-times agrees with the general parser on
// well-formed values of every shape it takes and on each of them with one byte changed.
TEST(ValueParsersTest, TimestampFastPathAgreesWithTheGeneralPath) {
  std::mt19937_64 rng(42);
  const char* fracs[] = {"", ".1", ".123", ".123456", ".1234567", "."};
  const char* offs[] = {"Z", "z", "+01:30", "-23:59", "+24:00", "-00:60", "", "+0130", "Z "};
  const char kBytes[] = "0123456789-:TtZz+. \x80\xff/";
  int checked = 0;
  for (int n = 0; n < 20000; ++n) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02d%c%02d:%02d:%02d",
                  static_cast<int>(rng() % 10000), static_cast<int>(rng() % 14),
                  static_cast<int>(rng() % 33), "Tt "[rng() % 3], static_cast<int>(rng() % 25),
                  static_cast<int>(rng() % 61), static_cast<int>(rng() % 61));
    std::string t = std::string(buf) + fracs[rng() % 6] + offs[rng() % 9];
    for (int mutate = 0; mutate < 2; ++mutate) {
      if (mutate) t[rng() % t.size()] = kBytes[rng() % (sizeof kBytes - 1)];
      int64_t a = -1, b = -2;
      ParseOutcome fa = ParseTimestamp(t, &a), fb = ParseTimestampGeneral(t, &b);
      ASSERT_EQ(fa, fb) << t;
      if (fa == ParseOutcome::kOk) {
        ASSERT_EQ(a, b) << t;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

// The SSE2 path of ParseUuid against a byte-by-byte reading, on valid UUIDs in both cases
// and on each with one byte changed (to any of the 256 values).
TEST(ValueParsersTest, UuidAgreesWithAByteByByteReading) {
  std::mt19937_64 rng(7);
  auto reference = [](const std::string& s, uint8_t out[16]) {
    if (s.size() != 36) return false;
    int k = 0;
    for (size_t i = 0; i < 36; ++i) {
      if (i == 8 || i == 13 || i == 18 || i == 23) {
        if (s[i] != '-') return false;
        continue;
      }
      char c = s[i];
      int v = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (v < 0) return false;
      if (k % 2 == 0)
        out[k / 2] = static_cast<uint8_t>(v << 4);
      else
        out[k / 2] = static_cast<uint8_t>(out[k / 2] | v);
      ++k;
    }
    return true;
  };
  for (int n = 0; n < 20000; ++n) {
    std::string s;
    const char* hex = (n & 1) ? "0123456789abcdef" : "0123456789ABCDEF";
    for (int i = 0; i < 36; ++i)
      s.push_back(i == 8 || i == 13 || i == 18 || i == 23 ? '-' : hex[rng() % 16]);
    if (n % 3) s[rng() % 36] = static_cast<char>(rng() % 256);
    uint8_t a[16] = {}, b[16] = {};
    bool ok = reference(s, b);
    ASSERT_EQ(ParseUuid(s, a) == ParseOutcome::kOk, ok) << s;
    if (ok) {
      ASSERT_EQ(std::memcmp(a, b, 16), 0) << s;
    }
  }
}

TEST(ValueParsersTest, ExactIntegers) {
  int128 v = -1;
  EXPECT_EQ(ParseJsonInteger("0", &v), ParseOutcome::kOk);
  EXPECT_EQ(v, 0);
  EXPECT_EQ(ParseJsonInteger("-9223372036854775809", &v), ParseOutcome::kOk);
  EXPECT_TRUE(v == -static_cast<int128>(9223372036854775807LL) - 2);
  EXPECT_EQ(ParseJsonInteger("1.50e1", &v), ParseOutcome::kOk);
  EXPECT_EQ(v, 15);
  EXPECT_EQ(ParseJsonInteger("-2e3", &v), ParseOutcome::kOk);
  EXPECT_EQ(v, -2000);
  EXPECT_EQ(ParseJsonInteger("0.000e-5000", &v), ParseOutcome::kOk);
  EXPECT_EQ(v, 0);
  EXPECT_EQ(ParseJsonInteger("12345678901234567.5", &v), ParseOutcome::kNotInteger);
  EXPECT_EQ(ParseJsonInteger("0.5", &v), ParseOutcome::kNotInteger);
  EXPECT_EQ(ParseJsonInteger("1e-400", &v), ParseOutcome::kNotInteger);
  EXPECT_EQ(ParseJsonInteger("1e38", &v), ParseOutcome::kOutOfRange);
  EXPECT_EQ(ParseJsonInteger("99999999999999999999999999999999999999", &v), ParseOutcome::kOk);
  EXPECT_EQ(ParseJsonInteger("1e400", &v), ParseOutcome::kOutOfRange);
  EXPECT_EQ(ParseJsonInteger("1" + std::string(200, '0') + "e-200", &v), ParseOutcome::kOk);
  EXPECT_EQ(v, 1);
  EXPECT_EQ(ParseJsonInteger("1." + std::string(200, '0') + "1", &v), ParseOutcome::kOutOfRange);
  EXPECT_EQ(ParseJsonInteger("01", &v), ParseOutcome::kBadSyntax);
  EXPECT_EQ(ParseJsonInteger("1.", &v), ParseOutcome::kBadSyntax);
  EXPECT_TRUE(HasNonZeroDigit("0.0001e-999"));
  EXPECT_FALSE(HasNonZeroDigit("-0.000e5"));
}

// The one-pass path for plain amounts agrees with the general path on every shape near
// its edges (lengths, scales, precisions).
TEST(ValueParsersTest, DecimalFastPathAgreesWithTheGeneralPath) {
  const char* cases[] = {"0",
                         "-0",
                         "0.00",
                         "12.34",
                         "-12.34",
                         "12.345",
                         "12.340",
                         "1.",
                         ".5",
                         "01.5",
                         "-",
                         "1e2",
                         "999999999999999999",
                         "9999999999999999.99",
                         "99999999999999999.99",
                         "0.000000000000000001",
                         "123456789.123456789",
                         "-0.5",
                         "5",
                         "100"};
  std::vector<std::string> all(std::begin(cases), std::end(cases));
  // And random plain numbers: 1 to 21 characters, signs, leading zeros, a point anywhere.
  std::mt19937_64 rng(3);
  for (int n = 0; n < 3000; ++n) {
    std::string t = (rng() % 4 == 0) ? "-" : "";
    int len = 1 + static_cast<int>(rng() % 21);
    for (int i = 0; i < len; ++i)
      t.push_back(static_cast<char>('0' + (rng() % 3 == 0 ? 0 : rng() % 10)));
    if (rng() % 3 != 0) t.insert(t.begin() + static_cast<long>(rng() % (t.size() + 1)), '.');
    all.push_back(t);
  }
  for (const auto& c : all) {
    for (int scale : {0, 1, 2, 3, 6, 18, 19, 20}) {
      for (int precision : {1, 3, 9, 18, 19, 20, 38}) {
        int128 a = 7, b = 7;
        ParseOutcome fast = ParseDecimal(c, precision, scale, &a);
        ParseOutcome slow = ParseDecimalGeneral(c, precision, scale, &b);
        ASSERT_EQ(fast, slow) << c << " p" << precision << " s" << scale;
        if (fast == ParseOutcome::kOk) {
          ASSERT_TRUE(a == b) << c << " p" << precision << " s" << scale;
        }
      }
    }
  }
}

// The padded integer fast path against a full reading (from_chars) on the shapes
// serializers print and on random digit strings with exponents, each followed by 8 bytes
// that may be digits (the fast path reads past the token): when it decides, the value is
// exact.
TEST(ValueParsersTest, NumberFastPathsAgreeWithAFullReading) {
  std::mt19937_64 rng(11);
  std::vector<std::string> tokens = {"0",
                                     "-0",
                                     "1",
                                     "-1",
                                     "0.5",
                                     "1e22",
                                     "1e23",
                                     "1e-22",
                                     "1e-23",
                                     "1e27",
                                     "1e28",
                                     "01",
                                     "1.",
                                     "-",
                                     ".5",
                                     "1e",
                                     "1e+",
                                     "2.5e-3",
                                     "9007199254740993",
                                     "9223372036854775807",
                                     "9223372036854775808",
                                     "-9223372036854775808",
                                     "-9223372036854775809",
                                     "12345678901234567890",
                                     "0.1234567890123456789",
                                     "1.7976931348623157e308",
                                     "4.9e-324",
                                     "1E5",
                                     "1e0005"};
  char buf[64];
  for (int n = 0; n < 40000; ++n) {
    switch (n % 4) {
      case 0: {  // shortest round-trip text of a random double (what JSON.stringify prints)
        double d = static_cast<double>(rng() >> 11) * 0x1.0p-53 * std::pow(10.0, rng() % 40) *
                   (rng() % 2 ? -1 : 1);
        auto r = std::to_chars(buf, buf + sizeof buf, d);
        tokens.emplace_back(buf, r.ptr);
        break;
      }
      case 1: {  // 17 significant digits
        double d = static_cast<double>(rng()) / static_cast<double>(1 + rng() % 1000000);
        std::snprintf(buf, sizeof buf, "%.17g", d);
        tokens.emplace_back(buf);
        break;
      }
      case 2: {  // random digits, a point, an exponent in [-30, 30]
        std::string t = rng() % 3 == 0 ? "-" : "";
        int len = 1 + static_cast<int>(rng() % 22);
        for (int i = 0; i < len; ++i) t.push_back(static_cast<char>('0' + rng() % 10));
        if (rng() % 2) t.insert(t.begin() + static_cast<long>(1 + rng() % t.size()), '.');
        if (rng() % 2) t += "e" + std::to_string(static_cast<int>(rng() % 61) - 30);
        tokens.push_back(t);
        break;
      }
      default: {  // integers of every length
        std::snprintf(buf, sizeof buf, "%lld",
                      static_cast<long long>(rng() >> (rng() % 64)) * (rng() % 2 ? -1 : 1));
        tokens.emplace_back(buf);
        break;
      }
    }
  }
  int decided_int = 0;
  for (const auto& t : tokens) {
    // The token, then 8 bytes that the fast paths may read (digits half of the time).
    std::string padded = t + (rng() % 2 ? "12345678" : ",\"k\":1}  ");
    const bool json_number = IsJsonNumber(t);
    int64_t i = -7;
    if (ParseJsonInt64Fast(padded.data(), t.size(), &i)) {
      ASSERT_TRUE(json_number) << t;
      int64_t want = 0;
      auto r = std::from_chars(t.data(), t.data() + t.size(), want);
      ASSERT_TRUE(r.ec == std::errc() && r.ptr == t.data() + t.size()) << t;
      ASSERT_EQ(i, want) << t;
      ++decided_int;
    }
  }
  // The path decides most of what serializers print.
  EXPECT_GT(decided_int, 4000);
}

TEST(ValueParsersTest, Decimals) {
  int128 u = 0;
  EXPECT_EQ(ParseDecimal("14.20", 9, 2, &u), ParseOutcome::kOk);
  EXPECT_EQ(Str(u), "1420");
  EXPECT_EQ(ParseDecimal("-0.5", 9, 3, &u), ParseOutcome::kOk);
  EXPECT_EQ(Str(u), "-500");
  EXPECT_EQ(ParseDecimal("1.5e2", 9, 0, &u), ParseOutcome::kOk);
  EXPECT_EQ(Str(u), "150");
  EXPECT_EQ(ParseDecimal("12345e-3", 9, 3, &u), ParseOutcome::kOk);
  EXPECT_EQ(Str(u), "12345");
  EXPECT_EQ(ParseDecimal("1.2300", 9, 2, &u), ParseOutcome::kOk);  // trailing zeros are exact
  EXPECT_EQ(Str(u), "123");
  EXPECT_EQ(ParseDecimal("0", 1, 0, &u), ParseOutcome::kOk);
  EXPECT_EQ(Str(u), "0");
  EXPECT_EQ(ParseDecimal("99999999999999999999999999999999999999", 38, 0, &u), ParseOutcome::kOk);
  EXPECT_EQ(Str(u), "99999999999999999999999999999999999999");
  EXPECT_EQ(ParseDecimal("-9999999999999999999999999999999999.9999", 38, 4, &u), ParseOutcome::kOk);
  EXPECT_EQ(Str(u), "-99999999999999999999999999999999999999");
  EXPECT_EQ(ParseDecimal("100000000000000000000000000000000000000", 38, 0, &u),
            ParseOutcome::kOutOfRange);
  EXPECT_EQ(ParseDecimal("1.234", 9, 2, &u), ParseOutcome::kOutOfRange);
  EXPECT_EQ(ParseDecimal("1000", 3, 0, &u), ParseOutcome::kOutOfRange);
  EXPECT_EQ(ParseDecimal("1e400", 38, 0, &u), ParseOutcome::kOutOfRange);
  EXPECT_EQ(ParseDecimal("01", 9, 0, &u), ParseOutcome::kBadSyntax);
  EXPECT_EQ(ParseDecimal("1.", 9, 0, &u), ParseOutcome::kBadSyntax);
}

TEST(ValueParsersTest, JsonNumbers) {
  for (const char* ok :
       {"0", "-0", "1", "-12.5", "1e5", "1E+5", "1.0e-10", "123456789012345678901234567890"}) {
    EXPECT_TRUE(IsJsonNumber(ok)) << ok;
  }
  for (const char* bad : {"", "-", "01", "1.", ".5", "+1", "1e", "1e+", "0x10", "NaN", "1 "}) {
    EXPECT_FALSE(IsJsonNumber(bad)) << bad;
  }
}

}  // namespace
}  // namespace icestream::schema
