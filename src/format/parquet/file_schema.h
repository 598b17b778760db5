// The schema of a Parquet file being read: its SchemaElements (parquet.thrift
// SchemaElement, flattened depth first) turned into an Iceberg schema, so that rows can
// be matched to a target schema by field id (Iceberg spec "Column Projection").
//
// Reading rules (parquet-format LogicalTypes.md, "Lists" and "Maps" backward-compatibility
// rules; Iceberg spec Appendix A "Parquet"):
//   - a group annotated LIST holds one repeated child R; the element is R itself when R is
//     a primitive, has several fields, has one repeated field, or is named "array" or
//     "<list>_tuple"; otherwise it is R's only child;
//   - a group annotated MAP (or MAP_KEY_VALUE) holds one repeated group of key and value;
//   - any other group is a struct;
//   - a leaf's Iceberg type comes from its logical type, else its converted type, else its
//     physical type (SourceLeaf below lists what is read).
// Columns whose type has no Iceberg counterpart (INT96, FLOAT16, INTERVAL, UINT_64,
// TIME/TIMESTAMP in NANOS, keyless maps, repeated fields outside a LIST...) are left out
// of the derived schema and listed in skipped(); a struct left without fields, a list
// without its element and a map without key or value are left out with them. Elements
// without a positive field_id (Iceberg ids are positive; DuckDB's FIELD_IDS 'auto'
// starts at 0) get synthetic ids above the file's highest one (is_synthetic()); they
// never match a target field.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "format/parquet/metadata.h"
#include "format/parquet/schema_mapping.h"
#include "iceberg/schema/schema.h"

namespace icestream::format::parquet {

// One leaf column of the file, as stored.
struct SourceLeaf {
  int index = 0;     // position among the file's leaves (= the row group's chunk index)
  std::string path;  // dotted path_in_schema, for messages
  PhysicalType physical = PhysicalType::kBoolean;
  int32_t type_length = 0;  // FIXED_LEN_BYTE_ARRAY width
  int16_t max_def = 0;
  int16_t max_rep = 0;
  // How stored values become values of `type` (set when supported).
  enum class Interp : uint8_t {
    kAsIs,        // the physical value is the Iceberg value
    kUnsigned32,  // INT32 holding UINT_32: zero-extended to long
    kMillis,      // INT32/INT64 in milliseconds: times 1000 to microseconds
  };
  Interp interp = Interp::kAsIs;
  bool supported = false;
  std::string unsupported;  // why not, when !supported
  int32_t field_id = 0;     // after synthetic ids were assigned
  iceberg::Type type;       // the Iceberg type read (when supported)
};

class FileSchema {
 public:
  // Errors: kCorruption for a malformed element list (counts that do not add up, a
  // group without children, a leaf without a type, nesting deeper than 64, duplicate
  // field ids); kUnimplemented never (unsupported columns are skipped instead).
  static Result<FileSchema> Make(const std::vector<SchemaElement>& elements);

  FileSchema(FileSchema&&) = default;
  FileSchema& operator=(FileSchema&&) = default;

  const std::vector<SourceLeaf>& leaves() const { return leaves_; }
  // The Iceberg schema of the columns that can be read (may have no fields).
  const iceberg::Schema& iceberg_schema() const { return *iceberg_; }
  // The writer's view of that schema: its ShredNode tree carries the same definition
  // and repetition levels as the file. Null when the derived schema has no fields.
  const ParquetSchema* parquet_schema() const { return parquet_.get(); }
  // File leaf index of the derived schema's leaf i.
  int file_leaf(int derived_leaf) const { return file_leaf_[static_cast<size_t>(derived_leaf)]; }
  // The derived node with this id (nullptr if none); its parent node (nullptr = root).
  const ShredNode* FindNode(int32_t field_id) const;
  const ShredNode* Parent(int32_t field_id) const;
  bool is_synthetic(int32_t field_id) const { return field_id > max_file_id_; }
  // Columns left out, as "path: reason"; and the field ids found on them or on the
  // groups dropped with them (a target must not expect them to be null-filled).
  const std::vector<std::string>& skipped() const { return skipped_; }
  bool is_skipped_id(int32_t field_id) const;

 private:
  FileSchema() = default;
  void Index(const ShredNode& node, const ShredNode* parent);

  std::vector<SourceLeaf> leaves_;
  std::unique_ptr<iceberg::Schema> iceberg_;
  std::unique_ptr<ParquetSchema> parquet_;
  std::vector<int> file_leaf_;
  std::unordered_map<int32_t, std::pair<const ShredNode*, const ShredNode*>> nodes_;
  std::vector<std::string> skipped_;
  std::vector<int32_t> skipped_ids_;
  int32_t max_file_id_ = 0;
};

}  // namespace icestream::format::parquet
