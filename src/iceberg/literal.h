// Literal: one non-null value of an Iceberg primitive type, with the spec's binary
// single-value serialization (Iceberg spec Appendix D), used for column bounds and
// partition summaries in manifests. Partition tuples are vectors of optional literals
// (null = std::nullopt).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"
#include "iceberg/schema/schema.h"

namespace icestream::iceberg {

__extension__ typedef __int128 int128;  // decimal unscaled values (GCC/Clang extension)

struct Literal {
  // boolean: bool; int, date: int32_t; long, time, timestamp, timestamptz: int64_t;
  // float; double; string, binary, fixed, uuid (16 raw bytes): std::string;
  // decimal: the unscaled value.
  using Value = std::variant<bool, int32_t, int64_t, float, double, std::string, int128>;

  Type type;  // primitive
  Value value;

  static Literal Boolean(bool v) { return {Primitive(TypeId::kBoolean), v}; }
  static Literal Int(int32_t v) { return {Primitive(TypeId::kInt), v}; }
  static Literal Long(int64_t v) { return {Primitive(TypeId::kLong), v}; }
  static Literal Float(float v) { return {Primitive(TypeId::kFloat), v}; }
  static Literal Double(double v) { return {Primitive(TypeId::kDouble), v}; }
  static Literal Date(int32_t days) { return {Primitive(TypeId::kDate), days}; }
  static Literal Time(int64_t micros) { return {Primitive(TypeId::kTime), micros}; }
  static Literal Timestamp(int64_t micros) { return {Primitive(TypeId::kTimestamp), micros}; }
  static Literal TimestampTz(int64_t micros) { return {Primitive(TypeId::kTimestampTz), micros}; }
  static Literal String(std::string v) { return {Primitive(TypeId::kString), std::move(v)}; }
  static Literal Binary(std::string v) { return {Primitive(TypeId::kBinary), std::move(v)}; }
  static Literal Uuid(std::string bytes16) { return {Primitive(TypeId::kUuid), std::move(bytes16)}; }
  static Literal FixedBytes(std::string v) {
    return {Fixed(static_cast<int32_t>(v.size())), std::move(v)};
  }
  static Literal DecimalValue(int32_t precision, int32_t scale, int128 unscaled) {
    return {Decimal(precision, scale), unscaled};
  }

  // Accessors; precondition: the matching variant alternative.
  int32_t as_int() const { return std::get<int32_t>(value); }
  int64_t as_long() const { return std::get<int64_t>(value); }
  const std::string& as_bytes() const { return std::get<std::string>(value); }
  int128 as_decimal() const { return std::get<int128>(value); }

  bool operator==(const Literal& other) const;
};

using PartitionTuple = std::vector<std::optional<Literal>>;

// Checks that the value alternative matches the type.
Status CheckLiteral(const Literal& literal);

// Binary single-value serialization (Appendix D): ints and dates 4 bytes LE, longs,
// times and timestamps 8 bytes LE, floats IEEE LE, strings UTF-8 without length, uuids
// 16 bytes, decimals the minimal big-endian two's complement of the unscaled value.
std::string ToBytes(const Literal& literal);
// Errors: kInvalidArgument when the bytes do not fit the type (wrong width). A bound
// written for a narrower type before promotion (4-byte bound of a long column) is
// accepted and widened.
Result<Literal> FromBytes(const Type& type, std::string_view bytes);

// Order of two literals of the same type (<0, 0, >0): numeric for numbers, unsigned
// byte order for strings (= code point order), binary, fixed and uuid; -0.0 < +0.0.
int Compare(const Literal& a, const Literal& b);

// Minimal big-endian two's complement bytes of an unscaled decimal.
std::string DecimalToBytes(int128 unscaled);
// Number of bytes Avro and Parquet use for decimal(P, ·) as fixed (Iceberg spec
// Appendix A: the minimum that holds 10^P - 1).
int DecimalRequiredBytes(int32_t precision);

// Text for humans and partition paths: dates "2017-11-16", timestamps
// "2017-11-16T22:31:08.000001" (tz: with "+00:00"), decimals "14.20", uuids in canonical
// form, binary as hex.
std::string ToHumanString(const Literal& literal);

}  // namespace icestream::iceberg
