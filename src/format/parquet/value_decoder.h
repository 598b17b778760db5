// Decoding of the values section of a data or dictionary page for the encodings that
// need no state across pages (parquet-format Encodings.md): PLAIN, BYTE_STREAM_SPLIT,
// RLE booleans and dictionary indices. The delta encodings are in delta_decoder.h.
//
// Decoded values land in one of two shapes: fixed-width bytes back to back (BOOLEAN as
// one byte 0/1 per value, INT32/FLOAT 4 bytes, INT64/DOUBLE 8, FIXED_LEN_BYTE_ARRAY
// type_length, all little-endian as in PLAIN) or, for BYTE_ARRAY, views into the page.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "format/parquet/types.h"

namespace icestream::format::parquet {

// Bytes of one decoded fixed-width value (0 for BYTE_ARRAY and INT96).
size_t FixedWidth(PhysicalType type, int32_t type_length);

// PLAIN (Encodings.md "Plain"): appends n values to *fixed or, for BYTE_ARRAY, *bytes
// (views into `in`). INT96 is kUnimplemented; too few bytes is kCorruption.
Status DecodePlain(std::string_view in, PhysicalType type, int32_t type_length, size_t n,
                   std::string* fixed, std::vector<std::string_view>* bytes);

// BYTE_STREAM_SPLIT (Encodings.md "Byte Stream Split"): `width` byte streams of n bytes.
Status DecodeByteStreamSplit(std::string_view in, size_t width, size_t n, std::string* fixed);

// RLE booleans: u32 LE length, then the hybrid encoding with bit width 1.
Status DecodeRleBooleans(std::string_view in, size_t n, std::string* fixed);

// Dictionary indices: one byte of bit width (0..32), then the hybrid encoding without a
// length prefix. Indices are not checked against the dictionary here.
Status DecodeDictionaryIndices(std::string_view in, size_t n, std::vector<uint32_t>* indices);

}  // namespace icestream::format::parquet
