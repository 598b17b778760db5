// zlib deflate/inflate with bounds, for Avro's deflate codec (raw RFC 1951) and for
// other formats carried next to Avro files (gzip-compressed Iceberg metadata).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace icestream::format::avro {

// Appends the raw deflate stream (no zlib header, no checksum) of `in` to *out.
Status DeflateRaw(std::string_view in, int level, std::string* out);

// Inflates `in` into *out (replacing it). `window_bits` as zlib's inflateInit2: -15 raw
// deflate, 16 + 15 gzip. Errors: kCorruption for damaged or truncated input or output
// beyond `max_out` bytes.
Status Inflate(std::string_view in, int window_bits, size_t max_out, std::string* out);

}  // namespace icestream::format::avro
