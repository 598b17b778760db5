// The shape of a streaming table (kds-delivery-spec.md §2.4–§2.6): the registry's JSON
// Schema mapped to an Iceberg schema (§2.5, schema/json_schema.h), the partition source
// column forced required, and the one partition field hour(<column>).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "delivery/channel.h"
#include "iceberg/partition_spec.h"
#include "schema/json_schema.h"

namespace icestream::delivery::table {

struct TableLayout {
  schema::ConvertibleSchema schema;
  int32_t partition_source_id = 0;
  iceberg::PartitionSpec spec;  // hour(source), named <source>_hour ('.' as '_')
};

// Errors are kInvalidArgument with the reason (CreateChannel answers
// InvalidArgumentException): the schema is not in the mapped subset or nests deeper
// than 16 levels; the partition source is missing, not a `string` of `format:
// date-time`, or inside a list or map; the transform is not TIME_HOUR. A dotted source
// name names a nested field when no top-level property has that name.
Result<TableLayout> MakeTableLayout(std::string_view json_schema, const PartitionFieldConfig& field);

// The layout with the field ids the table really has (a catalog assigns fresh ids when
// it creates a table): the table's current schema must have the layout's structure
// (names, types, required flags) and its default spec the layout's partition field.
// kInvalidArgument when the table was changed outside the channel.
Result<TableLayout> ConformLayout(const TableLayout& layout, const iceberg::Schema& table_schema,
                                  const iceberg::PartitionSpec& table_spec);

}  // namespace icestream::delivery::table
