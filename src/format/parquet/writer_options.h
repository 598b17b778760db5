// Options of the Parquet writer (defaults follow parquet-java / Arrow where they agree).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/parquet/metadata.h"
#include "format/parquet/types.h"

namespace icestream::format::parquet {

struct WriterOptions {
  Codec codec = Codec::kZstd;
  int compression_level = 0;             // 0 = the codec's default
  int64_t page_size = 1 << 20;           // target uncompressed data page size
  int64_t max_page_levels = 128 * 1024;  // at most this many level entries per page
  int64_t row_group_size = 128LL << 20;  // target uncompressed row-group size
  int64_t max_row_group_rows = 1LL << 30;
  bool dictionary = true;  // RLE_DICTIONARY, falling back to PLAIN
  int64_t dictionary_page_size_limit = 1 << 20;
  // INT32/INT64 pages that are not dictionary-encoded: DELTA_BINARY_PACKED when it is
  // smaller than PLAIN (sequences, timestamps, small numbers shrink 2-60x before the
  // codec, which then has far less to do; random 64-bit values stay PLAIN).
  bool delta_integers = true;
  // FIXED_LEN_BYTE_ARRAY decimal pages that are not dictionary-encoded: DELTA_BYTE_ARRAY
  // when it is smaller than PLAIN. Iceberg stores decimal(38,S) (every decimal from a
  // JSON Schema) in 16 bytes, of which an amount uses 2-4: the codec then compresses a
  // quarter of the bytes (bench/convert/shapes, decimal). Off by default: icebird 0.3
  // (hyparquet 1.19) reads no DELTA_BYTE_ARRAY page, so table files (delivery, compaction,
  // `parquet copy`) stay PLAIN; `icestream convert` turns it on (DuckDB 1.5 and hyparquet
  // 1.33 read it).
  bool delta_decimals = false;
  // FLOAT/DOUBLE pages that are not dictionary-encoded: BYTE_STREAM_SPLIT (byte k of every
  // value side by side) for the chunks where it compresses smaller. Each chunk decides on
  // a sample of its first page, compressed both ways: random doubles are ~10% smaller and
  // compress ~3x faster split, while doubles parsed from short decimals (coordinates like
  // 12.3456) are ~70% larger split, their repeated 8-byte patterns being what the codec
  // finds (bench/convert/shapes, double and mix). false: always PLAIN.
  bool byte_stream_split = true;
  size_t statistics_truncate_bytes = 64;  // BYTE_ARRAY bounds longer than this are truncated
  // 1: everything on the caller's thread. 2: pages are encoded and compressed on a
  // background thread while the caller adds records.
  int threads = 1;
  std::string created_by = "icestream version 0.1.0";
  // Extra footer key/values; `iceberg.schema` is always added.
  std::vector<KeyValue> key_value_metadata;
};

}  // namespace icestream::format::parquet
