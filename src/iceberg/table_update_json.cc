// TableUpdate / TableRequirement <-> JSON (Iceberg REST OpenAPI, components
// "TableUpdate" and "TableRequirement").
#include "iceberg/table_update_json.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "iceberg/json_util.h"
#include "iceberg/overloaded.h"
#include "iceberg/schema/schema_json.h"
#include "iceberg/table_metadata_json.h"

namespace icestream::iceberg {

using nlohmann::json;
namespace ju = json_util;

namespace {

Result<std::vector<int32_t>> IntList(const json& j, const char* key, std::string_view where) {
  ASSIGN_OR_RETURN(auto longs, ju::LongList(j, key, where));
  std::vector<int32_t> out;
  for (int64_t v : longs) {
    if (v < INT32_MIN || v > INT32_MAX) return InvalidArgument(fmt::format("{}: \"{}\" out of range", where, key));
    out.push_back(static_cast<int32_t>(v));
  }
  return out;
}

Result<StatisticsFile> StatisticsFrom(const json& j, const char* key, std::string_view where) {
  const json* s = ju::Find(j, key);
  if (s == nullptr || !s->is_object()) return InvalidArgument(fmt::format("{}: missing \"{}\"", where, key));
  StatisticsFile f;
  ASSIGN_OR_RETURN(f.snapshot_id, ju::Long(*s, "snapshot-id", where));
  f.json = s->dump();
  return f;
}

}  // namespace

json TableUpdateToJsonValue(const TableUpdate& u) {
  return std::visit(
      Overloaded{
          [](const update::AssignUuid& x) -> json { return {{"action", "assign-uuid"}, {"uuid", x.uuid}}; },
          [](const update::UpgradeFormatVersion& x) -> json {
            return {{"action", "upgrade-format-version"}, {"format-version", x.format_version}};
          },
          [](const update::AddSchema& x) -> json {
            json j = {{"action", "add-schema"}, {"schema", SchemaToJsonValue(x.schema)}};
            if (x.last_column_id) j["last-column-id"] = *x.last_column_id;
            return j;
          },
          [](const update::SetCurrentSchema& x) -> json {
            return {{"action", "set-current-schema"}, {"schema-id", x.schema_id}};
          },
          [](const update::AddSpec& x) -> json {
            return {{"action", "add-spec"}, {"spec", PartitionSpecToJsonValue(x.spec)}};
          },
          [](const update::SetDefaultSpec& x) -> json { return {{"action", "set-default-spec"}, {"spec-id", x.spec_id}}; },
          [](const update::AddSortOrder& x) -> json {
            return {{"action", "add-sort-order"}, {"sort-order", SortOrderToJsonValue(x.sort_order)}};
          },
          [](const update::SetDefaultSortOrder& x) -> json {
            return {{"action", "set-default-sort-order"}, {"sort-order-id", x.sort_order_id}};
          },
          [](const update::AddSnapshot& x) -> json {
            return {{"action", "add-snapshot"}, {"snapshot", SnapshotToJsonValue(x.snapshot)}};
          },
          [](const update::SetSnapshotRef& x) -> json {
            json j = SnapshotRefToJsonValue(x.ref);
            j["action"] = "set-snapshot-ref";
            j["ref-name"] = x.ref_name;
            return j;
          },
          [](const update::RemoveSnapshots& x) -> json {
            return {{"action", "remove-snapshots"}, {"snapshot-ids", x.snapshot_ids}};
          },
          [](const update::RemoveSnapshotRef& x) -> json {
            return {{"action", "remove-snapshot-ref"}, {"ref-name", x.ref_name}};
          },
          [](const update::SetLocation& x) -> json { return {{"action", "set-location"}, {"location", x.location}}; },
          [](const update::SetProperties& x) -> json { return {{"action", "set-properties"}, {"updates", x.updates}}; },
          [](const update::RemoveProperties& x) -> json {
            return {{"action", "remove-properties"}, {"removals", x.removals}};
          },
          [](const update::SetStatistics& x) -> json {
            return {{"action", "set-statistics"}, {"snapshot-id", x.statistics.snapshot_id},
                    {"statistics", json::parse(x.statistics.json, nullptr, false)}};
          },
          [](const update::RemoveStatistics& x) -> json {
            return {{"action", "remove-statistics"}, {"snapshot-id", x.snapshot_id}};
          },
          [](const update::SetPartitionStatistics& x) -> json {
            return {{"action", "set-partition-statistics"},
                    {"partition-statistics", json::parse(x.statistics.json, nullptr, false)}};
          },
          [](const update::RemovePartitionStatistics& x) -> json {
            return {{"action", "remove-partition-statistics"}, {"snapshot-id", x.snapshot_id}};
          },
          [](const update::RemovePartitionSpecs& x) -> json {
            return {{"action", "remove-partition-specs"}, {"spec-ids", x.spec_ids}};
          },
          [](const update::RemoveSchemas& x) -> json {
            return {{"action", "remove-schemas"}, {"schema-ids", x.schema_ids}};
          }},
      u);
}

Result<TableUpdate> TableUpdateFromJsonValue(const json& j) {
  if (!j.is_object()) return InvalidArgument("table update must be an object");
  ASSIGN_OR_RETURN(std::string action, ju::String(j, "action", "table update"));
  std::string where = "update " + action;
  if (action == "assign-uuid") {
    ASSIGN_OR_RETURN(std::string uuid, ju::String(j, "uuid", where));
    return TableUpdate(update::AssignUuid{uuid});
  }
  if (action == "upgrade-format-version") {
    ASSIGN_OR_RETURN(int32_t v, ju::Int(j, "format-version", where));
    return TableUpdate(update::UpgradeFormatVersion{v});
  }
  if (action == "add-schema") {
    const json* s = ju::Find(j, "schema");
    if (s == nullptr) return InvalidArgument(where + ": missing \"schema\"");
    ASSIGN_OR_RETURN(Schema schema, SchemaFromJsonValue(*s));
    ASSIGN_OR_RETURN(auto last, ju::OptInt(j, "last-column-id", where));
    return TableUpdate(update::AddSchema{std::move(schema), last});
  }
  if (action == "set-current-schema") {
    ASSIGN_OR_RETURN(int32_t id, ju::Int(j, "schema-id", where));
    return TableUpdate(update::SetCurrentSchema{id});
  }
  if (action == "add-spec") {
    const json* s = ju::Find(j, "spec");
    if (s == nullptr || !s->is_object()) return InvalidArgument(where + ": missing \"spec\"");
    // Fields without a field-id get one when the update is applied (marked -1 here).
    json spec = *s;
    if (auto f = spec.find("fields"); f != spec.end() && f->is_array()) {
      for (auto& field : *f) {
        if (field.is_object() && (!field.contains("field-id") || field["field-id"].is_null())) field["field-id"] = -1;
      }
    }
    int32_t unused = 0;
    ASSIGN_OR_RETURN(PartitionSpec p, PartitionSpecFromJsonValue(spec, &unused));
    return TableUpdate(update::AddSpec{std::move(p)});
  }
  if (action == "set-default-spec") {
    ASSIGN_OR_RETURN(int32_t id, ju::Int(j, "spec-id", where));
    return TableUpdate(update::SetDefaultSpec{id});
  }
  if (action == "add-sort-order") {
    const json* s = ju::Find(j, "sort-order");
    if (s == nullptr) return InvalidArgument(where + ": missing \"sort-order\"");
    ASSIGN_OR_RETURN(SortOrder o, SortOrderFromJsonValue(*s));
    return TableUpdate(update::AddSortOrder{std::move(o)});
  }
  if (action == "set-default-sort-order") {
    ASSIGN_OR_RETURN(int32_t id, ju::Int(j, "sort-order-id", where));
    return TableUpdate(update::SetDefaultSortOrder{id});
  }
  if (action == "add-snapshot") {
    const json* s = ju::Find(j, "snapshot");
    if (s == nullptr) return InvalidArgument(where + ": missing \"snapshot\"");
    // A new snapshot must carry its summary and a known operation (REST OpenAPI Snapshot;
    // table spec, Snapshots). Reading old metadata stays lenient (v1 may omit them).
    const json* sum = s->is_object() ? ju::Find(*s, "summary") : nullptr;
    const json* op = sum && sum->is_object() ? ju::Find(*sum, "operation") : nullptr;
    if (op == nullptr || !op->is_string()) {
      return InvalidArgument(where + ": the snapshot needs a summary with an \"operation\"");
    }
    std::string op_name = op->get<std::string>();
    if (op_name != "append" && op_name != "replace" && op_name != "overwrite" && op_name != "delete") {
      return InvalidArgument(where + ": snapshot operation must be append, replace, overwrite or delete, not \"" +
                             op_name + "\"");
    }
    ASSIGN_OR_RETURN(Snapshot snap, SnapshotFromJsonValue(*s));
    return TableUpdate(update::AddSnapshot{std::move(snap)});
  }
  if (action == "set-snapshot-ref") {
    ASSIGN_OR_RETURN(std::string name, ju::String(j, "ref-name", where));
    ASSIGN_OR_RETURN(SnapshotRef ref, SnapshotRefFromJsonValue(j));
    return TableUpdate(update::SetSnapshotRef{name, ref});
  }
  if (action == "remove-snapshots") {
    if (ju::Find(j, "snapshot-ids") == nullptr) return InvalidArgument(where + ": missing \"snapshot-ids\"");
    ASSIGN_OR_RETURN(auto ids, ju::LongList(j, "snapshot-ids", where));
    return TableUpdate(update::RemoveSnapshots{ids});
  }
  if (action == "remove-snapshot-ref") {
    ASSIGN_OR_RETURN(std::string name, ju::String(j, "ref-name", where));
    return TableUpdate(update::RemoveSnapshotRef{name});
  }
  if (action == "set-location") {
    ASSIGN_OR_RETURN(std::string loc, ju::String(j, "location", where));
    return TableUpdate(update::SetLocation{loc});
  }
  if (action == "set-properties") {
    if (ju::Find(j, "updates") == nullptr) return InvalidArgument(where + ": missing \"updates\"");
    ASSIGN_OR_RETURN(auto updates, ju::StringMap(j, "updates", where));
    return TableUpdate(update::SetProperties{updates});
  }
  if (action == "remove-properties") {
    if (ju::Find(j, "removals") == nullptr) return InvalidArgument(where + ": missing \"removals\"");
    ASSIGN_OR_RETURN(auto removals, ju::StringList(j, "removals", where));
    return TableUpdate(update::RemoveProperties{removals});
  }
  if (action == "set-statistics") {
    ASSIGN_OR_RETURN(StatisticsFile f, StatisticsFrom(j, "statistics", where));
    return TableUpdate(update::SetStatistics{f});
  }
  if (action == "remove-statistics") {
    ASSIGN_OR_RETURN(int64_t id, ju::Long(j, "snapshot-id", where));
    return TableUpdate(update::RemoveStatistics{id});
  }
  if (action == "set-partition-statistics") {
    ASSIGN_OR_RETURN(StatisticsFile f, StatisticsFrom(j, "partition-statistics", where));
    return TableUpdate(update::SetPartitionStatistics{f});
  }
  if (action == "remove-partition-statistics") {
    ASSIGN_OR_RETURN(int64_t id, ju::Long(j, "snapshot-id", where));
    return TableUpdate(update::RemovePartitionStatistics{id});
  }
  if (action == "remove-partition-specs") {
    ASSIGN_OR_RETURN(auto ids, IntList(j, "spec-ids", where));
    return TableUpdate(update::RemovePartitionSpecs{ids});
  }
  if (action == "remove-schemas") {
    ASSIGN_OR_RETURN(auto ids, IntList(j, "schema-ids", where));
    return TableUpdate(update::RemoveSchemas{ids});
  }
  return InvalidArgument("unknown table update action '" + action + "'");
}

json TableRequirementToJsonValue(const TableRequirement& r) {
  return std::visit(
      Overloaded{
          [](const requirement::AssertCreate&) -> json { return {{"type", "assert-create"}}; },
          [](const requirement::AssertTableUuid& x) -> json { return {{"type", "assert-table-uuid"}, {"uuid", x.uuid}}; },
          [](const requirement::AssertRefSnapshotId& x) -> json {
            json j = {{"type", "assert-ref-snapshot-id"}, {"ref", x.ref}};
            j["snapshot-id"] = x.snapshot_id ? json(*x.snapshot_id) : json(nullptr);
            return j;
          },
          [](const requirement::AssertLastAssignedFieldId& x) -> json {
            return {{"type", "assert-last-assigned-field-id"}, {"last-assigned-field-id", x.last_assigned_field_id}};
          },
          [](const requirement::AssertCurrentSchemaId& x) -> json {
            return {{"type", "assert-current-schema-id"}, {"current-schema-id", x.current_schema_id}};
          },
          [](const requirement::AssertLastAssignedPartitionId& x) -> json {
            return {{"type", "assert-last-assigned-partition-id"},
                    {"last-assigned-partition-id", x.last_assigned_partition_id}};
          },
          [](const requirement::AssertDefaultSpecId& x) -> json {
            return {{"type", "assert-default-spec-id"}, {"default-spec-id", x.default_spec_id}};
          },
          [](const requirement::AssertDefaultSortOrderId& x) -> json {
            return {{"type", "assert-default-sort-order-id"}, {"default-sort-order-id", x.default_sort_order_id}};
          }},
      r);
}

Result<TableRequirement> TableRequirementFromJsonValue(const json& j) {
  if (!j.is_object()) return InvalidArgument("table requirement must be an object");
  ASSIGN_OR_RETURN(std::string type, ju::String(j, "type", "table requirement"));
  std::string where = "requirement " + type;
  if (type == "assert-create") return TableRequirement(requirement::AssertCreate{});
  if (type == "assert-table-uuid") {
    ASSIGN_OR_RETURN(std::string uuid, ju::String(j, "uuid", where));
    return TableRequirement(requirement::AssertTableUuid{uuid});
  }
  if (type == "assert-ref-snapshot-id") {
    ASSIGN_OR_RETURN(std::string ref, ju::String(j, "ref", where));
    ASSIGN_OR_RETURN(auto id, ju::OptLong(j, "snapshot-id", where));
    return TableRequirement(requirement::AssertRefSnapshotId{ref, id});
  }
  if (type == "assert-last-assigned-field-id") {
    ASSIGN_OR_RETURN(int32_t v, ju::Int(j, "last-assigned-field-id", where));
    return TableRequirement(requirement::AssertLastAssignedFieldId{v});
  }
  if (type == "assert-current-schema-id") {
    ASSIGN_OR_RETURN(int32_t v, ju::Int(j, "current-schema-id", where));
    return TableRequirement(requirement::AssertCurrentSchemaId{v});
  }
  if (type == "assert-last-assigned-partition-id") {
    ASSIGN_OR_RETURN(int32_t v, ju::Int(j, "last-assigned-partition-id", where));
    return TableRequirement(requirement::AssertLastAssignedPartitionId{v});
  }
  if (type == "assert-default-spec-id") {
    ASSIGN_OR_RETURN(int32_t v, ju::Int(j, "default-spec-id", where));
    return TableRequirement(requirement::AssertDefaultSpecId{v});
  }
  if (type == "assert-default-sort-order-id") {
    ASSIGN_OR_RETURN(int32_t v, ju::Int(j, "default-sort-order-id", where));
    return TableRequirement(requirement::AssertDefaultSortOrderId{v});
  }
  return InvalidArgument("unknown table requirement type '" + type + "'");
}

}  // namespace icestream::iceberg
