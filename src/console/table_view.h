// A table snapshot as the console shows it: its live files (data and delete files, with
// partition, size, rows and sequence numbers, and totals per partition) and a sample of
// its rows read with the project's Parquet reader (iceberg/parquet/table_scan.h, the
// same reader as `icestream table cat`). Stateless.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/status.h"
#include "iceberg/file_io.h"
#include "iceberg/table_metadata.h"

namespace icestream::console {

// {"snapshot_id", "files": [{"path", "content", "partition", "spec_id", "record_count",
//  "file_size_in_bytes", "sequence_number", "snapshot_id"}], "partitions": [{"partition",
//  "files", "bytes", "records", "delete_files"}]} ("snapshot_id" null for an empty table).
Result<nlohmann::json> TableFiles(const iceberg::FileIO& io, const iceberg::TableMetadata& metadata,
                                  std::optional<int64_t> snapshot_id);

// {"snapshot_id", "schema_id", "rows": [...], "limit", "truncated"} — at most `limit`
// rows (one more is read to tell whether there are more). Snapshot ids are written as
// strings (JavaScript numbers cannot hold them).
Result<std::string> TableRows(const iceberg::FileIO& io, const iceberg::TableMetadata& metadata,
                              std::optional<int64_t> snapshot_id, int64_t limit);

}  // namespace icestream::console
