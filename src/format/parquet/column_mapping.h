// Matching the leaves of a target schema (the schema rows are copied into) to the
// columns of a file, by Iceberg field id (Iceberg spec "Column Projection" and "Schema
// Evolution"):
//   - a target field whose id the file has reads that column: its definition levels are
//     mapped node by node (a field that became optional gains a level), repetition
//     levels are unchanged, values are converted where Iceberg allows a type promotion
//     (int -> long, float -> double, decimal(P,S) -> decimal(P',S) with P' >= P, across
//     INT32 / INT64 / FIXED storage);
//   - a target field the file lacks (added later) is null wherever its nearest ancestor
//     that the file has is present, and absent (with that ancestor's level) where the
//     ancestor is null or absent. The presence comes from the levels of one of the
//     ancestor's columns (the one with the fewest repetition levels), entries inside
//     deeper lists skipped;
//   - file columns no target field names are not read.
// Refused (kInvalidArgument, naming the field): a field that changed kind (struct, list,
// map, primitive) or moved to another parent, a type change Iceberg does not allow, a
// field optional in the file but required in the target, a required target field the
// file lacks (unless an optional ancestor is absent with it), a target field that is an
// unreadable column of the file (file_schema.h skipped()).
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "format/parquet/file_schema.h"
#include "format/parquet/schema_mapping.h"

namespace icestream::format::parquet {

// How a value read from the file becomes the target leaf's physical value.
enum class ValueConversion : uint8_t {
  kNone,            // same physical type and meaning
  kInt32ToInt64,    // int -> long
  kUInt32ToInt64,   // UINT_32 -> long
  kFloatToDouble,   // float -> double
  kMillisToMicros,  // INT32 / INT64 milliseconds -> INT64 microseconds
  kDecimal,         // decimal unscaled value between INT32 / INT64 / FIXED / BYTE_ARRAY storage
};

struct LeafPlan {
  int target_leaf = 0;
  // The file leaf whose levels (and values, unless `nulls`) feed this target leaf; -1
  // when the nearest present ancestor is the root (one null entry per record).
  int source_leaf = -1;
  bool nulls = false;            // the field is not in the file: entries only, no values
  int16_t rep_limit = 0;         // source entries with a higher repetition level are skipped
  std::vector<int16_t> def_map;  // source definition level -> target definition level
  ValueConversion conversion = ValueConversion::kNone;
};

// One plan per target leaf, in target leaf order. Synthetic ids (file_schema.h) match
// only when the target is the file's own derived schema.
Result<std::vector<LeafPlan>> PlanCopy(const FileSchema& source, const ParquetSchema& target);

}  // namespace icestream::format::parquet
