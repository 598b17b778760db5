// Reading one column chunk of a Parquet file held in memory: its pages (parquet-format
// README "Column chunks", "Data Pages"; parquet.thrift PageHeader) are decompressed and
// decoded into level arrays and values.
//
//   chunk     = [dictionary page] data page ...       (v1 and v2 pages may mix)
//   page      = PageHeader (thrift compact) | body (compressed_page_size bytes)
//   v1 body   = compressed([rep: u32 len, RLE][def: u32 len, RLE][values])
//   v2 body   = [rep: RLE][def: RLE] compressed-if-is_compressed([values])
//
// Values are decoded from PLAIN, PLAIN_DICTIONARY / RLE_DICTIONARY, RLE (BOOLEAN),
// DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT;
// other encodings are kUnimplemented. Codecs: UNCOMPRESSED, SNAPPY, GZIP, ZSTD.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "format/parquet/compression.h"
#include "format/parquet/file_schema.h"
#include "format/parquet/metadata.h"

namespace icestream::format::parquet {

// Bytes a reader may hold for one row group's decoded columns; every allocation that
// input sizes drive is charged first, so that a small damaged file cannot claim
// gigabytes.
class ReadBudget {
 public:
  explicit ReadBudget(int64_t bytes) : left_(bytes) {}
  Status Take(uint64_t bytes, std::string_view what) {
    if (bytes > static_cast<uint64_t>(left_)) {
      return ResourceExhausted("parquet reader: " + std::string(what) +
                               " needs more than the read budget (" +
                               "ReaderOptions.max_row_group_bytes)");
    }
    left_ -= static_cast<int64_t>(bytes);
    return Status::OK();
  }
  int64_t left() const { return left_; }

 private:
  int64_t left_;
};

// The decoded contents of one column chunk.
struct DecodedColumn {
  // One entry per level slot; empty when the column's max level is 0 (all zero).
  std::vector<int16_t> rep;
  std::vector<int16_t> def;
  int64_t num_entries = 0;
  int64_t num_values = 0;   // entries with def == max_def
  int64_t num_records = 0;  // entries with rep == 0
  // The values, in order: fixed-width bytes (value_decoder.h) or BYTE_ARRAY views.
  std::string fixed;
  std::vector<std::string_view> bytes;
  // Decompressed pages and rebuilt values that `bytes` point into (a deque: elements
  // never move). Uncompressed pages are viewed in the file itself.
  std::deque<std::string> storage;
};

// Reads chunk `chunk` of leaf `leaf` from `file` (the whole file; chunks must lie in
// [4, footer_start)). Errors: kCorruption for damaged pages (with the leaf's path and
// the page's file offset), kUnimplemented for unsupported encodings or codecs,
// kResourceExhausted when the budget runs out. *out is unspecified after an error.
Status ReadColumnChunk(std::string_view file, int64_t footer_start, const ColumnChunk& chunk,
                       const SourceLeaf& leaf, bool verify_crc, Decompressor* decompressor,
                       ReadBudget* budget, DecodedColumn* out);

}  // namespace icestream::format::parquet
