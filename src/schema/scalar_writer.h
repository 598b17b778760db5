// The converter's fast path for one JSON scalar: its token text -> the column's value,
// for the usual shapes of each type. Both record walks (record_converter.cc's On-Demand
// walk and token_walker.h's) write scalars through it first, so a value the fast path
// takes is written the same way by either.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schema/converter_node.h"

namespace icestream::schema {

// Per-record state the scalar writer updates.
struct ScalarContext {
  std::optional<int64_t> routed;  // the routed field's value (ConverterOptions::route_field_id)
  std::string scratch;            // decoded base64
};

// Writes the JSON scalar token `tok` (a string with its quotes, a number, true or false;
// no surrounding whitespace) at repetition level `rep` into primitive n's column, when
// it is one the fast path takes and the schema accepts it. Returns false, having written
// nothing, otherwise: null, escapes in strings, numbers beyond the fast parsers' shapes,
// a value out of bounds or of the wrong JSON kind, float columns, enums of other types
// than string. The caller then goes the full way (which writes the value or says what is
// wrong with it). tok.data()[0, tok.size() + 32) must be readable (padded input).
inline bool WriteScalarFast(const ConverterNode& n, std::string_view tok, int16_t rep,
                            ScalarContext* ctx) {
  return n.write_fast(n, tok, rep, ctx);
}

// The writer WriteScalarFast calls for primitive n (chosen once, by its type and
// constraints, and kept in n.write_fast).
FastScalarWriter FastWriterFor(const ConverterNode& n);

// minimum/maximum (and their exclusive forms) of a number column, double or decimal.
bool WithinNumberBounds(const FieldConstraints& c, long double x);

// A JSON number token as a double (strtod needs a terminated copy).
bool ParseNumberToDouble(std::string_view tok, double* out);

// Whether s is one of the enum's string values.
bool ListedString(const std::vector<std::string>& values, std::string_view s);

// Whether p[0, n) holds a backslash. p[0, n + 32) must be readable.
bool HasBackslash(const char* p, size_t n);

}  // namespace icestream::schema
