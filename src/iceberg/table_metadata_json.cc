// Table metadata <-> JSON (Iceberg spec Appendix C, "Table Metadata and Snapshots").
#include "iceberg/table_metadata_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "compression/compression.h"
#include "iceberg/json_util.h"
#include "iceberg/schema/schema_json.h"

namespace icestream::iceberg {

using nlohmann::json;
namespace ju = json_util;

namespace {

Result<PartitionField> PartitionFieldFromJson(const json& j, int32_t* next_field_id) {
  if (!j.is_object()) return InvalidArgument("partition field must be an object");
  PartitionField f;
  ASSIGN_OR_RETURN(f.name, ju::String(j, "name", "partition field"));
  std::string where = "partition field '" + f.name + "'";
  ASSIGN_OR_RETURN(auto source, ju::OptInt(j, "source-id", where));
  if (!source) {
    // v3 multi-argument transforms name "source-ids"; single-source ones are all we read.
    return InvalidArgument(where + ": missing \"source-id\"");
  }
  f.source_id = *source;
  ASSIGN_OR_RETURN(auto id, ju::OptInt(j, "field-id", where));
  f.field_id = id ? *id : (*next_field_id)++;
  *next_field_id = std::max(*next_field_id, f.field_id + 1);
  ASSIGN_OR_RETURN(std::string transform, ju::String(j, "transform", where));
  ASSIGN_OR_RETURN(f.transform, ParseTransform(transform));
  return f;
}

Result<SnapshotLogEntry> SnapshotLogFromJson(const json& j) {
  SnapshotLogEntry e;
  ASSIGN_OR_RETURN(e.timestamp_ms, ju::Long(j, "timestamp-ms", "snapshot-log entry"));
  ASSIGN_OR_RETURN(e.snapshot_id, ju::Long(j, "snapshot-id", "snapshot-log entry"));
  return e;
}

Result<MetadataLogEntry> MetadataLogFromJson(const json& j) {
  MetadataLogEntry e;
  ASSIGN_OR_RETURN(e.timestamp_ms, ju::Long(j, "timestamp-ms", "metadata-log entry"));
  ASSIGN_OR_RETURN(e.metadata_file, ju::String(j, "metadata-file", "metadata-log entry"));
  return e;
}

Result<std::vector<StatisticsFile>> StatisticsFromJson(const json& j, const char* key) {
  std::vector<StatisticsFile> out;
  const json* arr = ju::Find(j, key);
  if (arr == nullptr) return out;
  if (!arr->is_array()) return InvalidArgument(std::string("\"") + key + "\" must be an array");
  for (const auto& e : *arr) {
    StatisticsFile s;
    ASSIGN_OR_RETURN(s.snapshot_id, ju::Long(e, "snapshot-id", key));
    s.json = e.dump();
    out.push_back(std::move(s));
  }
  return out;
}

json StatisticsToJson(const std::vector<StatisticsFile>& files) {
  json arr = json::array();
  for (const auto& f : files) arr.push_back(json::parse(f.json, nullptr, false));
  return arr;
}

template <typename T, typename F>
Result<std::vector<T>> ListOf(const json& j, const char* key, F parse) {
  std::vector<T> out;
  const json* arr = ju::Find(j, key);
  if (arr == nullptr) return out;
  if (!arr->is_array())
    return InvalidArgument(std::string("table metadata: \"") + key + "\" must be an array");
  out.reserve(arr->size());
  for (const auto& e : *arr) {
    ASSIGN_OR_RETURN(T v, parse(e));
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace

json PartitionFieldsToJsonValue(const PartitionSpec& spec) {
  json fields = json::array();
  for (const auto& f : spec.fields) {
    fields.push_back({{"name", f.name},
                      {"transform", TransformName(f.transform)},
                      {"source-id", f.source_id},
                      {"field-id", f.field_id}});
  }
  return fields;
}

json PartitionSpecToJsonValue(const PartitionSpec& spec) {
  return {{"spec-id", spec.spec_id}, {"fields", PartitionFieldsToJsonValue(spec)}};
}

Result<PartitionSpec> PartitionSpecFromJsonValue(const json& j, int32_t* next_field_id) {
  PartitionSpec spec;
  const json* fields = &j;
  if (j.is_object()) {
    ASSIGN_OR_RETURN(auto id, ju::OptInt(j, "spec-id", "partition spec"));
    spec.spec_id = id.value_or(0);
    fields = ju::Find(j, "fields");
    if (fields == nullptr) return InvalidArgument("partition spec: missing \"fields\"");
  }
  if (!fields->is_array()) return InvalidArgument("partition spec: \"fields\" must be an array");
  for (const auto& f : *fields) {
    ASSIGN_OR_RETURN(auto field, PartitionFieldFromJson(f, next_field_id));
    spec.fields.push_back(std::move(field));
  }
  return spec;
}

json SortOrderToJsonValue(const SortOrder& order) {
  json fields = json::array();
  for (const auto& f : order.fields) {
    fields.push_back(
        {{"transform", TransformName(f.transform)},
         {"source-id", f.source_id},
         {"direction", f.direction == SortDirection::kAsc ? "asc" : "desc"},
         {"null-order", f.null_order == NullOrder::kNullsFirst ? "nulls-first" : "nulls-last"}});
  }
  return {{"order-id", order.order_id}, {"fields", fields}};
}

Result<SortOrder> SortOrderFromJsonValue(const json& j) {
  if (!j.is_object()) return InvalidArgument("sort order must be an object");
  SortOrder order;
  ASSIGN_OR_RETURN(auto id, ju::OptInt(j, "order-id", "sort order"));
  order.order_id = id.value_or(0);
  const json* fields = ju::Find(j, "fields");
  if (fields == nullptr || !fields->is_array())
    return InvalidArgument("sort order: \"fields\" must be an array");
  for (const auto& fj : *fields) {
    SortField f;
    ASSIGN_OR_RETURN(std::string transform, ju::String(fj, "transform", "sort field"));
    ASSIGN_OR_RETURN(f.transform, ParseTransform(transform));
    ASSIGN_OR_RETURN(f.source_id, ju::Int(fj, "source-id", "sort field"));
    ASSIGN_OR_RETURN(std::string dir, ju::String(fj, "direction", "sort field"));
    if (dir != "asc" && dir != "desc")
      return InvalidArgument("sort field: direction must be asc or desc");
    f.direction = dir == "asc" ? SortDirection::kAsc : SortDirection::kDesc;
    ASSIGN_OR_RETURN(std::string nulls, ju::String(fj, "null-order", "sort field"));
    if (nulls != "nulls-first" && nulls != "nulls-last") {
      return InvalidArgument("sort field: null-order must be nulls-first or nulls-last");
    }
    f.null_order = nulls == "nulls-first" ? NullOrder::kNullsFirst : NullOrder::kNullsLast;
    order.fields.push_back(std::move(f));
  }
  return order;
}

json SnapshotToJsonValue(const Snapshot& s, int format_version) {
  json j = {{"snapshot-id", s.snapshot_id}, {"timestamp-ms", s.timestamp_ms}};
  if (s.parent_snapshot_id) j["parent-snapshot-id"] = *s.parent_snapshot_id;
  if (format_version >= 2) j["sequence-number"] = s.sequence_number;
  if (!s.manifest_list.empty()) j["manifest-list"] = s.manifest_list;
  if (!s.manifests.empty()) j["manifests"] = s.manifests;
  j["summary"] = s.summary;
  if (s.schema_id) j["schema-id"] = *s.schema_id;
  return j;
}

Result<Snapshot> SnapshotFromJsonValue(const json& j) {
  if (!j.is_object()) return InvalidArgument("snapshot must be an object");
  Snapshot s;
  ASSIGN_OR_RETURN(s.snapshot_id, ju::Long(j, "snapshot-id", "snapshot"));
  std::string where = fmt::format("snapshot {}", s.snapshot_id);
  ASSIGN_OR_RETURN(s.parent_snapshot_id, ju::OptLong(j, "parent-snapshot-id", where));
  ASSIGN_OR_RETURN(auto seq, ju::OptLong(j, "sequence-number", where));
  s.sequence_number = seq.value_or(0);
  ASSIGN_OR_RETURN(s.timestamp_ms, ju::Long(j, "timestamp-ms", where));
  ASSIGN_OR_RETURN(auto list, ju::OptString(j, "manifest-list", where));
  s.manifest_list = list.value_or("");
  ASSIGN_OR_RETURN(s.manifests, ju::StringList(j, "manifests", where));
  if (s.manifest_list.empty() && s.manifests.empty()) {
    return InvalidArgument(where + ": needs \"manifest-list\" (or v1 \"manifests\")");
  }
  // Summary values are strings by the spec; tolerate numbers and booleans from lax writers.
  if (const json* sum = ju::Find(j, "summary")) {
    if (!sum->is_object()) return InvalidArgument(where + ": \"summary\" must be an object");
    for (auto it = sum->begin(); it != sum->end(); ++it) {
      s.summary[it.key()] =
          it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
    }
  }
  if (s.summary.count(summary::kOperation) == 0) {
    // v1 writers may omit the summary; "append" is Java's reading of that.
    s.summary[summary::kOperation] = operation::kAppend;
  }
  if (const json* sid = ju::Find(j, "schema-id")) {
    if (sid->is_number_integer()) {
      s.schema_id = sid->get<int32_t>();
    } else if (sid->is_string()) {
      try {
        s.schema_id = std::stoi(sid->get<std::string>());
      } catch (...) {
        return InvalidArgument(where + ": \"schema-id\" must be an integer");
      }
    } else {
      return InvalidArgument(where + ": \"schema-id\" must be an integer");
    }
  }
  return s;
}

json SnapshotRefToJsonValue(const SnapshotRef& r) {
  json j = {{"snapshot-id", r.snapshot_id},
            {"type", r.type == RefType::kBranch ? "branch" : "tag"}};
  if (r.min_snapshots_to_keep) j["min-snapshots-to-keep"] = *r.min_snapshots_to_keep;
  if (r.max_snapshot_age_ms) j["max-snapshot-age-ms"] = *r.max_snapshot_age_ms;
  if (r.max_ref_age_ms) j["max-ref-age-ms"] = *r.max_ref_age_ms;
  return j;
}

Result<SnapshotRef> SnapshotRefFromJsonValue(const json& j) {
  if (!j.is_object()) return InvalidArgument("snapshot ref must be an object");
  SnapshotRef r;
  ASSIGN_OR_RETURN(r.snapshot_id, ju::Long(j, "snapshot-id", "snapshot ref"));
  ASSIGN_OR_RETURN(std::string type, ju::String(j, "type", "snapshot ref"));
  if (type != "branch" && type != "tag")
    return InvalidArgument("snapshot ref: type must be branch or tag");
  r.type = type == "branch" ? RefType::kBranch : RefType::kTag;
  ASSIGN_OR_RETURN(r.min_snapshots_to_keep, ju::OptInt(j, "min-snapshots-to-keep", "snapshot ref"));
  ASSIGN_OR_RETURN(r.max_snapshot_age_ms, ju::OptLong(j, "max-snapshot-age-ms", "snapshot ref"));
  ASSIGN_OR_RETURN(r.max_ref_age_ms, ju::OptLong(j, "max-ref-age-ms", "snapshot ref"));
  return r;
}

json TableMetadataToJsonValue(const TableMetadata& m) {
  json j = json::object();
  j["format-version"] = m.format_version;
  j["table-uuid"] = m.table_uuid;
  j["location"] = m.location;
  if (m.format_version >= 2) j["last-sequence-number"] = m.last_sequence_number;
  j["last-updated-ms"] = m.last_updated_ms;
  j["last-column-id"] = m.last_column_id;
  j["current-schema-id"] = m.current_schema_id;
  json schemas = json::array();
  for (const auto& s : m.schemas) schemas.push_back(SchemaToJsonValue(s));
  j["schemas"] = std::move(schemas);
  j["default-spec-id"] = m.default_spec_id;
  json specs = json::array();
  for (const auto& s : m.partition_specs) specs.push_back(PartitionSpecToJsonValue(s));
  j["partition-specs"] = std::move(specs);
  j["last-partition-id"] = m.last_partition_id;
  j["default-sort-order-id"] = m.default_sort_order_id;
  json orders = json::array();
  for (const auto& o : m.sort_orders) orders.push_back(SortOrderToJsonValue(o));
  j["sort-orders"] = std::move(orders);
  if (m.format_version == 1) {
    if (const Schema* s = m.CurrentSchema()) j["schema"] = SchemaToJsonValue(*s);
    if (const PartitionSpec* p = m.DefaultSpec())
      j["partition-spec"] = PartitionFieldsToJsonValue(*p);
  }
  j["properties"] = m.properties;
  // Java writes -1 for "no current snapshot" in v1/v2; every reader accepts it.
  j["current-snapshot-id"] = m.current_snapshot_id.value_or(-1);
  json refs = json::object();
  for (const auto& [name, r] : m.refs) refs[name] = SnapshotRefToJsonValue(r);
  j["refs"] = std::move(refs);
  json snaps = json::array();
  for (const auto& s : m.snapshots) snaps.push_back(SnapshotToJsonValue(s, m.format_version));
  j["snapshots"] = std::move(snaps);
  j["statistics"] = StatisticsToJson(m.statistics);
  j["partition-statistics"] = StatisticsToJson(m.partition_statistics);
  json slog = json::array();
  for (const auto& e : m.snapshot_log) {
    slog.push_back({{"timestamp-ms", e.timestamp_ms}, {"snapshot-id", e.snapshot_id}});
  }
  j["snapshot-log"] = std::move(slog);
  json mlog = json::array();
  for (const auto& e : m.metadata_log) {
    mlog.push_back({{"timestamp-ms", e.timestamp_ms}, {"metadata-file", e.metadata_file}});
  }
  j["metadata-log"] = std::move(mlog);
  return j;
}

std::string TableMetadataToJson(const TableMetadata& m) {
  return TableMetadataToJsonValue(m).dump();
}

Result<TableMetadata> TableMetadataFromJsonValue(const json& j) {
  if (!j.is_object()) return InvalidArgument("table metadata must be a JSON object");
  const char* where = "table metadata";
  TableMetadata m;
  ASSIGN_OR_RETURN(m.format_version, ju::Int(j, "format-version", where));
  if (m.format_version < 1 || m.format_version > kMaxFormatVersion) {
    return InvalidArgument(
        fmt::format("table metadata: unsupported format-version {}", m.format_version));
  }
  const bool v1 = m.format_version == 1;
  ASSIGN_OR_RETURN(auto uuid, ju::OptString(j, "table-uuid", where));
  m.table_uuid = uuid.value_or("");
  ASSIGN_OR_RETURN(m.location, ju::String(j, "location", where));
  ASSIGN_OR_RETURN(auto last_seq, ju::OptLong(j, "last-sequence-number", where));
  if (!last_seq && !v1) return InvalidArgument("table metadata: missing \"last-sequence-number\"");
  m.last_sequence_number = last_seq.value_or(0);
  ASSIGN_OR_RETURN(m.last_updated_ms, ju::Long(j, "last-updated-ms", where));
  ASSIGN_OR_RETURN(m.last_column_id, ju::Int(j, "last-column-id", where));

  // Schemas: "schemas" + "current-schema-id", or the v1 "schema".
  ASSIGN_OR_RETURN(m.schemas, ListOf<Schema>(j, "schemas",
                                             [](const json& s) { return SchemaFromJsonValue(s); }));
  ASSIGN_OR_RETURN(auto current_schema, ju::OptInt(j, "current-schema-id", where));
  if (m.schemas.empty()) {
    const json* s = ju::Find(j, "schema");
    if (s == nullptr) return InvalidArgument("table metadata: missing \"schemas\"");
    ASSIGN_OR_RETURN(Schema schema, SchemaFromJsonValue(*s));
    m.schemas.push_back(std::move(schema));
    m.current_schema_id = m.schemas[0].schema_id;
  } else {
    if (!current_schema) return InvalidArgument("table metadata: missing \"current-schema-id\"");
    m.current_schema_id = *current_schema;
  }

  // Partition specs: "partition-specs" + "default-spec-id", or the v1 "partition-spec".
  int32_t next_partition_id = kFirstPartitionFieldId;
  if (const json* specs = ju::Find(j, "partition-specs")) {
    if (!specs->is_array())
      return InvalidArgument("table metadata: \"partition-specs\" must be an array");
    for (const auto& s : *specs) {
      if (v1) next_partition_id = kFirstPartitionFieldId;  // v1 ids restart per spec
      ASSIGN_OR_RETURN(PartitionSpec spec, PartitionSpecFromJsonValue(s, &next_partition_id));
      m.partition_specs.push_back(std::move(spec));
    }
    ASSIGN_OR_RETURN(auto def, ju::OptInt(j, "default-spec-id", where));
    if (!def && !v1) return InvalidArgument("table metadata: missing \"default-spec-id\"");
    m.default_spec_id = def.value_or(m.partition_specs.empty() ? 0 : m.partition_specs[0].spec_id);
  }
  if (m.partition_specs.empty()) {
    const json* fields = ju::Find(j, "partition-spec");
    if (fields == nullptr) return InvalidArgument("table metadata: missing \"partition-specs\"");
    ASSIGN_OR_RETURN(PartitionSpec spec, PartitionSpecFromJsonValue(*fields, &next_partition_id));
    m.partition_specs.push_back(std::move(spec));
    m.default_spec_id = 0;
  }
  ASSIGN_OR_RETURN(auto last_partition, ju::OptInt(j, "last-partition-id", where));
  if (last_partition) {
    m.last_partition_id = *last_partition;
  } else {
    if (!v1) return InvalidArgument("table metadata: missing \"last-partition-id\"");
    m.last_partition_id = kFirstPartitionFieldId - 1;
    for (const auto& s : m.partition_specs) {
      for (const auto& f : s.fields)
        m.last_partition_id = std::max(m.last_partition_id, f.field_id);
    }
  }

  ASSIGN_OR_RETURN(m.sort_orders, ListOf<SortOrder>(j, "sort-orders", [](const json& o) {
                     return SortOrderFromJsonValue(o);
                   }));
  if (m.sort_orders.empty()) {
    if (!v1 && ju::Find(j, "sort-orders") == nullptr) {
      return InvalidArgument("table metadata: missing \"sort-orders\"");
    }
    m.sort_orders.push_back(SortOrder{});
  }
  ASSIGN_OR_RETURN(auto default_order, ju::OptInt(j, "default-sort-order-id", where));
  m.default_sort_order_id = default_order.value_or(0);

  ASSIGN_OR_RETURN(m.properties, ju::StringMap(j, "properties", where));
  ASSIGN_OR_RETURN(auto current, ju::OptLong(j, "current-snapshot-id", where));
  if (current && *current != -1) m.current_snapshot_id = *current;
  ASSIGN_OR_RETURN(m.snapshots, ListOf<Snapshot>(j, "snapshots", [](const json& s) {
                     return SnapshotFromJsonValue(s);
                   }));
  if (const json* refs = ju::Find(j, "refs")) {
    if (!refs->is_object()) return InvalidArgument("table metadata: \"refs\" must be an object");
    for (auto it = refs->begin(); it != refs->end(); ++it) {
      ASSIGN_OR_RETURN(SnapshotRef r, SnapshotRefFromJsonValue(it.value()));
      m.refs[it.key()] = r;
    }
  }
  if (m.current_snapshot_id && m.refs.count(kMainBranch) == 0) {
    // "There is always a main branch reference pointing to the current-snapshot-id."
    m.refs[kMainBranch] = SnapshotRef{*m.current_snapshot_id, RefType::kBranch, {}, {}, {}};
  }
  ASSIGN_OR_RETURN(m.snapshot_log, ListOf<SnapshotLogEntry>(j, "snapshot-log", [](const json& e) {
                     return SnapshotLogFromJson(e);
                   }));
  ASSIGN_OR_RETURN(m.metadata_log, ListOf<MetadataLogEntry>(j, "metadata-log", [](const json& e) {
                     return MetadataLogFromJson(e);
                   }));
  ASSIGN_OR_RETURN(m.statistics, StatisticsFromJson(j, "statistics"));
  ASSIGN_OR_RETURN(m.partition_statistics, StatisticsFromJson(j, "partition-statistics"));
  RETURN_IF_ERROR(ValidateTableMetadata(m));
  return m;
}

Result<TableMetadata> TableMetadataFromJson(std::string_view text) {
  std::string inflated;
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f &&
      static_cast<unsigned char>(text[1]) == 0x8b) {
    if (Status st = compression::Decompress(compression::Codec::kGzip, text, 512u << 20, &inflated);
        !st.ok()) {
      return InvalidArgument("table metadata: gzip data: " + st.message());
    }
    text = inflated;
  }
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("table metadata is not valid JSON");
  return TableMetadataFromJsonValue(j);
}

}  // namespace icestream::iceberg
