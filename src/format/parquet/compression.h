// Page compression codecs with the exact framing Parquet readers expect
// (parquet-format Compression.md): SNAPPY = one raw snappy block, GZIP = one gzip
// member (RFC 1952), ZSTD = one zstd frame with the content size. The codecs themselves
// are the compression module's (compression/compression.h); this maps Parquet's numbers.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "format/parquet/types.h"

namespace icestream::compression {
class Decompressor;
}

namespace icestream::format::parquet {

// Stateful compressor (keeps its library context between pages). Not thread-safe; use
// one per thread.
class Compressor {
 public:
  virtual ~Compressor() = default;
  // Appends the compressed form of `input` to *out.
  virtual Status Compress(std::string_view input, std::string* out) = 0;
};

// `level` 0 means the codec's default (zstd: 3, gzip: 6); ignored by snappy.
// kUncompressed returns a compressor that copies.
Result<std::unique_ptr<Compressor>> MakeCompressor(Codec codec, int level = 0);

// Decompression of pages for the reader. Keeps its library context between pages. Not
// thread-safe; use one per thread.
class Decompressor {
 public:
  Decompressor();
  ~Decompressor();
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;

  // Replaces *out with the decompressed `input`, which must be exactly `expected_size`
  // bytes (the page header's uncompressed size). The caller bounds expected_size; a
  // block that would expand beyond it is refused, never written past. Errors:
  // kCorruption (damaged block, size mismatch), kUnimplemented (LZO, BROTLI, LZ4,
  // LZ4_RAW). *out is unspecified after an error.
  Status Decompress(Codec codec, std::string_view input, size_t expected_size, std::string* out);

 private:
  std::unique_ptr<compression::Decompressor> d_;
};

// One-shot decompression, for tests and self-checks; `expected_size` is the uncompressed size
// recorded in the page header.
Result<std::string> Decompress(Codec codec, std::string_view input, size_t expected_size);

}  // namespace icestream::format::parquet
