// A Parquet file written by format/parquet as an Iceberg data file: the manifest entry's
// record count, size, per-column sizes, value/null/NaN counts, lower/upper bounds and
// split offsets (Iceberg spec "Data File Fields"; formats.md §C.9) from the writer's
// FileMetrics. Kept apart from both libraries so that neither depends on the other.
#pragma once

#include <cstdint>
#include <string>

#include "format/parquet/file_writer.h"
#include "iceberg/manifest.h"

namespace icestream::iceberg {

// `metrics` of the file at `path` (its size is metrics.file_size); `partition` and
// `spec_id` place it in the table's partition spec. The sort order is 0 (unsorted).
DataFile ParquetDataFile(const format::parquet::FileMetrics& metrics, std::string path, PartitionTuple partition,
                         int32_t spec_id);

}  // namespace icestream::iceberg
