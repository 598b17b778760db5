// Iceberg schema -> Parquet schema (parquet-format LogicalTypes.md, Iceberg spec
// Appendix A "Parquet"), plus what record shredding needs: each leaf column's
// definition / repetition levels and a tree of nodes carrying the levels at which a
// value, a null, an empty list or a missing map is recorded (Dremel encoding,
// parquet-format README "Nested Encoding").
//
//   Iceberg                      Parquet
//   list<E> (id L, element E)    <rep> group name (LIST) = L {
//                                  repeated group list { <rep> E element = elementId } }
//   map<K,V> (id M)              <rep> group name (MAP) = M {
//                                  repeated group key_value {
//                                    required K key = keyId; <rep> V value = valueId } }
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "format/parquet/metadata.h"
#include "format/parquet/types.h"
#include "iceberg/schema/schema.h"

namespace icestream::format::parquet {

// One leaf column, in schema (depth-first) order.
struct ColumnDescriptor {
  int index = 0;
  std::vector<std::string> path;  // path_in_schema
  int32_t field_id = 0;
  iceberg::Type type;             // the leaf's Iceberg primitive type
  PhysicalType physical = PhysicalType::kBoolean;
  int32_t type_length = 0;        // FIXED_LEN_BYTE_ARRAY width
  int16_t max_def = 0;
  int16_t max_rep = 0;
  SortOrder order = SortOrder::kSigned;
  bool inside_repeated = false;   // below a list or map
};

// A node of the shredding tree: one per Iceberg field (struct field, list element,
// map key, map value).
struct ShredNode {
  enum class Kind : uint8_t { kPrimitive, kStruct, kList, kMap };
  Kind kind = Kind::kPrimitive;
  int32_t field_id = 0;
  std::string name;
  bool optional = false;
  // Definition level of an entry in which this node holds a value (is non-null).
  // A null of an optional node is recorded at def - 1.
  int16_t def = 0;
  // Lists and maps: the repetition level of every element after the first. An empty
  // list/map is recorded at def (the node is present, its repeated group is not);
  // elements live at def + 1 and deeper.
  int16_t rep = 0;
  // The leaf columns under this node: [leaf_begin, leaf_end). A primitive node's own
  // column is leaf_begin.
  int leaf_begin = 0;
  int leaf_end = 0;
  const iceberg::Type* type = nullptr;  // points into ParquetSchema::iceberg_schema()
  // struct: its fields; list: {element}; map: {key, value}.
  std::vector<ShredNode> children;
};

class ParquetSchema {
 public:
  // Fails with kInvalidArgument for types Parquet cannot hold (an empty struct).
  static Result<ParquetSchema> Make(const iceberg::Schema& schema);

  ParquetSchema(const ParquetSchema&) = delete;
  ParquetSchema& operator=(const ParquetSchema&) = delete;
  ParquetSchema(ParquetSchema&&) = default;
  ParquetSchema& operator=(ParquetSchema&&) = default;

  const iceberg::Schema& iceberg_schema() const { return *iceberg_; }
  // The flattened SchemaElement list, root first.
  const std::vector<SchemaElement>& elements() const { return elements_; }
  const std::vector<ColumnDescriptor>& columns() const { return columns_; }
  // The root: a required struct whose children are the top-level fields (def 0, rep 0).
  const ShredNode& root() const { return root_; }

 private:
  ParquetSchema() = default;
  // Heap-held so that ShredNode::type pointers survive moves of the ParquetSchema.
  std::unique_ptr<iceberg::Schema> iceberg_;
  std::vector<SchemaElement> elements_;
  std::vector<ColumnDescriptor> columns_;
  ShredNode root_;
};

// Bytes of a FIXED_LEN_BYTE_ARRAY that holds any decimal of this precision
// (LogicalTypes.md "DECIMAL").
int32_t DecimalByteWidth(int32_t precision);

}  // namespace icestream::format::parquet
