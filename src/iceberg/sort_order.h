// Sort orders (Iceberg spec "Sorting"). Order id 0 is the unsorted order.
#pragma once

#include <cstdint>
#include <vector>

#include "iceberg/transform.h"

namespace icestream::iceberg {

enum class SortDirection : uint8_t { kAsc, kDesc };
enum class NullOrder : uint8_t { kNullsFirst, kNullsLast };

struct SortField {
  Transform transform;
  int32_t source_id = 0;
  SortDirection direction = SortDirection::kAsc;
  NullOrder null_order = NullOrder::kNullsFirst;

  bool operator==(const SortField& other) const = default;
};

struct SortOrder {
  int32_t order_id = 0;
  std::vector<SortField> fields;

  bool is_unsorted() const { return fields.empty(); }
  bool operator==(const SortOrder& other) const = default;
};

}  // namespace icestream::iceberg
