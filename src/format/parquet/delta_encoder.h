// Encoders of DELTA_BINARY_PACKED (5), DELTA_BYTE_ARRAY (7) and BYTE_STREAM_SPLIT (9)
// (parquet-format Encodings.md), the value encodings of INT32/INT64, FIXED_LEN_BYTE_ARRAY
// decimal and FLOAT/DOUBLE data pages.
//
//   DELTA_BINARY_PACKED := header block*
//     header := ULEB(128) ULEB(4) ULEB(value count) zigzag-ULEB(first value)
//     block  := zigzag-ULEB(min delta) u8 bit width * 4 miniblock*
//     miniblock := 32 (delta - min delta), bit-packed LSB-first, 4 * width bytes
//   Deltas wrap in the column's width (two's complement), so every delta of an INT64
//   column fits 64 bits and every delta of an INT32 column 32. The last used miniblock
//   is zero-padded to 32 values; miniblocks past the last value have width 0 and no bytes.
//
//   DELTA_BYTE_ARRAY := DELTA_BINARY_PACKED(prefix lengths)
//                       DELTA_BINARY_PACKED(suffix lengths) suffix bytes*
//     prefix length i = bytes value i shares with the start of value i-1 (0 for the first).
//   A 16-byte big-endian decimal holding an amount shares its 12-14 sign bytes with its
//   neighbour, so 2-4 bytes of each value are left for the codec instead of 16.
//
//   BYTE_STREAM_SPLIT := stream 0 ... stream K-1, stream k = byte k of every value
//   (K = 4 for FLOAT, 8 for DOUBLE). The exponent bytes gather in a few streams, which
//   a codec then compresses far better than the interleaved values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace icestream::format::parquet {

// Appends the encoding of n >= 1 values stored PLAIN (little-endian, unaligned) at
// `plain` to *out.
void EncodeDeltaBinaryPacked32(const char* plain, size_t n, std::string* out);
void EncodeDeltaBinaryPacked64(const char* plain, size_t n, std::string* out);

// Appends the DELTA_BYTE_ARRAY form of n >= 1 values of `width` (1..16) bytes each at
// `plain` to *out, unless it would take `limit` bytes or more: then appends nothing and
// returns false (the caller keeps PLAIN). Cost: one pass to measure, one to write.
bool EncodeDeltaByteArrayFixed(const char* plain, size_t n, size_t width, size_t limit,
                               std::string* out);

// Appends the BYTE_STREAM_SPLIT form of n values of `width` bytes at `plain` to *out.
void EncodeByteStreamSplit(const char* plain, size_t n, size_t width, std::string* out);

}  // namespace icestream::format::parquet
