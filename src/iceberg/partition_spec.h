// Partition specs (Iceberg spec "Partitioning", "Partition Evolution").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "iceberg/literal.h"
#include "iceberg/schema/schema.h"
#include "iceberg/transform.h"

namespace icestream::iceberg {

// Partition field ids start here (v2; formats.md §C.3); an unpartitioned table's
// last-partition-id is kFirstPartitionFieldId - 1.
constexpr int32_t kFirstPartitionFieldId = 1000;

struct PartitionField {
  int32_t source_id = 0;
  int32_t field_id = 0;
  std::string name;
  Transform transform;

  bool operator==(const PartitionField& other) const = default;
};

struct PartitionSpec {
  int32_t spec_id = 0;
  std::vector<PartitionField> fields;

  bool is_unpartitioned() const { return fields.empty(); }
  // Same fields (ids, sources, names, transforms), ignoring the spec id.
  bool CompatibleWith(const PartitionSpec& other) const { return fields == other.fields; }
  bool operator==(const PartitionSpec& other) const = default;
};

// The partition tuple's struct type: one optional field per partition field, with the
// partition field id and the transform's result type (spec "Manifests": partition
// struct fields are optional). Errors when a source column is missing from the schema
// or the transform does not apply to it.
Result<std::vector<NestedField>> PartitionType(const PartitionSpec& spec, const Schema& schema);

// Checks the spec against the schema: sources exist and are primitive, transforms
// apply, names are unique and do not clash with other columns than their identity
// source, field ids unique.
Status ValidatePartitionSpec(const PartitionSpec& spec, const Schema& schema);

// "ts_day=2024-01-01/kind=a%2Fb": the partition path Java writers put data files
// under (URL-encoded names and values).
std::string PartitionPath(const PartitionSpec& spec, const PartitionTuple& partition);

}  // namespace icestream::iceberg
