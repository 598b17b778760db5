// Avro schemas (Avro specification, "Schema Declaration"), parsed from their JSON text
// for reading files written by others. Writers in icestream emit their schema JSON
// themselves (so that Iceberg's `field-id`, `element-id` and `logicalType` attributes
// stay exactly as written); this model keeps the attributes a reader needs.
//
// A Schema owns all its nodes; nodes refer to each other by pointer, so named types may
// be referenced (also recursively) without ownership cycles. Immutable after Parse;
// safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace icestream::format::avro {

enum class AvroType : uint8_t {
  kNull,
  kBoolean,
  kInt,
  kLong,
  kFloat,
  kDouble,
  kBytes,
  kString,
  kRecord,
  kEnum,
  kArray,
  kMap,
  kUnion,
  kFixed,
};

std::string_view AvroTypeName(AvroType type);

struct Node;

struct Field {
  std::string name;
  const Node* type = nullptr;
  std::optional<int32_t> field_id;  // Iceberg "field-id"
  bool has_default = false;         // a "default" member is present
};

struct Node {
  AvroType type = AvroType::kNull;
  std::string name;          // full name of a record, enum or fixed
  std::string logical_type;  // "" when absent
  std::vector<Field> fields;             // record
  std::vector<std::string> symbols;      // enum
  const Node* items = nullptr;           // array
  const Node* values = nullptr;          // map
  std::vector<const Node*> branches;     // union
  int64_t size = 0;                      // fixed
  int32_t precision = 0, scale = 0;      // decimal logical type
  std::optional<int32_t> element_id;     // Iceberg "element-id" on arrays
  std::optional<int32_t> key_id, value_id;  // Iceberg "key-id"/"value-id" on maps
  bool adjust_to_utc = false;            // Iceberg "adjust-to-utc" on timestamps

  // Index of the record field with this name, or -1.
  int FieldIndex(std::string_view field_name) const;
};

class Schema {
 public:
  // Parses a schema JSON document. Errors are kInvalidArgument naming the problem
  // (unknown type name, duplicate named type, malformed member).
  static Result<std::shared_ptr<const Schema>> Parse(std::string_view json);

  const Node& root() const { return *root_; }

 private:
  Schema() = default;
  struct Builder;
  std::vector<std::unique_ptr<Node>> nodes_;
  const Node* root_ = nullptr;
};

}  // namespace icestream::format::avro
