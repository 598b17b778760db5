// Scalar tokens -> column values on the converter's fast path (scalar_writer.h).
#include "schema/scalar_writer.h"

#include <immintrin.h>
#include <simdjson.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/base64.h"
#include "schema/value_parsers.h"

namespace icestream::schema {

using format::parquet::PhysicalType;
using iceberg::TypeId;

namespace {

#if defined(__SSE4_1__)
// The value of the n <= 16 ASCII digits at p (p[0, 16) readable), or false when one of
// them is not a digit: the digits moved to the end of a 16-byte vector behind zeros, then
// combined pairwise (10a + b), by fours and by eights in three multiply-adds.
inline bool SixteenDigits(const char* p, size_t n, uint64_t* out) {
  // kShift[n]: pshufb control that moves bytes [0, n) to [16 - n, 16) and zeroes the rest.
  static constexpr auto kShift = [] {
    std::array<std::array<int8_t, 16>, 17> t{};
    for (size_t len = 0; len <= 16; ++len) {
      for (size_t k = 0; k < 16; ++k) {
        t[len][k] = k < 16 - len ? static_cast<int8_t>(-128) : static_cast<int8_t>(k - (16 - len));
      }
    }
    return t;
  }();
  const __m128i d =
      _mm_sub_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), _mm_set1_epi8('0'));
  // Bytes below '0' wrapped around: every one of the n must be <= 9 unsigned.
  const auto digits = static_cast<uint32_t>(
      _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_subs_epu8(d, _mm_set1_epi8(9)), _mm_setzero_si128())));
  const uint32_t want = n == 16 ? 0xFFFFu : (1u << n) - 1;
  if ((digits & want) != want) return false;
  const __m128i v =
      _mm_shuffle_epi8(d, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kShift[n].data())));
  const __m128i pairs =
      _mm_maddubs_epi16(v, _mm_set_epi8(1, 10, 1, 10, 1, 10, 1, 10, 1, 10, 1, 10, 1, 10, 1, 10));
  const __m128i fours = _mm_madd_epi16(pairs, _mm_set_epi16(1, 100, 1, 100, 1, 100, 1, 100));
  const __m128i packed = _mm_packus_epi32(fours, fours);
  const __m128i eights =
      _mm_madd_epi16(packed, _mm_set_epi16(1, 10000, 1, 10000, 1, 10000, 1, 10000));
  const auto hi = static_cast<uint32_t>(_mm_cvtsi128_si32(eights));
  const auto lo = static_cast<uint32_t>(_mm_extract_epi32(eights, 1));
  *out = uint64_t{hi} * 100000000u + lo;
  return true;
}

// The usual shape of a double's text, -?(0|[1-9][0-9]{0,7})\.[0-9]+ with at most 19
// significant digits (the shortest round-trip text of most doubles: 0.8414709848078965,
// -38.65), read without a loop per digit: its digits as one integer w, then w * 10^-f
// rounded by simdjson's own Clinger / Eisel-Lemire step (compute_float_64), as its
// get_double does after its digit loop, so the value is the same correctly rounded one.
// false (nothing written) for any other token, and when that step cannot decide alone;
// the caller then parses with simdjson. p[0, n + 16) must be readable.
inline bool ParseDoubleFast(const char* p, size_t n, double* out) {
  const bool negative = n > 0 && p[0] == '-';
  const char* q = p + negative;
  const size_t m = n - negative;
  if (m < 3 || m > 20) return false;
  // The point: within the first nine bytes (at most eight integer digits).
  const auto dots = static_cast<uint32_t>(_mm_movemask_epi8(
      _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)), _mm_set1_epi8('.'))));
  if ((dots & 0x1FF) == 0) return false;
  const auto int_digits = static_cast<size_t>(__builtin_ctz(dots));
  const size_t frac_digits = m - int_digits - 1;
  if (int_digits == 0 || frac_digits == 0 || int_digits + frac_digits > 19 ||
      (q[0] == '0' && int_digits != 1)) {
    return false;
  }
  uint64_t w = 0;
  for (size_t k = 0; k < int_digits; ++k) {
    const auto digit = static_cast<unsigned>(static_cast<unsigned char>(q[k]) - '0');
    if (digit > 9) return false;
    w = w * 10 + digit;
  }
  const char* f = q + int_digits + 1;
  uint64_t frac = 0;
  if (frac_digits <= 16) {
    if (!SixteenDigits(f, frac_digits, &frac)) return false;
  } else {  // 17 or 18: the first one or two, then sixteen
    const size_t head = frac_digits - 16;
    for (size_t k = 0; k < head; ++k) {
      const auto digit = static_cast<unsigned>(static_cast<unsigned char>(f[k]) - '0');
      if (digit > 9) return false;
      frac = frac * 10 + digit;
    }
    uint64_t tail = 0;
    if (!SixteenDigits(f + head, 16, &tail)) return false;
    frac = frac * kPow10[16] + tail;
  }
  w = w * kPow10[frac_digits] + frac;  // < 10^19: no overflow
  return simdjson::builtin::numberparsing::compute_float_64(-static_cast<int64_t>(frac_digits), w,
                                                            negative, *out);
}
#endif

// A double from a number token: the fast shape, else simdjson's own parser (what the
// On-Demand walk's get_double calls on the same bytes, so the same value).
inline bool TokenToDouble(std::string_view tok, double* d) {
#if defined(__SSE4_1__)
  if (ParseDoubleFast(tok.data(), tok.size(), d)) return true;
#endif
  return simdjson::builtin::numberparsing::parse_double(
             reinterpret_cast<const uint8_t*>(tok.data()))
             .get(*d) == simdjson::SUCCESS;
}

bool IsNumberStart(char c) { return c == '-' || (c >= '0' && c <= '9'); }

// One writer per column type (FastWriterFor picks it once per column): no dispatch on the
// type per value.

bool WriteNothing(const ConverterNode&, std::string_view, int16_t, ScalarContext*) { return false; }

bool WriteBool(const ConverterNode& n, std::string_view tok, int16_t rep, ScalarContext*) {
  if (tok == "true") {
    n.column->AddBool(rep, true);
    return true;
  }
  if (tok == "false") {
    n.column->AddBool(rep, false);
    return true;
  }
  return false;
}

bool WriteInteger(const ConverterNode& n, std::string_view tok, int16_t rep, ScalarContext* ctx) {
  int64_t x = 0;
  if (tok.empty() || !IsNumberStart(tok[0]) || !ParseJsonInt64Fast(tok.data(), tok.size(), &x)) {
    return false;
  }
  const FieldConstraints& c = *n.constraints;
  if ((c.min_int && x < *c.min_int) || (c.max_int && x > *c.max_int)) return false;
  if (c.int_multiple_of != 0 && x % c.int_multiple_of != 0) return false;
  if (c.int_multiple_of_unscaled != 0) {
    // multipleOf = unscaled / 10^scale: x is a multiple iff x * 10^scale is one of
    // unscaled (exact; scale <= 18 keeps the product inside 128 bits).
    int128 scaled = static_cast<int128>(x);
    for (int32_t k = 0; k < c.int_multiple_of_scale; ++k) scaled *= 10;
    if (scaled % c.int_multiple_of_unscaled != 0) return false;
  }
  if (n.type == TypeId::kInt) {
    if (x < INT32_MIN || x > INT32_MAX) return false;
    n.column->AddInt32(rep, static_cast<int32_t>(x));
  } else {
    n.column->AddInt64(rep, x);
  }
  if (n.route) ctx->routed = x;
  return true;
}

bool WriteDouble(const ConverterNode& n, std::string_view tok, int16_t rep, ScalarContext*) {
  double d;
  if (tok.empty() || !IsNumberStart(tok[0]) || !TokenToDouble(tok, &d) || !std::isfinite(d)) {
    return false;
  }
  if (!WithinNumberBounds(*n.constraints, d)) return false;
  if (d == 0 && HasNonZeroDigit(tok)) return false;  // underflow: refused the full way
  n.column->AddDouble(rep, d);
  return true;
}

bool WriteDecimal(const ConverterNode& n, std::string_view tok, int16_t rep, ScalarContext*) {
  int128 unscaled = 0;
  if (tok.empty() || !IsNumberStart(tok[0]) ||
      ParseDecimal(tok, n.precision, n.scale, &unscaled) != ParseOutcome::kOk) {
    return false;
  }
  const FieldConstraints& c = *n.constraints;
  if (c.multiple_of > 1 && unscaled % c.multiple_of != 0) return false;
  // Bounds are compared as the text read as a double (see record_converter.cc).
  double as_double = 0;
  if ((c.min_number || c.max_number) &&
      (!ParseNumberToDouble(tok, &as_double) || !WithinNumberBounds(c, as_double))) {
    return false;
  }
  if (n.physical == PhysicalType::kInt32) {
    n.column->AddInt32(rep, static_cast<int32_t>(unscaled));
  } else if (n.physical == PhysicalType::kInt64) {
    n.column->AddInt64(rep, static_cast<int64_t>(unscaled));
  } else {
    // Big-endian two's complement, sign-extended to the column width (<= 16): the last
    // `w` bytes of the 16-byte form.
    char buf[16];
    const uint64_t hi = __builtin_bswap64(static_cast<uint64_t>(unscaled >> 64));
    const uint64_t lo = __builtin_bswap64(static_cast<uint64_t>(unscaled));
    std::memcpy(buf, &hi, 8);
    std::memcpy(buf + 8, &lo, 8);
    const auto w = static_cast<size_t>(n.column->descriptor().type_length);
    n.column->AddBytes(rep, std::string_view(buf + 16 - w, w));
  }
  return true;
}

// The remaining types come from JSON strings. A string without escapes is its token
// minus the quotes (stage 1 has validated its UTF-8 and refused control characters);
// false for any other token.
inline bool PlainString(std::string_view tok, std::string_view* s) {
  if (tok.size() < 2 || tok[0] != '"' || tok.back() != '"') return false;
  *s = tok.substr(1, tok.size() - 2);
  return !HasBackslash(s->data(), s->size());
}

bool WriteString(const ConverterNode& n, std::string_view tok, int16_t rep, ScalarContext*) {
  std::string_view s;
  if (!PlainString(tok, &s)) return false;
  n.column->AddBytes(rep, s);
  return true;
}

// A string enum (its declared type, if any, is string).
bool WriteEnumString(const ConverterNode& n, std::string_view tok, int16_t rep, ScalarContext*) {
  std::string_view s;
  if (!PlainString(tok, &s) || !ListedString(n.constraints->enum_values, s)) return false;
  n.column->AddBytes(rep, s);
  return true;
}

bool WriteDate(const ConverterNode& n, std::string_view tok, int16_t rep, ScalarContext* ctx) {
  std::string_view s;
  int32_t days;
  if (!PlainString(tok, &s) || ParseDate(s, &days) != ParseOutcome::kOk) return false;
  n.column->AddInt32(rep, days);
  if (n.route) ctx->routed = days;
  return true;
}

bool WriteTime(const ConverterNode& n, std::string_view tok, int16_t rep, ScalarContext*) {
  std::string_view s;
  int64_t us;
  if (!PlainString(tok, &s) || ParseTime(s, &us) != ParseOutcome::kOk) return false;
  n.column->AddInt64(rep, us);
  return true;
}

bool WriteTimestamp(const ConverterNode& n, std::string_view tok, int16_t rep, ScalarContext* ctx) {
  std::string_view s;
  int64_t us;
  if (!PlainString(tok, &s) || ParseTimestamp(s, &us) != ParseOutcome::kOk) return false;
  n.column->AddInt64(rep, us);
  if (n.route) ctx->routed = us;
  return true;
}

bool WriteUuid(const ConverterNode& n, std::string_view tok, int16_t rep, ScalarContext*) {
  std::string_view s;
  uint8_t b[16];
  if (!PlainString(tok, &s) || ParseUuid(s, b) != ParseOutcome::kOk) return false;
  n.column->AddBytes(rep, std::string_view(reinterpret_cast<char*>(b), 16));
  return true;
}

bool WriteBase64(const ConverterNode& n, std::string_view tok, int16_t rep, ScalarContext* ctx) {
  std::string_view s;
  if (!PlainString(tok, &s)) return false;
  auto size = base64::DecodedSize(s);
  if (!size) return false;
  ctx->scratch.resize(*size);
  if (!base64::DecodeTo(s, reinterpret_cast<uint8_t*>(ctx->scratch.data()))) return false;
  if (n.type == TypeId::kFixed && *size != static_cast<size_t>(n.length)) return false;
  n.column->AddBytes(rep, std::string_view(ctx->scratch.data(), *size));
  return true;
}

}  // namespace

bool HasBackslash(const char* p, size_t n) {
#if defined(__AVX2__)
  const __m256i bs = _mm256_set1_epi8('\\');
  for (size_t i = 0; i < n; i += 32) {
    auto m = static_cast<uint32_t>(_mm256_movemask_epi8(
        _mm256_cmpeq_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)), bs)));
    if (n - i < 32) m &= (1u << (n - i)) - 1;
    if (m != 0) return true;
  }
  return false;
#else
  return std::memchr(p, '\\', n) != nullptr;
#endif
}

bool WithinNumberBounds(const FieldConstraints& c, long double x) {
  if (c.min_number) {
    long double lo = *c.min_number;
    if (c.exclusive_min_number ? x <= lo : x < lo) return false;
  }
  if (c.max_number) {
    long double hi = *c.max_number;
    if (c.exclusive_max_number ? x >= hi : x > hi) return false;
  }
  return true;
}

bool ParseNumberToDouble(std::string_view tok, double* out) {
  char buf[128];
  if (tok.empty() || tok.size() >= sizeof buf) return false;
  std::memcpy(buf, tok.data(), tok.size());
  buf[tok.size()] = '\0';
  char* end = nullptr;
  *out = std::strtod(buf, &end);
  return end == buf + tok.size();
}

bool ListedString(const std::vector<std::string>& values, std::string_view s) {
  for (const auto& e : values) {
    if (e == s) return true;
  }
  return false;
}

FastScalarWriter FastWriterFor(const ConverterNode& n) {
  const FieldConstraints& c = *n.constraints;
  switch (n.type) {
    case TypeId::kBoolean:
      return WriteBool;
    case TypeId::kInt:
    case TypeId::kLong:
      return WriteInteger;
    case TypeId::kDouble:
      return WriteDouble;
    case TypeId::kDecimal:
      return WriteDecimal;
    default:
      break;
  }
  if (c.has_enum) {
    // Enums of other types than string (and float) go the full way.
    return n.type == TypeId::kString && (c.enum_type.empty() || c.enum_type == "string")
               ? WriteEnumString
               : WriteNothing;
  }
  switch (n.type) {
    case TypeId::kString:
      return WriteString;
    case TypeId::kDate:
      return WriteDate;
    case TypeId::kTime:
      return WriteTime;
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz:
      return WriteTimestamp;
    case TypeId::kUuid:
      return WriteUuid;
    case TypeId::kFixed:
    case TypeId::kBinary:
      return WriteBase64;
    default:
      return WriteNothing;  // float: read from the text as a float, the full way
  }
}

}  // namespace icestream::schema
