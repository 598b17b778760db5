// The Iceberg schema model (Iceberg spec "Schemas and Data Types"): primitive, struct,
// list and map types with their field ids. Plain data; the JSON codec is schema_json.h.
//
// Lists and maps keep their element / key / value as NestedFields so that every node
// that carries an Iceberg id (struct field, list element, map key, map value) has the
// same shape: {id, name, required, type}. The names of those synthetic fields are fixed
// ("element", "key", "value") and are not part of the JSON form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace icestream::iceberg {

enum class TypeId : uint8_t {
  kBoolean,
  kInt,
  kLong,
  kFloat,
  kDouble,
  kDecimal,  // precision 1..38, scale 0..precision
  kDate,
  kTime,
  kTimestamp,
  kTimestampTz,
  kString,
  kUuid,
  kFixed,  // length > 0
  kBinary,
  kStruct,
  kList,
  kMap,
};

struct NestedField;

struct Type {
  TypeId id = TypeId::kBoolean;
  int32_t precision = 0;  // decimal
  int32_t scale = 0;      // decimal
  int32_t length = 0;     // fixed
  // struct: the fields in order; list: {element}; map: {key, value}.
  std::vector<NestedField> fields;

  bool is_primitive() const { return id < TypeId::kStruct; }
  bool is_nested() const { return !is_primitive(); }
  // Precondition: id == kList.
  const NestedField& element() const;
  // Precondition: id == kMap.
  const NestedField& key() const;
  const NestedField& value() const;

  bool operator==(const Type& other) const;
};

struct NestedField {
  int32_t id = 0;
  std::string name;
  bool required = false;
  Type type;
  std::string doc;  // empty = none

  bool operator==(const NestedField& other) const = default;
};

// Constructors for the common cases.
Type Primitive(TypeId id);
Type Decimal(int32_t precision, int32_t scale);
Type Fixed(int32_t length);
Type Struct(std::vector<NestedField> fields);
Type List(int32_t element_id, bool element_required, Type element);
Type Map(int32_t key_id, Type key, int32_t value_id, bool value_required, Type value);

struct Schema {
  int32_t schema_id = 0;
  std::vector<int32_t> identifier_field_ids;
  std::vector<NestedField> fields;

  bool operator==(const Schema& other) const = default;
};

// The spec's JSON spelling of a primitive type: "long", "decimal(9,2)", "fixed[16]".
// Precondition: type.is_primitive().
std::string PrimitiveTypeName(const Type& type);
// Parses a primitive type name; spaces inside decimal(...) and fixed[...] are accepted.
Result<Type> ParsePrimitiveType(std::string_view name);

// Checks the invariants the spec states: ids unique and positive, decimal precision
// 1..38 and 0 <= scale <= precision, fixed length > 0, map keys required, struct field
// names unique within their struct, identifier fields primitive and required.
Status Validate(const Schema& schema);

// The highest id used anywhere in the schema (the table's last-column-id); 0 if none.
int32_t HighestFieldId(const Schema& schema);

// Finds the field with the given id anywhere in the schema (struct fields, list
// elements, map keys and values); nullptr if absent. The pointer is valid while the
// schema is alive and unchanged.
const NestedField* FindField(const Schema& schema, int32_t id);

}  // namespace icestream::iceberg
