// JSON codec of table metadata and its parts (Iceberg spec Appendix C "JSON
// serialization": partition specs, sort orders, table metadata and snapshots).
//
// Reading accepts what other writers produce: format versions 1 and 2, the deprecated
// v1 fields (`schema`, `partition-spec`, snapshot `manifests`), current-snapshot-id -1
// for "none", a missing `refs` (main is implied), gzip-compressed files and unknown
// members (ignored). Writing emits the v2 form, plus the v1-required deprecated fields
// when format-version is 1.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "common/status.h"
#include "iceberg/table_metadata.h"

namespace icestream::iceberg {

nlohmann::json PartitionSpecToJsonValue(const PartitionSpec& spec);
// `next_field_id` assigns ids to fields without "field-id" (v1 specs); it is advanced.
Result<PartitionSpec> PartitionSpecFromJsonValue(const nlohmann::json& json, int32_t* next_field_id);
// The bare field array (manifest `partition-spec` key, v1 `partition-spec`).
nlohmann::json PartitionFieldsToJsonValue(const PartitionSpec& spec);

nlohmann::json SortOrderToJsonValue(const SortOrder& order);
Result<SortOrder> SortOrderFromJsonValue(const nlohmann::json& json);

nlohmann::json SnapshotToJsonValue(const Snapshot& snapshot, int format_version = 2);
Result<Snapshot> SnapshotFromJsonValue(const nlohmann::json& json);

nlohmann::json SnapshotRefToJsonValue(const SnapshotRef& ref);
Result<SnapshotRef> SnapshotRefFromJsonValue(const nlohmann::json& json);

nlohmann::json TableMetadataToJsonValue(const TableMetadata& metadata);
std::string TableMetadataToJson(const TableMetadata& metadata);

// Parses and validates (ValidateTableMetadata). `text` may be gzip-compressed.
// Errors: kInvalidArgument naming the member at fault.
Result<TableMetadata> TableMetadataFromJsonValue(const nlohmann::json& json);
Result<TableMetadata> TableMetadataFromJson(std::string_view text);

}  // namespace icestream::iceberg
