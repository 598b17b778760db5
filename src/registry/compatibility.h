// Schema compatibility for the registry's modes (Glue "Compatibility"; aws-api.md §D.4).
//
// A check asks whether a *reader* schema can consume everything a *writer* schema
// produces. BACKWARD: the new version reads data of the old (reader = new). FORWARD:
// the old reads the new (reader = old). FULL: both. The *_ALL modes apply the check
// against every earlier AVAILABLE version from the checkpoint on, the others against
// the latest AVAILABLE version only.
//
// JSON Schema (AWS does not publish its rules; these extend the GSR client's baseline):
//  - a property the reader requires must be required by the writer (adding a required
//    property breaks BACKWARD, dropping one breaks FORWARD), at every object level and
//    in shared definitions/$defs;
//  - types of shared properties may only widen from writer to reader (integer ⊂
//    number), enums may only grow, numeric bounds (minimum/maximum, exclusive forms)
//    and string/array length limits may only loosen — the changes that move a column
//    between Iceberg types (int/long/decimal) are caught;
//  - a property the reader forbids (additionalProperties: false) must not be one the
//    writer has; array items are compared recursively.
//  Adding or removing optional properties is allowed in every mode.
// AVRO: the Avro specification's schema resolution (reader fields missing from the
//  writer need defaults, promotions int→long→float→double and string↔bytes, enums
//  whose writer symbols the reader knows, unions by branch, records and fixed by name).
// PROTOBUF: not checked (stored as given).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "registry/definition.h"

namespace icestream::registry {

enum class Compatibility : uint8_t {
  kNone,
  kDisabled,
  kBackward,
  kBackwardAll,
  kForward,
  kForwardAll,
  kFull,
  kFullAll,
};

std::string_view CompatibilityName(Compatibility c);
bool ParseCompatibility(std::string_view s, Compatibility* out);

// Empty when `reader` reads everything `writer` produces, else why not.
// Preconditions: both definitions passed CheckDefinition for `format`.
std::string ReaderIncompatibility(DataFormat format, std::string_view reader, std::string_view writer);

// Checks a new definition against an earlier one under a mode: empty when compatible.
std::string Incompatibility(DataFormat format, Compatibility mode, std::string_view new_definition,
                            std::string_view old_definition);

}  // namespace icestream::registry
