// Requirements and updates of table metadata (Iceberg REST OpenAPI "TableUpdate",
// "TableRequirement"; Iceberg Java TableMetadata.Builder semantics).
#include "iceberg/table_update.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "iceberg/overloaded.h"

namespace icestream::iceberg {

namespace {

Status Failed(std::string what) { return Conflict("Requirement failed: " + std::move(what)); }

std::string IdText(std::optional<int64_t> id) { return id ? std::to_string(*id) : "null"; }

// Assigns fresh ids the way Iceberg Java's AssignFreshIds does: the ids of a struct's
// fields (or a list's element, a map's key and value) first, in order, then the
// nested types of those children, depth first. `remap` gets old -> new.
void AssignFresh(std::vector<NestedField>* children, int32_t* next, std::map<int32_t, int32_t>* remap) {
  for (auto& f : *children) {
    int32_t id = ++*next;
    (*remap)[f.id] = id;
    f.id = id;
  }
  for (auto& f : *children) {
    if (f.type.is_nested()) AssignFresh(&f.type.fields, next, remap);
  }
}

bool SameSchemaContent(const Schema& a, const Schema& b) {
  return a.fields == b.fields && a.identifier_field_ids == b.identifier_field_ids;
}

struct Builder {
  TableMetadata m;
  std::optional<int32_t> last_added_schema;
  std::optional<int32_t> last_added_spec;
  std::optional<int32_t> last_added_order;
  std::set<int64_t> added_snapshots;
  std::optional<int64_t> updated_ms;

  Status Apply(const update::AssignUuid& u) {
    if (u.uuid.empty()) return InvalidArgument("assign-uuid: empty uuid");
    if (!m.table_uuid.empty() && m.table_uuid != u.uuid) {
      return InvalidArgument("Cannot reassign uuid " + m.table_uuid + " to " + u.uuid);
    }
    m.table_uuid = u.uuid;
    return Status::OK();
  }
  Status Apply(const update::UpgradeFormatVersion& u) {
    if (u.format_version > kMaxFormatVersion) {
      return InvalidArgument(fmt::format("Cannot upgrade to format version {}: this catalog supports up to {}",
                                         u.format_version, kMaxFormatVersion));
    }
    if (u.format_version < m.format_version) {
      return InvalidArgument(fmt::format("Cannot downgrade format version from {} to {}", m.format_version,
                                         u.format_version));
    }
    m.format_version = u.format_version;
    return Status::OK();
  }
  Status Apply(const update::AddSchema& u) {
    RETURN_IF_ERROR(Validate(u.schema));
    int32_t id = -1;
    for (const auto& s : m.schemas) {
      if (SameSchemaContent(s, u.schema)) id = s.schema_id;
    }
    if (id < 0) {
      id = 0;
      for (const auto& s : m.schemas) id = std::max(id, s.schema_id + 1);
      Schema s = u.schema;
      s.schema_id = id;
      m.schemas.push_back(std::move(s));
    }
    m.last_column_id = std::max({m.last_column_id, HighestFieldId(u.schema), u.last_column_id.value_or(0)});
    last_added_schema = id;
    return Status::OK();
  }
  Status Apply(const update::SetCurrentSchema& u) {
    int32_t id = u.schema_id;
    if (id == -1) {
      if (!last_added_schema) return InvalidArgument("set-current-schema -1: no schema was added");
      id = *last_added_schema;
    }
    if (m.SchemaById(id) == nullptr) return InvalidArgument(fmt::format("set-current-schema: unknown schema id {}", id));
    m.current_schema_id = id;
    return Status::OK();
  }
  Status Apply(const update::AddSpec& u) {
    const Schema* schema = m.CurrentSchema();
    if (schema == nullptr) return InvalidArgument("add-spec: the table has no current schema");
    PartitionSpec spec = u.spec;
    for (auto& f : spec.fields) {
      if (f.field_id >= 0) continue;
      // Reuse the id of an equivalent field of an earlier spec (v2 rule), else a new one.
      int32_t reuse = -1;
      for (const auto& old : m.partition_specs) {
        for (const auto& of : old.fields) {
          if (of.source_id == f.source_id && of.transform == f.transform && of.name == f.name) reuse = of.field_id;
        }
      }
      f.field_id = reuse >= 0 ? reuse : ++m.last_partition_id;
    }
    RETURN_IF_ERROR(ValidatePartitionSpec(spec, *schema));
    for (const auto& f : spec.fields) m.last_partition_id = std::max(m.last_partition_id, f.field_id);
    int32_t id = -1;
    for (const auto& s : m.partition_specs) {
      if (s.CompatibleWith(spec)) id = s.spec_id;
    }
    if (id < 0) {
      id = 0;
      for (const auto& s : m.partition_specs) id = std::max(id, s.spec_id + 1);
      spec.spec_id = id;
      m.partition_specs.push_back(std::move(spec));
    }
    last_added_spec = id;
    return Status::OK();
  }
  Status Apply(const update::SetDefaultSpec& u) {
    int32_t id = u.spec_id;
    if (id == -1) {
      if (!last_added_spec) return InvalidArgument("set-default-spec -1: no spec was added");
      id = *last_added_spec;
    }
    if (m.SpecById(id) == nullptr) return InvalidArgument(fmt::format("set-default-spec: unknown spec id {}", id));
    m.default_spec_id = id;
    return Status::OK();
  }
  Status Apply(const update::AddSortOrder& u) {
    const Schema* schema = m.CurrentSchema();
    for (const auto& f : u.sort_order.fields) {
      if (schema == nullptr || FindField(*schema, f.source_id) == nullptr) {
        return InvalidArgument(fmt::format("add-sort-order: unknown source column {}", f.source_id));
      }
    }
    int32_t id = -1;
    for (const auto& o : m.sort_orders) {
      if (o.fields == u.sort_order.fields) id = o.order_id;
    }
    if (id < 0) {
      id = 1;
      for (const auto& o : m.sort_orders) id = std::max(id, o.order_id + 1);
      SortOrder o = u.sort_order;
      o.order_id = o.is_unsorted() ? 0 : id;
      id = o.order_id;
      m.sort_orders.push_back(std::move(o));
    }
    last_added_order = id;
    return Status::OK();
  }
  Status Apply(const update::SetDefaultSortOrder& u) {
    int32_t id = u.sort_order_id;
    if (id == -1) {
      if (!last_added_order) return InvalidArgument("set-default-sort-order -1: no sort order was added");
      id = *last_added_order;
    }
    if (m.SortOrderById(id) == nullptr && id != 0) {
      return InvalidArgument(fmt::format("set-default-sort-order: unknown sort order id {}", id));
    }
    m.default_sort_order_id = id;
    return Status::OK();
  }
  Status Apply(const update::AddSnapshot& u) {
    const Snapshot& s = u.snapshot;
    if (m.SnapshotById(s.snapshot_id) != nullptr) {
      return InvalidArgument(fmt::format("Snapshot already exists for id: {}", s.snapshot_id));
    }
    if (s.manifest_list.empty()) return InvalidArgument("add-snapshot: snapshot without manifest-list");
    if (s.operation().empty()) return InvalidArgument("add-snapshot: summary.operation is required");
    if (m.format_version >= 2 && s.parent_snapshot_id && s.sequence_number <= m.last_sequence_number) {
      return InvalidArgument(fmt::format("Cannot add snapshot with sequence number {} older than last sequence number {}",
                                         s.sequence_number, m.last_sequence_number));
    }
    if (s.schema_id && m.SchemaById(*s.schema_id) == nullptr) {
      return InvalidArgument(fmt::format("add-snapshot: unknown schema id {}", *s.schema_id));
    }
    m.snapshots.push_back(s);
    m.last_sequence_number = std::max(m.last_sequence_number, s.sequence_number);
    added_snapshots.insert(s.snapshot_id);
    return Status::OK();
  }
  Status Apply(const update::SetSnapshotRef& u) {
    if (u.ref_name.empty()) return InvalidArgument("set-snapshot-ref: empty ref name");
    const Snapshot* s = m.SnapshotById(u.ref.snapshot_id);
    if (s == nullptr) return InvalidArgument(fmt::format("Cannot set {} to unknown snapshot: {}", u.ref_name, u.ref.snapshot_id));
    if (u.ref_name == kMainBranch && u.ref.type != RefType::kBranch) {
      return InvalidArgument("main must be a branch");
    }
    m.refs[u.ref_name] = u.ref;
    if (added_snapshots.count(s->snapshot_id)) updated_ms = s->timestamp_ms;
    if (u.ref_name == kMainBranch) {
      m.current_snapshot_id = s->snapshot_id;
      pending_log.push_back(s->snapshot_id);
    }
    return Status::OK();
  }
  Status Apply(const update::RemoveSnapshots& u) {
    std::set<int64_t> ids(u.snapshot_ids.begin(), u.snapshot_ids.end());
    std::erase_if(m.snapshots, [&](const Snapshot& s) { return ids.count(s.snapshot_id) > 0; });
    for (auto it = m.refs.begin(); it != m.refs.end();) {
      it = ids.count(it->second.snapshot_id) ? m.refs.erase(it) : std::next(it);
    }
    if (m.current_snapshot_id && ids.count(*m.current_snapshot_id)) m.current_snapshot_id.reset();
    std::erase_if(m.statistics, [&](const StatisticsFile& f) { return ids.count(f.snapshot_id) > 0; });
    std::erase_if(m.partition_statistics, [&](const StatisticsFile& f) { return ids.count(f.snapshot_id) > 0; });
    // Spec: "all entries before a snapshot that has expired should be removed".
    size_t cut = 0;
    for (size_t i = 0; i < m.snapshot_log.size(); ++i) {
      if (m.SnapshotById(m.snapshot_log[i].snapshot_id) == nullptr) cut = i + 1;
    }
    m.snapshot_log.erase(m.snapshot_log.begin(), m.snapshot_log.begin() + static_cast<ptrdiff_t>(cut));
    return Status::OK();
  }
  Status Apply(const update::RemoveSnapshotRef& u) {
    m.refs.erase(u.ref_name);
    if (u.ref_name == kMainBranch) m.current_snapshot_id.reset();
    return Status::OK();
  }
  Status Apply(const update::SetLocation& u) {
    std::string loc = u.location;
    while (loc.size() > 1 && loc.back() == '/') loc.pop_back();
    if (loc.empty()) return InvalidArgument("set-location: empty location");
    m.location = loc;
    return Status::OK();
  }
  Status Apply(const update::SetProperties& u) {
    for (const auto& [k, v] : u.updates) m.properties[k] = v;
    return Status::OK();
  }
  Status Apply(const update::RemoveProperties& u) {
    for (const auto& k : u.removals) m.properties.erase(k);
    return Status::OK();
  }
  Status Apply(const update::SetStatistics& u) {
    std::erase_if(m.statistics, [&](const StatisticsFile& f) { return f.snapshot_id == u.statistics.snapshot_id; });
    m.statistics.push_back(u.statistics);
    return Status::OK();
  }
  Status Apply(const update::RemoveStatistics& u) {
    std::erase_if(m.statistics, [&](const StatisticsFile& f) { return f.snapshot_id == u.snapshot_id; });
    return Status::OK();
  }
  Status Apply(const update::SetPartitionStatistics& u) {
    std::erase_if(m.partition_statistics,
                  [&](const StatisticsFile& f) { return f.snapshot_id == u.statistics.snapshot_id; });
    m.partition_statistics.push_back(u.statistics);
    return Status::OK();
  }
  Status Apply(const update::RemovePartitionStatistics& u) {
    std::erase_if(m.partition_statistics, [&](const StatisticsFile& f) { return f.snapshot_id == u.snapshot_id; });
    return Status::OK();
  }
  Status Apply(const update::RemovePartitionSpecs& u) {
    for (int32_t id : u.spec_ids) {
      if (id == m.default_spec_id) return InvalidArgument(fmt::format("Cannot remove the default partition spec {}", id));
    }
    std::erase_if(m.partition_specs, [&](const PartitionSpec& s) {
      return std::find(u.spec_ids.begin(), u.spec_ids.end(), s.spec_id) != u.spec_ids.end();
    });
    return Status::OK();
  }
  Status Apply(const update::RemoveSchemas& u) {
    for (int32_t id : u.schema_ids) {
      if (id == m.current_schema_id) return InvalidArgument(fmt::format("Cannot remove the current schema {}", id));
    }
    std::erase_if(m.schemas, [&](const Schema& s) {
      return std::find(u.schema_ids.begin(), u.schema_ids.end(), s.schema_id) != u.schema_ids.end();
    });
    return Status::OK();
  }

  std::vector<int64_t> pending_log;
};

}  // namespace

Status CheckRequirements(const TableMetadata* base, const std::vector<TableRequirement>& requirements) {
  for (const auto& r : requirements) {
    Status st = std::visit(
        Overloaded{
            [&](const requirement::AssertCreate&) -> Status {
              if (base) return Failed("table already exists");
              return Status::OK();
            },
            [&](const requirement::AssertTableUuid& a) -> Status {
              if (!base) return Failed("table does not exist");
              if (base->table_uuid != a.uuid) {
                return Failed("UUID does not match: expected " + base->table_uuid + " != " + a.uuid);
              }
              return Status::OK();
            },
            [&](const requirement::AssertRefSnapshotId& a) -> Status {
              if (!base) return Failed("table does not exist");
              auto it = base->refs.find(a.ref);
              std::optional<int64_t> current;
              if (it != base->refs.end()) current = it->second.snapshot_id;
              if (current != a.snapshot_id) {
                std::string kind = (it != base->refs.end() && it->second.type == RefType::kTag) ? "tag" : "branch";
                if (!current) return Failed(fmt::format("{} {} is missing, expected {}", kind, a.ref, IdText(a.snapshot_id)));
                if (!a.snapshot_id) return Failed(fmt::format("{} {} was created concurrently", kind, a.ref));
                return Failed(fmt::format("{} {} has changed: expected id {} != {}", kind, a.ref,
                                          IdText(a.snapshot_id), IdText(current)));
              }
              return Status::OK();
            },
            [&](const requirement::AssertLastAssignedFieldId& a) -> Status {
              if (base && base->last_column_id != a.last_assigned_field_id) {
                return Failed(fmt::format("last assigned field id changed: expected id {} != {}",
                                          a.last_assigned_field_id, base->last_column_id));
              }
              return Status::OK();
            },
            [&](const requirement::AssertCurrentSchemaId& a) -> Status {
              if (base && base->current_schema_id != a.current_schema_id) {
                return Failed(fmt::format("current schema changed: expected id {} != {}", a.current_schema_id,
                                          base->current_schema_id));
              }
              return Status::OK();
            },
            [&](const requirement::AssertLastAssignedPartitionId& a) -> Status {
              if (base && base->last_partition_id != a.last_assigned_partition_id) {
                return Failed(fmt::format("last assigned partition id changed: expected id {} != {}",
                                          a.last_assigned_partition_id, base->last_partition_id));
              }
              return Status::OK();
            },
            [&](const requirement::AssertDefaultSpecId& a) -> Status {
              if (base && base->default_spec_id != a.default_spec_id) {
                return Failed(fmt::format("default partition spec changed: expected id {} != {}",
                                          a.default_spec_id, base->default_spec_id));
              }
              return Status::OK();
            },
            [&](const requirement::AssertDefaultSortOrderId& a) -> Status {
              if (base && base->default_sort_order_id != a.default_sort_order_id) {
                return Failed(fmt::format("default sort order changed: expected id {} != {}",
                                          a.default_sort_order_id, base->default_sort_order_id));
              }
              return Status::OK();
            }},
        r);
    RETURN_IF_ERROR(st);
  }
  return Status::OK();
}

Result<TableMetadata> ApplyUpdates(const TableMetadata* base, const std::vector<TableUpdate>& updates,
                                   int64_t now_ms) {
  Builder b;
  if (base) {
    b.m = *base;
  } else {
    b.m.format_version = 2;
    b.m.schemas.clear();
    b.m.partition_specs.clear();
    b.m.sort_orders.clear();
  }
  for (const auto& u : updates) {
    RETURN_IF_ERROR(std::visit([&](const auto& x) { return b.Apply(x); }, u));
  }
  if (!base) {
    // A table created through updates gets the unpartitioned spec and the unsorted
    // order when the updates name none.
    if (b.m.partition_specs.empty()) b.m.partition_specs.push_back(PartitionSpec{});
    if (b.m.sort_orders.empty()) b.m.sort_orders.push_back(SortOrder{});
  }
  b.m.last_updated_ms = b.updated_ms.value_or(now_ms);
  for (int64_t id : b.pending_log) b.m.snapshot_log.push_back({b.m.last_updated_ms, id});
  if (Status st = ValidateTableMetadata(b.m); !st.ok()) {
    return InvalidArgument("invalid table metadata after updates: " + st.message());
  }
  if (const PartitionSpec* spec = b.m.DefaultSpec()) {
    if (Status st = ValidatePartitionSpec(*spec, *b.m.CurrentSchema()); !st.ok()) {
      return InvalidArgument("the default partition spec does not fit the current schema: " + st.message());
    }
  }
  return std::move(b.m);
}

void RecordPreviousMetadata(TableMetadata* next, const TableMetadata& base, const std::string& base_location) {
  if (base_location.empty()) return;
  next->metadata_log.push_back({base.last_updated_ms, base_location});
  auto keep = static_cast<size_t>(std::max<int64_t>(1, PropertyAsInt(*next, "write.metadata.previous-versions-max", 100)));
  if (next->metadata_log.size() > keep) {
    next->metadata_log.erase(next->metadata_log.begin(),
                             next->metadata_log.end() - static_cast<ptrdiff_t>(keep));
  }
}

Result<TableMetadata> NewTableMetadata(const Schema& schema, const PartitionSpec& spec, const SortOrder& order,
                                       const std::string& location,
                                       const std::map<std::string, std::string>& properties,
                                       const std::string& table_uuid, int64_t now_ms, int format_version) {
  RETURN_IF_ERROR(Validate(schema));
  Schema fresh = schema;
  fresh.schema_id = 0;
  int32_t next = 0;
  std::map<int32_t, int32_t> remap;
  AssignFresh(&fresh.fields, &next, &remap);
  fresh.identifier_field_ids.clear();
  for (int32_t id : schema.identifier_field_ids) {
    auto it = remap.find(id);
    if (it == remap.end()) return InvalidArgument(fmt::format("identifier field {} is not in the schema", id));
    fresh.identifier_field_ids.push_back(it->second);
  }
  RETURN_IF_ERROR(Validate(fresh));

  PartitionSpec fresh_spec;
  fresh_spec.spec_id = 0;
  int32_t next_partition = kFirstPartitionFieldId;
  for (const auto& f : spec.fields) {
    auto it = remap.find(f.source_id);
    if (it == remap.end()) {
      return InvalidArgument(fmt::format("partition field '{}': source column {} is not in the schema", f.name, f.source_id));
    }
    fresh_spec.fields.push_back({it->second, next_partition++, f.name, f.transform});
  }
  RETURN_IF_ERROR(ValidatePartitionSpec(fresh_spec, fresh));

  SortOrder fresh_order;
  for (const auto& f : order.fields) {
    auto it = remap.find(f.source_id);
    if (it == remap.end()) return InvalidArgument(fmt::format("sort field: source column {} is not in the schema", f.source_id));
    SortField sf = f;
    sf.source_id = it->second;
    fresh_order.fields.push_back(sf);
  }
  fresh_order.order_id = fresh_order.is_unsorted() ? 0 : 1;

  TableMetadata m;
  m.format_version = format_version;
  m.table_uuid = table_uuid;
  m.location = location;
  while (m.location.size() > 1 && m.location.back() == '/') m.location.pop_back();
  m.last_sequence_number = 0;
  m.last_updated_ms = now_ms;
  m.last_column_id = HighestFieldId(fresh);
  m.schemas = {fresh};
  m.current_schema_id = 0;
  m.partition_specs = {fresh_spec};
  m.default_spec_id = 0;
  m.last_partition_id = fresh_spec.fields.empty() ? kFirstPartitionFieldId - 1 : next_partition - 1;
  m.sort_orders = {SortOrder{}};
  if (!fresh_order.is_unsorted()) m.sort_orders.push_back(fresh_order);
  m.default_sort_order_id = fresh_order.order_id;
  m.properties = properties;
  RETURN_IF_ERROR(ValidateTableMetadata(m));
  return m;
}

std::vector<TableUpdate> CreationUpdates(const TableMetadata& m) {
  std::vector<TableUpdate> u;
  u.push_back(update::AssignUuid{m.table_uuid});
  u.push_back(update::UpgradeFormatVersion{m.format_version});
  for (const auto& s : m.schemas) u.push_back(update::AddSchema{s, m.last_column_id});
  u.push_back(update::SetCurrentSchema{m.current_schema_id});
  for (const auto& s : m.partition_specs) u.push_back(update::AddSpec{s});
  u.push_back(update::SetDefaultSpec{m.default_spec_id});
  for (const auto& o : m.sort_orders) u.push_back(update::AddSortOrder{o});
  u.push_back(update::SetDefaultSortOrder{m.default_sort_order_id});
  u.push_back(update::SetLocation{m.location});
  if (!m.properties.empty()) u.push_back(update::SetProperties{m.properties});
  return u;
}

}  // namespace icestream::iceberg
