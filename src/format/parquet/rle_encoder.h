// The RLE / bit-packed hybrid encoding (parquet-format Encodings.md "Run Length
// Encoding / Bit-Packing Hybrid"), used for definition and repetition levels,
// dictionary indices and booleans.
//
//   encoded   := run*
//   run       := rle-run | bit-packed-run
//   rle-run   := ULEB128(count << 1)            value in ceil(w/8) bytes, little-endian
//   bp-run    := ULEB128((groups << 1) | 1)     groups * w bytes: 8 values per group,
//                                               packed LSB-first, last group zero-padded
//
// Runs of 8 or more equal values become RLE runs; everything else is bit-packed. The
// caller adds the u32 length prefix where the page layout wants one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace icestream::format::parquet {

// Appends the hybrid encoding of values[0, n) with the given bit width (0..32) to *out.
// Every value must fit in bit_width bits. With bit_width 0 (a one-entry dictionary)
// the output is a single RLE run of zeros with no value bytes.
template <typename T>
void RleEncode(const T* values, size_t n, int bit_width, std::string* out);

// Appends values[0, n) bit-packed LSB-first with the given width, zero-padding the
// final byte (the PLAIN encoding of BOOLEAN with width 1). Used by RleEncode too.
template <typename T>
void BitPack(const T* values, size_t n, int bit_width, std::string* out);

// Bits needed to store max_value (0 for 0).
int BitWidth(uint64_t max_value);

// Appends ULEB128(v).
void PutUleb128(uint64_t v, std::string* out);

extern template void RleEncode<uint8_t>(const uint8_t*, size_t, int, std::string*);
extern template void RleEncode<uint16_t>(const uint16_t*, size_t, int, std::string*);
extern template void RleEncode<uint32_t>(const uint32_t*, size_t, int, std::string*);
extern template void BitPack<uint8_t>(const uint8_t*, size_t, int, std::string*);
extern template void BitPack<uint16_t>(const uint16_t*, size_t, int, std::string*);
extern template void BitPack<uint32_t>(const uint32_t*, size_t, int, std::string*);

}  // namespace icestream::format::parquet
