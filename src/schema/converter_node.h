// ConverterNode: the converter's node of the shredding tree (format/parquet/
// schema_mapping.h), with what the record walks need at hand (column, type, constraints,
// the member name in the forms a raw JSON key is matched against). Built once per
// RecordConverter (record_converter.cc) and read by both of its walks: the On-Demand one
// and the structural-index one (token_walker.h). Not thread-safe (`seen` is scratch).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "format/parquet/column_writer.h"
#include "format/parquet/schema_mapping.h"
#include "iceberg/schema/schema.h"
#include "schema/json_schema.h"

namespace icestream::schema {

struct ConverterNode;
struct ScalarContext;
// A primitive's fast writer (scalar_writer.h): its token -> its column, or false having
// written nothing.
using FastScalarWriter = bool (*)(const ConverterNode& n, std::string_view tok, int16_t rep,
                                  ScalarContext* ctx);

struct ConverterNode {
  const format::parquet::ShredNode* shred = nullptr;
  iceberg::TypeId type = iceberg::TypeId::kBoolean;
  format::parquet::ColumnWriter* column = nullptr;  // primitives
  FastScalarWriter write_fast = nullptr;            // primitives
  format::parquet::PhysicalType physical = format::parquet::PhysicalType::kBoolean;
  int32_t precision = 0, scale = 0, length = 0;
  const FieldConstraints* constraints = nullptr;
  bool must_be_present = false;
  bool route = false;  // the routing field (ConverterOptions::route_field_id)
  std::string name;
  // The name needs no JSON escaping, so a raw key can be compared byte for byte.
  bool simple_name = false;
  // Names of at most 15 bytes: the name and its closing quote as two little-endian
  // words and their masks, so that a raw key is matched with two masked compares.
  bool short_name = false;
  uint64_t key_lo = 0, key_hi = 0, mask_lo = 0, mask_hi = 0;
  std::vector<ConverterNode> children;
  // Structs: member name -> child index (only for wide structs; narrow ones scan).
  std::unordered_map<std::string_view, int> by_name;
  mutable std::vector<uint8_t> seen;  // scratch of a struct walk for > 64 members
};

// Whether the raw (still escaped) key text after its opening quote is child's name
// followed by the closing quote: raw_json_string::unsafe_is_equal without a memcmp call
// (short names are two masked word compares). raw[0, 16) must be readable (the input is
// padded).
inline bool RawKeyEquals(const char* raw, const ConverterNode& child) {
  if (child.short_name) {
    uint64_t lo, hi;
    std::memcpy(&lo, raw, 8);
    std::memcpy(&hi, raw + 8, 8);
    return (((lo ^ child.key_lo) & child.mask_lo) | ((hi ^ child.key_hi) & child.mask_hi)) == 0;
  }
  if (!child.simple_name) return false;
  const std::string& name = child.name;
  const size_t n = name.size();
  if (raw[n] != '"') return false;
  return std::memcmp(raw, name.data(), n) == 0;
}

// The member of struct n whose name a raw key is, among the names that need no escaping:
// the expected member first (members mostly come in schema order), then every member of
// a narrow struct; -1 when none matches (a wide struct's members are then looked up by
// the unescaped key).
inline int LookupRawKey(const ConverterNode& n, const char* raw, size_t hint) {
  if (hint < n.children.size() && RawKeyEquals(raw, n.children[hint])) {
    return static_cast<int>(hint);
  }
  if (!n.by_name.empty()) return -1;
  for (size_t i = 0; i < n.children.size(); ++i) {
    if (RawKeyEquals(raw, n.children[i])) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace icestream::schema
