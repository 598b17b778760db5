// Schema definitions of the registry's three data formats (Glue "DataFormat"): syntax
// checks and the canonical form used to recognise an already registered definition
// (aws-api.md §D.4: JSON and AVRO compare as parsed JSON, PROTOBUF as exact text).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace icestream::registry {

enum class DataFormat : uint8_t { kAvro, kJson, kProtobuf };

std::string_view DataFormatName(DataFormat f);  // "AVRO", "JSON", "PROTOBUF"
bool ParseDataFormat(std::string_view s, DataFormat* out);

// Checks the definition's syntax. Errors are kInvalidArgument with AWS's text:
// "Schema definition of JSON data format is invalid: <detail>".
//  JSON      a JSON Schema (draft 04/06/07): an object or boolean whose keywords have
//            the types the meta-schema gives them (type names, properties, required,
//            items, combinators, numeric bounds, patterns that compile).
//  AVRO      an Avro schema that parses (named types defined before use, valid names,
//            unique enum symbols and field names, no nested or duplicate-typed unions).
//  PROTOBUF  a .proto text with balanced braces that declares a message, enum or
//            service (stored, not compiled).
Status CheckDefinition(DataFormat format, std::string_view definition);

// The form two definitions are compared in. Precondition: CheckDefinition succeeded.
std::string CanonicalDefinition(DataFormat format, std::string_view definition);

}  // namespace icestream::registry
