// Tests of the strict value parsers (RFC 3339 formats, UUIDs, decimals, JSON numbers).
#include "schema/value_parsers.h"

#include <gtest/gtest.h>

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
  EXPECT_EQ(ParseDecimal("100000000000000000000000000000000000000", 38, 0, &u), ParseOutcome::kOutOfRange);
  EXPECT_EQ(ParseDecimal("1.234", 9, 2, &u), ParseOutcome::kOutOfRange);
  EXPECT_EQ(ParseDecimal("1000", 3, 0, &u), ParseOutcome::kOutOfRange);
  EXPECT_EQ(ParseDecimal("1e400", 38, 0, &u), ParseOutcome::kOutOfRange);
  EXPECT_EQ(ParseDecimal("01", 9, 0, &u), ParseOutcome::kBadSyntax);
  EXPECT_EQ(ParseDecimal("1.", 9, 0, &u), ParseOutcome::kBadSyntax);
}

TEST(ValueParsersTest, JsonNumbers) {
  for (const char* ok : {"0", "-0", "1", "-12.5", "1e5", "1E+5", "1.0e-10", "123456789012345678901234567890"}) {
    EXPECT_TRUE(IsJsonNumber(ok)) << ok;
  }
  for (const char* bad : {"", "-", "01", "1.", ".5", "+1", "1e", "1e+", "0x10", "NaN", "1 "}) {
    EXPECT_FALSE(IsJsonNumber(bad)) << bad;
  }
}

}  // namespace
}  // namespace icestream::schema
