// Decoders of the delta encodings (parquet-format Encodings.md): DELTA_BINARY_PACKED
// (5), DELTA_LENGTH_BYTE_ARRAY (6) and DELTA_BYTE_ARRAY (7).
//
//   DELTA_BINARY_PACKED := header block*
//     header := ULEB(block size, multiple of 128) ULEB(miniblocks per block)
//               ULEB(total value count) zigzag-ULEB(first value)
//     block  := zigzag-ULEB(min delta) u8 bit width * miniblocks miniblock*
//     miniblock := (block size / miniblocks) deltas - min delta, bit-packed LSB-first
//   DELTA_LENGTH_BYTE_ARRAY := DELTA_BINARY_PACKED(lengths) bytes...
//   DELTA_BYTE_ARRAY := DELTA_BINARY_PACKED(prefix lengths) DELTA_LENGTH_BYTE_ARRAY(suffixes)
//
// Arithmetic wraps (two's complement), as the spec requires. All decoders take the
// number of values the page holds and fail with kCorruption when the stream says
// otherwise or ends early.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace icestream::format::parquet {

// Decodes exactly n values into out[0, n). *consumed = the bytes the stream took (the
// end of the last miniblock used).
Status DecodeDeltaBinaryPacked(std::string_view in, size_t n, int64_t* out, size_t* consumed);

// Appends n values to *out as views into `in`.
Status DecodeDeltaLengthByteArray(std::string_view in, size_t n,
                                  std::vector<std::string_view>* out);

// Rebuilds n values into *storage (which must not be resized afterwards while the views
// live) and appends views of them to *out. Fails with kResourceExhausted when the values
// would take more than max_bytes (prefixes make a small stream expand without bound).
Status DecodeDeltaByteArray(std::string_view in, size_t n, size_t max_bytes, std::string* storage,
                            std::vector<std::string_view>* out);

}  // namespace icestream::format::parquet
