// Manifests and manifest lists (Iceberg spec "Manifests", "Manifest Lists"): the plain
// model. The Avro codec is manifest_avro.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "iceberg/literal.h"

namespace icestream::iceberg {

enum class ManifestContent : uint8_t { kData = 0, kDeletes = 1 };
enum class FileContent : uint8_t { kData = 0, kPositionDeletes = 1, kEqualityDeletes = 2 };
enum class EntryStatus : uint8_t { kExisting = 0, kAdded = 1, kDeleted = 2 };

// Manifest-list sequence numbers of a manifest not yet committed; the manifest list
// writer replaces them with the committing snapshot's number (spec "Sequence Number
// Inheritance").
constexpr int64_t kUnassignedSequenceNumber = -1;

// data_file (spec "Data File Fields"). Optional maps are empty when absent.
struct DataFile {
  FileContent content = FileContent::kData;
  std::string file_path;
  std::string file_format = "PARQUET";
  PartitionTuple partition;
  int64_t record_count = 0;
  int64_t file_size_in_bytes = 0;
  std::map<int32_t, int64_t> column_sizes;
  std::map<int32_t, int64_t> value_counts;
  std::map<int32_t, int64_t> null_value_counts;
  std::map<int32_t, int64_t> nan_value_counts;
  std::map<int32_t, std::string> lower_bounds;  // single-value serialization
  std::map<int32_t, std::string> upper_bounds;
  std::optional<std::string> key_metadata;
  std::vector<int64_t> split_offsets;
  std::vector<int32_t> equality_ids;
  std::optional<int32_t> sort_order_id;
  std::optional<std::string> referenced_data_file;
  // Not stored in the data_file record: the spec of the manifest it was read from or
  // is to be written with.
  int32_t spec_id = 0;

  bool operator==(const DataFile& other) const = default;
};

// manifest_entry (spec "Manifest Entry Fields"). After reading with a ManifestFile,
// inherited values are filled in (see ReadManifest).
struct ManifestEntry {
  EntryStatus status = EntryStatus::kAdded;
  std::optional<int64_t> snapshot_id;
  std::optional<int64_t> sequence_number;       // data sequence number
  std::optional<int64_t> file_sequence_number;
  DataFile data_file;

  bool live() const { return status != EntryStatus::kDeleted; }
  bool operator==(const ManifestEntry& other) const = default;
};

// field_summary of manifest_file.partitions.
struct PartitionFieldSummary {
  bool contains_null = false;
  std::optional<bool> contains_nan;
  std::optional<std::string> lower_bound;  // single-value serialization of the result type
  std::optional<std::string> upper_bound;

  bool operator==(const PartitionFieldSummary& other) const = default;
};

// manifest_file (spec "Manifest Lists").
struct ManifestFile {
  std::string manifest_path;
  int64_t manifest_length = 0;
  int32_t partition_spec_id = 0;
  ManifestContent content = ManifestContent::kData;
  int64_t sequence_number = kUnassignedSequenceNumber;
  int64_t min_sequence_number = kUnassignedSequenceNumber;
  int64_t added_snapshot_id = 0;
  int32_t added_files_count = 0;
  int32_t existing_files_count = 0;
  int32_t deleted_files_count = 0;
  int64_t added_rows_count = 0;
  int64_t existing_rows_count = 0;
  int64_t deleted_rows_count = 0;
  std::vector<PartitionFieldSummary> partitions;
  std::optional<std::string> key_metadata;

  int32_t live_files_count() const { return added_files_count + existing_files_count; }
  bool operator==(const ManifestFile& other) const = default;
};

}  // namespace icestream::iceberg
