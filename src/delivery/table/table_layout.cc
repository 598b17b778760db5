// Streaming-table layout: schema mapping, forced-required partition column, hour spec.
#include "delivery/table/table_layout.h"

#include <fmt/format.h>

#include <unordered_map>

namespace icestream::delivery::table {

namespace {

// Finds the field named by `source` (a top-level name, or a dotted path through structs)
// and returns the fields on the path, outermost first.
std::vector<iceberg::NestedField*> FindPath(std::vector<iceberg::NestedField>* fields, const std::string& source) {
  for (auto& f : *fields) {
    if (f.name == source) return {&f};
  }
  size_t dot = source.find('.');
  if (dot == std::string::npos) return {};
  std::string head = source.substr(0, dot);
  for (auto& f : *fields) {
    if (f.name != head || f.type.id != iceberg::TypeId::kStruct) continue;
    auto rest = FindPath(&f.type.fields, source.substr(dot + 1));
    if (rest.empty()) return {};
    rest.insert(rest.begin(), &f);
    return rest;
  }
  return {};
}

// Compares the structure of two types (names, types, required flags) and records the
// id mapping from `a` to `b`.
bool SameShape(const iceberg::Type& a, const iceberg::Type& b, std::unordered_map<int32_t, int32_t>* remap) {
  if (a.id != b.id || a.precision != b.precision || a.scale != b.scale || a.length != b.length ||
      a.fields.size() != b.fields.size()) {
    return false;
  }
  for (size_t i = 0; i < a.fields.size(); ++i) {
    const auto& fa = a.fields[i];
    const auto& fb = b.fields[i];
    if (fa.name != fb.name || fa.required != fb.required) return false;
    (*remap)[fa.id] = fb.id;
    if (!SameShape(fa.type, fb.type, remap)) return false;
  }
  return true;
}

}  // namespace

Result<TableLayout> MakeTableLayout(std::string_view json_schema, const PartitionFieldConfig& field) {
  if (field.transform != "TIME_HOUR") {
    return InvalidArgument(fmt::format("PartitionField Transform {} is not supported; use TIME_HOUR.", field.transform));
  }
  auto mapped = schema::JsonSchemaToIceberg(json_schema);
  if (!mapped.ok()) {
    return InvalidArgument("The registry schema cannot be mapped to an Iceberg table: " + mapped.status().message());
  }
  TableLayout layout;
  layout.schema = std::move(*mapped);
  auto path = FindPath(&layout.schema.schema.fields, field.source_name);
  if (path.empty()) {
    return InvalidArgument(fmt::format(
        "PartitionField SourceName {} is not a property of the registry schema (nested properties are named with "
        "dots, and only through objects).",
        field.source_name));
  }
  iceberg::NestedField* col = path.back();
  if (col->type.id != iceberg::TypeId::kTimestampTz) {
    return InvalidArgument(fmt::format(
        "PartitionField SourceName {} must be a string property with format date-time (an Iceberg timestamptz "
        "column); it maps to {}.",
        field.source_name, col->type.is_primitive() ? iceberg::PrimitiveTypeName(col->type) : "a nested type"));
  }
  // §2.5: the partition source column is required, and so is every struct on its path
  // (a missing parent would make the value null as well).
  for (iceberg::NestedField* f : path) {
    f->required = true;
    auto& c = layout.schema.constraints[f->id];
    c.must_be_present = true;
    c.nullable = false;
  }
  layout.partition_source_id = col->id;
  std::string name = field.source_name;
  for (auto& ch : name) {
    if (ch == '.') ch = '_';
  }
  layout.spec.fields = {{col->id, iceberg::kFirstPartitionFieldId, name + "_hour", iceberg::Transform::Hour()}};
  RETURN_IF_ERROR(iceberg::ValidatePartitionSpec(layout.spec, layout.schema.schema));
  return layout;
}

Result<TableLayout> ConformLayout(const TableLayout& layout, const iceberg::Schema& table_schema,
                                  const iceberg::PartitionSpec& table_spec) {
  std::unordered_map<int32_t, int32_t> remap;
  if (!SameShape(iceberg::Struct(layout.schema.schema.fields), iceberg::Struct(table_schema.fields), &remap)) {
    return InvalidArgument(
        "The table's schema is no longer the one the channel created it with (it was changed outside the "
        "channel); the channel cannot write it.");
  }
  TableLayout out;
  out.schema.schema = table_schema;
  for (const auto& [id, c] : layout.schema.constraints) {
    auto it = remap.find(id);
    if (it != remap.end()) out.schema.constraints[it->second] = c;
  }
  out.partition_source_id = remap.at(layout.partition_source_id);
  if (table_spec.fields.size() != 1 || table_spec.fields[0].source_id != out.partition_source_id ||
      table_spec.fields[0].transform != iceberg::Transform::Hour()) {
    return InvalidArgument(
        "The table's partition spec is no longer the channel's hourly partitioning (it was changed outside the "
        "channel); the channel cannot write it.");
  }
  out.spec = table_spec;
  return out;
}

}  // namespace icestream::delivery::table
