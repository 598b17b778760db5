// Table metadata lookups and invariants (Iceberg spec "Table Metadata Fields").
#include "iceberg/table_metadata.h"

#include <charconv>
#include <set>

#include <fmt/format.h>

namespace icestream::iceberg {

const Schema* TableMetadata::SchemaById(int32_t id) const {
  for (const auto& s : schemas) {
    if (s.schema_id == id) return &s;
  }
  return nullptr;
}

const PartitionSpec* TableMetadata::SpecById(int32_t id) const {
  for (const auto& s : partition_specs) {
    if (s.spec_id == id) return &s;
  }
  return nullptr;
}

const SortOrder* TableMetadata::SortOrderById(int32_t id) const {
  for (const auto& s : sort_orders) {
    if (s.order_id == id) return &s;
  }
  return nullptr;
}

const Snapshot* TableMetadata::SnapshotById(int64_t id) const {
  for (const auto& s : snapshots) {
    if (s.snapshot_id == id) return &s;
  }
  return nullptr;
}

const Snapshot* TableMetadata::CurrentSnapshot() const {
  return current_snapshot_id ? SnapshotById(*current_snapshot_id) : nullptr;
}

const Snapshot* TableMetadata::SnapshotForRef(const std::string& ref) const {
  auto it = refs.find(ref);
  if (it != refs.end()) return SnapshotById(it->second.snapshot_id);
  if (ref == kMainBranch) return CurrentSnapshot();
  return nullptr;
}

Status ValidateTableMetadata(const TableMetadata& m) {
  if (m.format_version < 1 || m.format_version > kMaxFormatVersion) {
    return InvalidArgument(fmt::format("unsupported format-version {} (this reader supports 1 and 2)",
                                       m.format_version));
  }
  if (m.format_version >= 2 && m.table_uuid.empty()) return InvalidArgument("table-uuid is required in v2");
  if (m.location.empty()) return InvalidArgument("location is required");
  const Schema* schema = m.CurrentSchema();
  if (schema == nullptr) {
    return InvalidArgument(fmt::format("current-schema-id {} is not in schemas", m.current_schema_id));
  }
  std::set<int32_t> schema_ids;
  for (const auto& s : m.schemas) {
    if (!schema_ids.insert(s.schema_id).second) {
      return InvalidArgument(fmt::format("schema id {} appears twice", s.schema_id));
    }
    if (HighestFieldId(s) > m.last_column_id) {
      return InvalidArgument(fmt::format("schema {} uses ids above last-column-id {}", s.schema_id,
                                         m.last_column_id));
    }
  }
  if (m.DefaultSpec() == nullptr) {
    return InvalidArgument(fmt::format("default-spec-id {} is not in partition-specs", m.default_spec_id));
  }
  std::set<int32_t> spec_ids;
  for (const auto& spec : m.partition_specs) {
    if (!spec_ids.insert(spec.spec_id).second) {
      return InvalidArgument(fmt::format("partition spec id {} appears twice", spec.spec_id));
    }
    for (const auto& f : spec.fields) {
      if (f.field_id > m.last_partition_id) {
        return InvalidArgument(fmt::format("partition field id {} is above last-partition-id {}",
                                           f.field_id, m.last_partition_id));
      }
    }
  }
  if (m.default_sort_order_id != 0 && m.SortOrderById(m.default_sort_order_id) == nullptr) {
    return InvalidArgument(
        fmt::format("default-sort-order-id {} is not in sort-orders", m.default_sort_order_id));
  }
  std::set<int64_t> snapshot_ids;
  for (const auto& s : m.snapshots) {
    if (!snapshot_ids.insert(s.snapshot_id).second) {
      return InvalidArgument(fmt::format("snapshot id {} appears twice", s.snapshot_id));
    }
    if (s.manifest_list.empty() && s.manifests.empty() && m.format_version >= 2) {
      return InvalidArgument(fmt::format("snapshot {} has no manifest-list", s.snapshot_id));
    }
    if (m.format_version >= 2 && s.sequence_number > m.last_sequence_number) {
      return InvalidArgument(fmt::format("snapshot {} has sequence number {} above last-sequence-number {}",
                                         s.snapshot_id, s.sequence_number, m.last_sequence_number));
    }
  }
  if (m.current_snapshot_id && m.CurrentSnapshot() == nullptr) {
    return InvalidArgument(fmt::format("current-snapshot-id {} is not in snapshots", *m.current_snapshot_id));
  }
  for (const auto& [name, ref] : m.refs) {
    if (m.SnapshotById(ref.snapshot_id) == nullptr) {
      return InvalidArgument(fmt::format("ref '{}' points at unknown snapshot {}", name, ref.snapshot_id));
    }
  }
  if (auto main = m.refs.find(kMainBranch); main != m.refs.end()) {
    if (!m.current_snapshot_id || *m.current_snapshot_id != main->second.snapshot_id) {
      return InvalidArgument("refs.main does not match current-snapshot-id");
    }
  }
  return Status::OK();
}

int64_t PropertyAsInt(const TableMetadata& m, const std::string& key, int64_t default_value) {
  auto it = m.properties.find(key);
  if (it == m.properties.end()) return default_value;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size()) return default_value;
  return v;
}

}  // namespace icestream::iceberg
