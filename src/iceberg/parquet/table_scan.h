// TableScan: the rows of one snapshot of an Iceberg v2 table, read with the project's
// Parquet reader (Iceberg spec "Scan Planning", "Row-level deletes"): what `icestream
// table cat|count|files` prints and the console's sample rows.
//
//   PlanScan  snapshot -> manifest list -> manifests -> live data and delete files, with
//             inherited data sequence numbers; the read schema is the snapshot's
//             (schema-id), or the table's current schema for snapshots without one.
//   ScanRows  every live row of the planned data files, in manifest order, projected
//             onto the read schema by field id (older files read with nulls in the
//             columns added since, widened types widened), as one JSON object per row
//             in json_rows.h's value forms. Delete files are applied:
//               position deletes  to data files of data sequence number <= theirs,
//                                 by (file_path, pos);
//               equality deletes  to data files of data sequence number < theirs, in the
//                                 same partition (or every partition when the delete
//                                 file's spec is unpartitioned); null equals null.
//             Equality deletes on nested fields are refused (kUnimplemented).
//
// Errors: the FileIO's (kNotFound for a missing file, ...), the Parquet reader's
// (kCorruption ...), kNotFound for a snapshot id the table does not have. Stateless; the
// FileIO must outlive the calls.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "iceberg/file_io.h"
#include "iceberg/manifest.h"
#include "iceberg/table_metadata.h"

namespace icestream::iceberg {

struct ScanPlan {
  std::optional<Snapshot> snapshot;  // none: the table has no snapshot yet
  Schema schema;                     // the read schema
  std::vector<ManifestEntry> data_files;
  std::vector<ManifestEntry> delete_files;
  std::vector<PartitionSpec> specs;  // the table's, for the delete files' partitions
};

Result<ScanPlan> PlanScan(const FileIO& io, const TableMetadata& metadata,
                          std::optional<int64_t> snapshot_id = std::nullopt);

struct ScanFilter {
  // column = value on top-level columns, all of which must hold. A row's value is
  // compared as JSON text (numbers, true/false, null) or, for a string, as the string.
  std::vector<std::pair<std::string, std::string>> equals;
  int64_t limit = -1;  // rows; -1: all
};

// Calls `row` with each live row that passes `filter` (a JSON object, no newline);
// stops early when `row` returns false or the limit is reached.
Status ScanRows(const FileIO& io, const ScanPlan& plan, const ScanFilter& filter,
                const std::function<bool(std::string_view row)>& row);

// Live rows: the manifests' record counts when no delete file applies and nothing is
// filtered; otherwise the rows ScanRows would return.
Result<int64_t> CountRows(const FileIO& io, const ScanPlan& plan, const ScanFilter& filter);

// Parses "col=value" (the first '=' splits); kInvalidArgument without one.
Result<std::pair<std::string, std::string>> ParseEqualsFilter(std::string_view text);

}  // namespace icestream::iceberg
