// Parquet file metrics -> Iceberg data_file.
#include "iceberg/parquet/data_file.h"

namespace icestream::iceberg {

DataFile ParquetDataFile(const format::parquet::FileMetrics& m, std::string path, PartitionTuple partition,
                         int32_t spec_id) {
  DataFile f;
  f.file_path = std::move(path);
  f.file_format = "PARQUET";
  f.partition = std::move(partition);
  f.record_count = m.record_count;
  f.file_size_in_bytes = m.file_size;
  for (const auto& c : m.columns) {
    // A field id appears once per leaf; repeated ids (none today) would add up.
    f.column_sizes[c.field_id] += c.column_size;
    if (c.value_count) f.value_counts[c.field_id] = *c.value_count;
    if (c.null_count) f.null_value_counts[c.field_id] = *c.null_count;
    if (c.nan_count) f.nan_value_counts[c.field_id] = *c.nan_count;
    if (c.lower_bound) f.lower_bounds[c.field_id] = *c.lower_bound;
    if (c.upper_bound) f.upper_bounds[c.field_id] = *c.upper_bound;
  }
  f.split_offsets = m.split_offsets;
  f.sort_order_id = 0;
  f.spec_id = spec_id;
  return f;
}

}  // namespace icestream::iceberg
