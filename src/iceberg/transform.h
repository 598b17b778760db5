// Partition and sort transforms (Iceberg spec "Partition Transforms", "Bucket Transform
// Details", "Truncate Transform Details", Appendix B for the bucket hash).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "iceberg/literal.h"
#include "iceberg/schema/schema.h"

namespace icestream::iceberg {

enum class TransformKind : uint8_t {
  kIdentity,
  kBucket,    // param = N
  kTruncate,  // param = W
  kYear,
  kMonth,
  kDay,
  kHour,
  kVoid,
  kUnknown,  // a transform this version does not know; kept by name, never applied
};

struct Transform {
  TransformKind kind = TransformKind::kIdentity;
  int32_t param = 0;
  std::string unknown_name;  // kUnknown only

  static Transform Identity() { return {}; }
  static Transform Bucket(int32_t n) { return {TransformKind::kBucket, n, {}}; }
  static Transform Truncate(int32_t w) { return {TransformKind::kTruncate, w, {}}; }
  static Transform Year() { return {TransformKind::kYear, 0, {}}; }
  static Transform Month() { return {TransformKind::kMonth, 0, {}}; }
  static Transform Day() { return {TransformKind::kDay, 0, {}}; }
  static Transform Hour() { return {TransformKind::kHour, 0, {}}; }
  static Transform Void() { return {TransformKind::kVoid, 0, {}}; }

  bool operator==(const Transform& other) const = default;
};

// "identity", "bucket[16]", "truncate[10]", "year", "month", "day", "hour", "void".
std::string TransformName(const Transform& t);
// Parses a transform name. Unknown names give kUnknown (readers must tolerate them);
// malformed parameters (bucket[0], truncate[x]) are kInvalidArgument.
Result<Transform> ParseTransform(std::string_view name);

// The type of the transform's result for a source type; kInvalidArgument when the
// transform does not apply to that type (e.g. hour of a date).
Result<Type> TransformResultType(const Transform& t, const Type& source);

// Applies the transform; null stays null. Precondition: the literal is of a source
// type the transform accepts (TransformResultType succeeded).
Result<std::optional<Literal>> ApplyTransform(const Transform& t, const std::optional<Literal>& v);

// Murmur3 x86 32-bit hash with seed 0 of the value's bucket-hash bytes (Appendix B):
// int, long and date as 8-byte little-endian longs, timestamps and times as 8-byte
// micros, strings as UTF-8, uuids as 16 big-endian bytes, decimals as the minimal
// big-endian unscaled bytes, fixed and binary raw.
int32_t BucketHash(const Literal& v);
uint32_t Murmur3_32(std::string_view data, uint32_t seed = 0);

// Text of a transformed value in partition paths (Java's toHumanString): day
// "2017-11-16", hour "2017-11-16-22", month "2017-11", year "2017", others as the
// literal's text; "null" for null.
std::string TransformHumanString(const Transform& t, const std::optional<Literal>& v);

}  // namespace icestream::iceberg
