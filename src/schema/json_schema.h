// JSON Schema (draft-04 and draft-07, the subset of kds-delivery-spec.md §2.5) -> an
// Iceberg schema with fresh field ids, plus the value constraints the converter checks
// per record (integer and number bounds, enums, multipleOf of decimals).
//
// Mapping (§2.5, followed exactly; [D] marks our decisions for documented gaps):
//   string                                  -> string
//   string, format date-time / date / time  -> timestamptz / date / time
//   string, format uuid                     -> uuid
//   string, format byte|base64 or contentEncoding base64 -> binary (base64 text)
//   integer, bounds within [-2^31, 2^31-1]  -> int   ([D] both bounds needed for int;
//                                              maximum or exclusiveMaximum <= 2^31-1
//                                              with no lower bound below -2^31)
//   integer, otherwise (no bounds: [D])     -> long
//   number with multipleOf                  -> decimal(38, scale of multipleOf)
//   number                                  -> double
//   boolean                                 -> boolean
//   object with properties                  -> struct (required array -> required)
//   object with additionalProperties schema -> map<string, V>
//   array with items                        -> list<E>
//   enum                                    -> string
// [D] `type: [T, "null"]` makes a field (or list element / map value) nullable; other
// unions, oneOf/anyOf/allOf and $ref are refused. Nesting (struct, list, map levels
// below the root) deeper than max_depth is refused. Field ids are assigned as Iceberg
// Java does for a new table: a struct's fields first, then their nested types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "iceberg/schema/schema.h"
#include "schema/value_parsers.h"

namespace icestream::schema {

// Checks beyond the Iceberg type, by field id.
struct FieldConstraints {
  // integer (int/long): inclusive bounds.
  std::optional<int64_t> min_int;
  std::optional<int64_t> max_int;
  // integer: multipleOf (0 = none) when it is a whole number; otherwise as
  // int_multiple_of_unscaled / 10^int_multiple_of_scale (7 is not a multiple of 1.5 =
  // 15 / 10^1, 7 is one of 0.5). Both checked exactly.
  int64_t int_multiple_of = 0;
  int128 int_multiple_of_unscaled = 0;
  int32_t int_multiple_of_scale = 0;
  // number (double and decimal): bounds, inclusive unless the exclusive flag is set.
  std::optional<double> min_number;
  std::optional<double> max_number;
  bool exclusive_min_number = false;
  bool exclusive_max_number = false;
  // decimal: the unscaled multipleOf at the column's scale (0 = none).
  int128 multiple_of = 0;
  // enum: allowed values — strings as-is, numbers by value (2 equals 2.0), booleans as
  // their JSON text; kept apart so the string "1" is not the number 1.
  std::vector<std::string> enum_values;
  std::vector<double> enum_numbers;
  std::vector<std::string> enum_json_values;
  bool has_enum = false;
  // enum with a declared "type" ("string", "integer", "number", "boolean"): a value of
  // another JSON kind is a type mismatch even if its text is listed. Empty: any kind.
  std::string enum_type;
  // JSON null is accepted as a null value (the field is optional or typed [T,"null"]).
  bool nullable = false;
  // Listed in the parent's `required`: the member must be present (maybe null when
  // nullable).
  bool must_be_present = false;
};

struct ConvertibleSchema {
  iceberg::Schema schema;
  std::unordered_map<int32_t, FieldConstraints> constraints;
};

struct JsonSchemaOptions {
  int max_depth = 16;
};

// Errors: kInvalidArgument for malformed or out-of-subset schemas (message names the
// JSON pointer of the offending part), kUnimplemented for unsupported keywords.
Result<ConvertibleSchema> JsonSchemaToIceberg(std::string_view json_schema,
                                              const JsonSchemaOptions& options = {});

// Builds a ConvertibleSchema from an Iceberg schema JSON (Iceberg spec Appendix C):
// no extra constraints; optional fields are nullable, required ones must be present.
Result<ConvertibleSchema> IcebergSchemaToConvertible(std::string_view iceberg_schema_json);

// Either of the above, by looking at the document: an Iceberg schema has
// "type":"struct" and a "fields" array; anything else is taken as a JSON Schema.
Result<ConvertibleSchema> LoadConvertibleSchema(std::string_view text);

}  // namespace icestream::schema
