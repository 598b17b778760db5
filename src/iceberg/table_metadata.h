// Table metadata (Iceberg spec "Table Metadata", format versions 1 and 2): the plain
// model. The JSON codec is table_metadata_json.h; changes are made by applying
// TableUpdates (table_update.h), which keeps every invariant in one place.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "iceberg/partition_spec.h"
#include "iceberg/schema/schema.h"
#include "iceberg/snapshot.h"
#include "iceberg/sort_order.h"

namespace icestream::iceberg {

// Highest format version this library reads and writes.
constexpr int kMaxFormatVersion = 2;

// A statistics file entry ("statistics" / "partition-statistics"), kept as its JSON
// object text so that it round-trips unchanged (Puffin files are not interpreted here).
struct StatisticsFile {
  int64_t snapshot_id = 0;
  std::string json;
  bool operator==(const StatisticsFile& other) const = default;
};

struct TableMetadata {
  int format_version = 2;
  std::string table_uuid;
  std::string location;
  int64_t last_sequence_number = 0;
  int64_t last_updated_ms = 0;
  int32_t last_column_id = 0;
  std::vector<Schema> schemas;
  int32_t current_schema_id = 0;
  std::vector<PartitionSpec> partition_specs;
  int32_t default_spec_id = 0;
  int32_t last_partition_id = kFirstPartitionFieldId - 1;
  std::vector<SortOrder> sort_orders;
  int32_t default_sort_order_id = 0;
  std::map<std::string, std::string> properties;
  std::optional<int64_t> current_snapshot_id;
  std::vector<Snapshot> snapshots;
  std::map<std::string, SnapshotRef> refs;
  std::vector<SnapshotLogEntry> snapshot_log;
  std::vector<MetadataLogEntry> metadata_log;
  std::vector<StatisticsFile> statistics;
  std::vector<StatisticsFile> partition_statistics;

  // Lookups; nullptr when absent. Pointers stay valid while the metadata is unchanged.
  const Schema* CurrentSchema() const { return SchemaById(current_schema_id); }
  const Schema* SchemaById(int32_t id) const;
  const PartitionSpec* DefaultSpec() const { return SpecById(default_spec_id); }
  const PartitionSpec* SpecById(int32_t id) const;
  const SortOrder* SortOrderById(int32_t id) const;
  const Snapshot* SnapshotById(int64_t id) const;
  const Snapshot* CurrentSnapshot() const;
  // The snapshot a ref points at, or nullptr (no such ref).
  const Snapshot* SnapshotForRef(const std::string& ref) const;

  bool operator==(const TableMetadata& other) const = default;
};

// Checks the invariants a reader relies on: a known format version, the current
// schema, default spec and sort order exist, snapshot ids are unique, the current
// snapshot and every ref point at existing snapshots, main agrees with
// current-snapshot-id, partition specs are valid for the current schema.
// Errors are kInvalidArgument naming the broken rule.
Status ValidateTableMetadata(const TableMetadata& metadata);

// Integer table property with a default (e.g. "commit.retry.num-retries").
int64_t PropertyAsInt(const TableMetadata& metadata, const std::string& key, int64_t default_value);

}  // namespace icestream::iceberg
