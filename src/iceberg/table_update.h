// Table changes as the REST catalog protocol spells them (Iceberg REST OpenAPI:
// TableUpdate and TableRequirement, formats.md §C.12): requirements are checked
// against the current metadata, then updates are applied to it. Every writer of
// table metadata goes through ApplyUpdates — the catalog server for REST commits, the
// SQLite catalog for local commits — so the invariants live in one place.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/status.h"
#include "iceberg/table_metadata.h"

namespace icestream::iceberg {

namespace update {
struct AssignUuid { std::string uuid; };
struct UpgradeFormatVersion { int format_version = 2; };
struct AddSchema {
  Schema schema;
  std::optional<int32_t> last_column_id;  // deprecated in the protocol; the max is kept
};
struct SetCurrentSchema { int32_t schema_id = -1; };  // -1: the schema added last
struct AddSpec { PartitionSpec spec; };  // field ids < 0 are assigned; spec id is chosen
struct SetDefaultSpec { int32_t spec_id = -1; };
struct AddSortOrder { SortOrder sort_order; };
struct SetDefaultSortOrder { int32_t sort_order_id = -1; };
struct AddSnapshot { Snapshot snapshot; };
struct SetSnapshotRef {
  std::string ref_name;
  SnapshotRef ref;
};
struct RemoveSnapshots { std::vector<int64_t> snapshot_ids; };
struct RemoveSnapshotRef { std::string ref_name; };
struct SetLocation { std::string location; };
struct SetProperties { std::map<std::string, std::string> updates; };
struct RemoveProperties { std::vector<std::string> removals; };
struct SetStatistics { StatisticsFile statistics; };
struct RemoveStatistics { int64_t snapshot_id = 0; };
struct SetPartitionStatistics { StatisticsFile statistics; };
struct RemovePartitionStatistics { int64_t snapshot_id = 0; };
struct RemovePartitionSpecs { std::vector<int32_t> spec_ids; };
struct RemoveSchemas { std::vector<int32_t> schema_ids; };
}  // namespace update

using TableUpdate =
    std::variant<update::AssignUuid, update::UpgradeFormatVersion, update::AddSchema, update::SetCurrentSchema,
                 update::AddSpec, update::SetDefaultSpec, update::AddSortOrder, update::SetDefaultSortOrder,
                 update::AddSnapshot, update::SetSnapshotRef, update::RemoveSnapshots,
                 update::RemoveSnapshotRef, update::SetLocation, update::SetProperties,
                 update::RemoveProperties, update::SetStatistics, update::RemoveStatistics,
                 update::SetPartitionStatistics, update::RemovePartitionStatistics,
                 update::RemovePartitionSpecs, update::RemoveSchemas>;

namespace requirement {
struct AssertCreate {};
struct AssertTableUuid { std::string uuid; };
struct AssertRefSnapshotId {
  std::string ref;
  std::optional<int64_t> snapshot_id;  // nullopt: the ref must not exist
};
struct AssertLastAssignedFieldId { int32_t last_assigned_field_id = 0; };
struct AssertCurrentSchemaId { int32_t current_schema_id = 0; };
struct AssertLastAssignedPartitionId { int32_t last_assigned_partition_id = 0; };
struct AssertDefaultSpecId { int32_t default_spec_id = 0; };
struct AssertDefaultSortOrderId { int32_t default_sort_order_id = 0; };
}  // namespace requirement

using TableRequirement =
    std::variant<requirement::AssertCreate, requirement::AssertTableUuid, requirement::AssertRefSnapshotId,
                 requirement::AssertLastAssignedFieldId, requirement::AssertCurrentSchemaId,
                 requirement::AssertLastAssignedPartitionId, requirement::AssertDefaultSpecId,
                 requirement::AssertDefaultSortOrderId>;

// Checks every requirement against `base` (nullptr: the table does not exist).
// Errors: kConflict "Requirement failed: …" for the first one that does not hold
// (REST 409 CommitFailedException); the caller reports a missing table itself.
Status CheckRequirements(const TableMetadata* base, const std::vector<TableRequirement>& requirements);

// Applies updates in order to `base` (nullptr: a new table, starting from empty v2
// metadata) and validates the result. `now_ms` stamps last-updated-ms unless a
// snapshot added by these updates became current (then its timestamp, as Java does).
// Errors: kInvalidArgument for an update that does not apply (unknown schema id,
// duplicate snapshot id, stale sequence number, invalid spec, …).
Result<TableMetadata> ApplyUpdates(const TableMetadata* base, const std::vector<TableUpdate>& updates,
                                   int64_t now_ms);

// After a new metadata file replaces `base_location`: appends the previous file to
// the metadata log, keeping at most `write.metadata.previous-versions-max` (100)
// entries.
void RecordPreviousMetadata(TableMetadata* next, const TableMetadata& base, const std::string& base_location);

// Metadata of a new table (Java TableMetadata.newTableMetadata): column ids are
// reassigned fresh (1..n, a struct's fields before their children), the partition
// spec and sort order are rebound to them by column name, partition field ids start
// at 1000, spec id and schema id are 0 and the sort order gets id 1 (0 = unsorted).
// Errors: kInvalidArgument for an invalid schema, spec or order.
Result<TableMetadata> NewTableMetadata(const Schema& schema, const PartitionSpec& spec, const SortOrder& order,
                                       const std::string& location,
                                       const std::map<std::string, std::string>& properties,
                                       const std::string& table_uuid, int64_t now_ms, int format_version = 2);

// The updates that create `metadata` from nothing (for a create through the REST
// protocol's stage-create + commit, or to replay a table into another catalog).
std::vector<TableUpdate> CreationUpdates(const TableMetadata& metadata);

}  // namespace icestream::iceberg
