// Generic Avro values decoded with the writer's schema, for reading files whose exact
// layout is not known in advance (manifests written by other Iceberg implementations).
// Records keep their fields in writer order; look them up by name.
//
// Plain data; not thread-safe to mutate.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "format/avro/encoding.h"
#include "format/avro/schema.h"

namespace icestream::format::avro {

struct Datum {
  // The writer schema node this value was decoded with (for a union: the chosen
  // branch's node). Never null after decoding.
  const Node* node = nullptr;
  bool boolean = false;
  int64_t integer = 0;  // int, long, enum symbol index
  double real = 0;      // float, double
  std::string bytes;    // bytes, string, fixed
  // record: the fields in writer order; array: the items; map: the values (keys in
  // `keys`, same order).
  std::vector<Datum> children;
  std::vector<std::string> keys;

  AvroType type() const { return node->type; }
  bool is_null() const { return node->type == AvroType::kNull; }
  // Record field by name; nullptr when the record has no such field.
  const Datum* Field(std::string_view name) const;
};

struct DecodeLimits {
  int max_depth = 64;
  // Upper bound on array/map items of zero-byte types (null, empty records), which
  // would otherwise let a few bytes claim billions of items.
  int64_t max_empty_items = 1 << 20;
};

// Decodes one value of `node` from the decoder. Errors are kCorruption (truncated or
// malformed data, nesting deeper than the limit).
Result<Datum> DecodeDatum(const Node& node, Decoder* decoder, const DecodeLimits& limits = {});

}  // namespace icestream::format::avro
