// Text -> value parsers for the converter: RFC 3339 dates, times and timestamps (the
// JSON Schema formats date, time, date-time), canonical UUIDs, exact decimals and JSON
// number syntax (RFC 8259 §6). All parsers are strict and allocation-free.
#pragma once

#include <cstdint>
#include <string_view>

namespace icestream::schema {

// 10^0 .. 10^19: the digit-run parsers (amounts, doubles) scale by these.
inline constexpr uint64_t kPow10[20] = {1ull,
                                        10ull,
                                        100ull,
                                        1000ull,
                                        10000ull,
                                        100000ull,
                                        1000000ull,
                                        10000000ull,
                                        100000000ull,
                                        1000000000ull,
                                        10000000000ull,
                                        100000000000ull,
                                        1000000000000ull,
                                        10000000000000ull,
                                        100000000000000ull,
                                        1000000000000000ull,
                                        10000000000000000ull,
                                        100000000000000000ull,
                                        1000000000000000000ull,
                                        10000000000000000000ull};

__extension__ typedef __int128 int128;

enum class ParseOutcome : uint8_t {
  kOk,
  kBadSyntax,   // not of the expected shape
  kOutOfRange,  // well-formed, but not representable (day 31 of April, too many digits)
  kNotInteger,  // ParseJsonInteger: a number with a non-zero fraction
};

// "YYYY-MM-DD" -> days since 1970-01-01.
ParseOutcome ParseDate(std::string_view s, int32_t* days);
// "HH:MM:SS[.fraction]" with an optional offset ("Z" or "+HH:MM"), which is applied:
// the result is the UTC time of day in microseconds. Digits after the sixth of the
// fraction are dropped.
ParseOutcome ParseTime(std::string_view s, int64_t* micros);
// RFC 3339 date-time "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM)" ('T' may be 't' or
// a space, 'Z' may be 'z'); the offset is optional (absent = UTC). -> microseconds
// since 1970-01-01T00:00:00Z.
ParseOutcome ParseTimestamp(std::string_view s, int64_t* micros);
// The same without the fast path for the common shapes (which must agree with it; for
// tests).
ParseOutcome ParseTimestampGeneral(std::string_view s, int64_t* micros);
// "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (hex, any case) -> 16 bytes big-endian.
ParseOutcome ParseUuid(std::string_view s, uint8_t out[16]);
// A JSON number -> unscaled value at `scale` (value * 10^scale), which must be exact
// and have at most `precision` digits (kOutOfRange otherwise).
ParseOutcome ParseDecimal(std::string_view json_number, int32_t precision, int32_t scale,
                          int128* unscaled);
// The same without the fast path for plain amounts (which must agree with it; for tests).
ParseOutcome ParseDecimalGeneral(std::string_view json_number, int32_t precision, int32_t scale,
                                 int128* unscaled);
// A JSON number -> its exact value when it is an integer: 1.0, -2e3 and 1.50e1 are
// (JSON Schema draft 6+); 12345678901234567.5 is not (kNotInteger), nor is anything
// rounded. kOutOfRange: 10^38 or more in magnitude. The caller checks its column's range.
ParseOutcome ParseJsonInteger(std::string_view json_number, int128* value);
// Whether a JSON number's significand has a non-zero digit (the number is not zero).
bool HasNonZeroDigit(std::string_view json_number);
// Fast path for JSON integer tokens, for callers whose input is padded: p[0, n + 8) must
// be readable. Returns false, leaving *out untouched, for any token it does not decide
// itself (the caller then uses a full parser), and never a value that differs from the
// exact one: -?(0|[1-9][0-9]*) that fits in int64. (Doubles: a path of ours with its own
// rounding step cost ~8% more CPU than simdjson's parser on bench/convert/shapes double
// and struct; the converter's ParseDoubleFast reads only the digits, 16 at a time, and
// rounds with simdjson's own step, record_converter.cc.)
bool ParseJsonInt64Fast(const char* p, size_t n, int64_t* out);

// Whether s is exactly one JSON number token (RFC 8259 §6 grammar).
bool IsJsonNumber(std::string_view s);

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d);

}  // namespace icestream::schema
