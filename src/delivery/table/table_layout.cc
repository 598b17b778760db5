// Streaming-table layout: schema mapping, forced-required partition column, hour spec.
#include "delivery/table/table_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

namespace icestream::delivery::table {

namespace {

// Finds the field named by `source` (a top-level name, or a dotted path through structs)
// and returns the fields on the path, outermost first.
std::vector<iceberg::NestedField*> FindPath(std::vector<iceberg::NestedField>* fields,
                                            const std::string& source) {
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
bool SameShape(const iceberg::Type& a, const iceberg::Type& b,
               std::unordered_map<int32_t, int32_t>* remap) {
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

Result<TableLayout> MakeTableLayout(std::string_view json_schema,
                                    const PartitionFieldConfig& field) {
  if (field.transform != "TIME_HOUR") {
    return InvalidArgument(fmt::format(
        "PartitionField Transform {} is not supported; use TIME_HOUR.", field.transform));
  }
  auto mapped = schema::JsonSchemaToIceberg(json_schema);
  if (!mapped.ok()) {
    return InvalidArgument("The registry schema cannot be mapped to an Iceberg table: " +
                           mapped.status().message());
  }
  TableLayout layout;
  layout.schema = std::move(*mapped);
  auto path = FindPath(&layout.schema.schema.fields, field.source_name);
  if (path.empty()) {
    return InvalidArgument(
        fmt::format("PartitionField SourceName {} is not a property of the registry schema (nested "
                    "properties are named with "
                    "dots, and only through objects).",
                    field.source_name));
  }
  iceberg::NestedField* col = path.back();
  if (col->type.id != iceberg::TypeId::kTimestampTz) {
    return InvalidArgument(fmt::format(
        "PartitionField SourceName {} must be a string property with format date-time (an Iceberg "
        "timestamptz "
        "column); it maps to {}.",
        field.source_name,
        col->type.is_primitive() ? iceberg::PrimitiveTypeName(col->type) : "a nested type"));
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
  layout.spec.fields = {
      {col->id, iceberg::kFirstPartitionFieldId, name + "_hour", iceberg::Transform::Hour()}};
  RETURN_IF_ERROR(iceberg::ValidatePartitionSpec(layout.spec, layout.schema.schema));
  return layout;
}

Result<TableLayout> ConformLayout(const TableLayout& layout, const iceberg::Schema& table_schema,
                                  const iceberg::PartitionSpec& table_spec) {
  std::unordered_map<int32_t, int32_t> remap;
  if (!SameShape(iceberg::Struct(layout.schema.schema.fields), iceberg::Struct(table_schema.fields),
                 &remap)) {
    return InvalidArgument(
        "The table's schema is no longer the one the channel created it with (it was changed "
        "outside the "
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
        "The table's partition spec is no longer the channel's hourly partitioning (it was changed "
        "outside the "
        "channel); the channel cannot write it.");
  }
  out.spec = table_spec;
  return out;
}

}  // namespace icestream::delivery::table

namespace icestream::delivery::table {

namespace {

using iceberg::NestedField;
using iceberg::Type;
using iceberg::TypeId;

// Whether values of `from` can be read as `to` (Iceberg's allowed promotions).
bool Widens(const Type& from, const Type& to) {
  if (from.id == TypeId::kInt && to.id == TypeId::kLong) return true;
  if (from.id == TypeId::kFloat && to.id == TypeId::kDouble) return true;
  return from.id == TypeId::kDecimal && to.id == TypeId::kDecimal && from.scale == to.scale &&
         to.precision > from.precision;
}

void AssignIds(NestedField* f, int32_t* last) {
  f->id = ++*last;
  for (auto& c : f->type.fields) AssignIds(&c, last);
}

std::string Join(const std::string& path, const std::string& name) {
  return path.empty() ? name : path + "." + name;
}

std::string TypeText(const Type& t) {
  switch (t.id) {
    case TypeId::kStruct:
      return "struct";
    case TypeId::kList:
      return "list";
    case TypeId::kMap:
      return "map";
    default:
      return iceberg::PrimitiveTypeName(t);
  }
}

Status EvolveFields(std::vector<NestedField>* table, const std::vector<NestedField>& version,
                    int32_t* last, const std::string& path);

Status EvolveField(NestedField* tf, const NestedField& vf, int32_t* last, const std::string& path) {
  if (tf->required && !vf.required) {
    return InvalidArgument(
        fmt::format("column {} is required in the table but optional in the version", path));
  }
  Type& t = tf->type;
  const Type& v = vf.type;
  if (t.is_primitive() && v.is_primitive()) {
    if (t == v || Widens(v, t)) return Status::OK();
    if (Widens(t, v)) {
      t.id = v.id;
      t.precision = v.precision;
      t.scale = v.scale;
      return Status::OK();
    }
    return InvalidArgument(
        fmt::format("column {} changes type from {} to {}", path, TypeText(t), TypeText(v)));
  }
  if (t.id != v.id) {
    return InvalidArgument(
        fmt::format("column {} changes type from {} to {}", path, TypeText(t), TypeText(v)));
  }
  switch (t.id) {
    case TypeId::kStruct:
      return EvolveFields(&t.fields, v.fields, last, path);
    case TypeId::kList:
      return EvolveField(&t.fields[0], v.fields[0], last, path + ".element");
    case TypeId::kMap:
      if (!(t.fields[0].type == v.fields[0].type)) {
        return InvalidArgument(fmt::format("the keys of map {} change type", path));
      }
      return EvolveField(&t.fields[1], v.fields[1], last, path + ".value");
    default:
      return Internal("unreachable");
  }
}

Status EvolveFields(std::vector<NestedField>* table, const std::vector<NestedField>& version,
                    int32_t* last, const std::string& path) {
  for (const auto& vf : version) {
    auto it = std::find_if(table->begin(), table->end(),
                           [&](const NestedField& f) { return f.name == vf.name; });
    std::string p = Join(path, vf.name);
    if (it == table->end()) {
      if (vf.required) {
        return InvalidArgument(fmt::format(
            "the version adds column {} as required; only optional columns can be added", p));
      }
      NestedField added = vf;
      AssignIds(&added, last);
      table->push_back(std::move(added));
      continue;
    }
    RETURN_IF_ERROR(EvolveField(&*it, vf, last, p));
  }
  for (const auto& tf : *table) {
    bool kept = std::any_of(version.begin(), version.end(),
                            [&](const NestedField& f) { return f.name == tf.name; });
    if (!kept && tf.required) {
      return InvalidArgument(fmt::format(
          "column {} is required in the table but missing from the version", Join(path, tf.name)));
    }
  }
  return Status::OK();
}

void Paths(const std::vector<NestedField>& fields, const std::string& path,
           std::map<std::string, int32_t>* by_path, std::map<int32_t, std::string>* by_id) {
  for (const auto& f : fields) {
    std::string p = Join(path, f.name);
    (*by_path)[p] = f.id;
    (*by_id)[f.id] = p;
    Paths(f.type.fields, p, by_path, by_id);
  }
}

}  // namespace

Result<iceberg::Schema> EvolveSchema(const iceberg::Schema& table, const iceberg::Schema& version,
                                     int32_t* last_column_id) {
  iceberg::Schema out = table;
  RETURN_IF_ERROR(EvolveFields(&out.fields, version.fields, last_column_id, ""));
  return out;
}

Result<TableLayout> LayoutFor(const TableLayout& version, const iceberg::Schema& table_schema,
                              const iceberg::PartitionSpec& table_spec) {
  int32_t last = iceberg::HighestFieldId(table_schema);
  ASSIGN_OR_RETURN(iceberg::Schema evolved,
                   EvolveSchema(table_schema, version.schema.schema, &last));
  if (evolved.fields != table_schema.fields) {
    return InvalidArgument("the table's schema does not hold this schema version yet");
  }
  std::map<std::string, int32_t> table_paths, version_paths;
  std::map<int32_t, std::string> table_ids, version_ids;
  Paths(table_schema.fields, "", &table_paths, &table_ids);
  Paths(version.schema.schema.fields, "", &version_paths, &version_ids);
  TableLayout out;
  out.schema.schema = table_schema;
  for (const auto& [id, c] : version.schema.constraints) {
    auto p = version_ids.find(id);
    if (p == version_ids.end()) continue;
    auto t = table_paths.find(p->second);
    if (t != table_paths.end()) out.schema.constraints[t->second] = c;
  }
  const std::string& source = version_ids.at(version.partition_source_id);
  auto src = table_paths.find(source);
  if (src == table_paths.end())
    return InvalidArgument("the table lost its partition column " + source);
  out.partition_source_id = src->second;
  if (table_spec.fields.size() != 1 || table_spec.fields[0].source_id != out.partition_source_id ||
      table_spec.fields[0].transform != iceberg::Transform::Hour()) {
    return InvalidArgument(
        "The table's partition spec is no longer the channel's hourly partitioning (it was changed "
        "outside the "
        "channel); the channel cannot write it.");
  }
  out.spec = table_spec;
  return out;
}

}  // namespace icestream::delivery::table
