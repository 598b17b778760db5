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
Result<TableLayout> MakeTableLayout(std::string_view json_schema,
                                    const PartitionFieldConfig& field);

// The layout with the field ids the table really has (a catalog assigns fresh ids when
// it creates a table): the table's current schema must have the layout's structure
// (names, types, required flags) and its default spec the layout's partition field.
// kInvalidArgument when the table was changed outside the channel.
Result<TableLayout> ConformLayout(const TableLayout& layout, const iceberg::Schema& table_schema,
                                  const iceberg::PartitionSpec& table_spec);

// Schema evolution beyond AWS (docs/channels.md "Schema evolution"): the table schema that
// holds the records of a registry version, given the table's current schema. Columns are
// matched by name (struct fields at every level; list elements and map values by
// position). Compatible, with the table schema returned changed:
//   - a column the version adds, optional (with its nested fields): it gets ids from
//     *last_column_id + 1 on (which moves);
//   - a column whose type the version widens: int -> long, float -> double, decimal(P,S)
//     -> decimal(P',S) with P' > P.
// Compatible without a change: the same type, or a type the table's widens (int values
// in a long column); a column the version lacks that the table has as optional; a
// column the version requires that the table has as optional.
// Anything else is kInvalidArgument with the reason: a new required column, a column
// the table requires that the version lacks or makes optional, any other type change.
Result<iceberg::Schema> EvolveSchema(const iceberg::Schema& table, const iceberg::Schema& version,
                                     int32_t* last_column_id);

// The layout for converting records of a registry version (`version`, mapped with its
// partition column forced required) into a table whose current schema is
// `table_schema`, which must already hold the version (EvolveSchema gives it back
// unchanged): the table's schema and ids, the version's value constraints moved to the
// table's ids by column path; columns the version lacks take nulls.
Result<TableLayout> LayoutFor(const TableLayout& version, const iceberg::Schema& table_schema,
                              const iceberg::PartitionSpec& table_spec);

}  // namespace icestream::delivery::table
