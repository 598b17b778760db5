// Syntax check of the ECMAScript regular expressions in JSON Schema definitions
// (`pattern`, `patternProperties` keys; JSON Schema draft 7 §4.3 says they are ECMA-262
// regular expressions).
//
// The registry stores such patterns and the converter never applies them to records
// (they do not shape an Iceberg column), so no record can make delivery backtrack. They
// are checked here without compiling them: one left-to-right scan, no recursion, no
// allocation, bounded by the limits below. std::regex compiled them before, and a
// pattern of 50,000 nested groups overflowed the stack of its recursive compiler.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace icestream::registry {

// Limits of a pattern in a schema definition (docs/kinesis-api.md, "Schema registry").
constexpr size_t kMaxSchemaPatternBytes = 8192;
constexpr size_t kMaxSchemaPatternNesting = 32;

// Empty when `pattern` is a well-formed ECMAScript (Annex B) regular expression within
// the limits; else why it is not.
std::string CheckEcmaPattern(std::string_view pattern);

}  // namespace icestream::registry
