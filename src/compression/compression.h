// One module for every compressed byte stream icestream reads or writes: Parquet pages,
// Avro blocks, gzip'd Iceberg metadata, GSR record payloads and S3 objects.
//
// Codecs and their framing:
//   kDeflate  raw deflate (RFC 1951), no header or checksum: Avro's "deflate"
//   kZlib     a zlib stream (RFC 1950): GSR payloads (compression byte 0x05)
//   kGzip     one gzip member (RFC 1952), mtime 0: Parquet GZIP, S3 objects, *.gz.metadata.json
//   kZstd     one zstd frame (RFC 8878) stating its content size: Parquet ZSTD, Avro, S3
//   kSnappy   one raw snappy block (snappy's format_description.txt): Parquet SNAPPY, Avro
//             snappy (Avro adds its own CRC-32 after the block)
//   kNone     the bytes themselves
//
// Decompression is always bounded: the caller says how much output it accepts, and input
// that would expand beyond it is refused before it is written (a small record must not
// become gigabytes). Every decoding failure is kCorruption with a DecodeError subcode
// (common/status.h): callers that treat compressed input as user data (GSR records) map it
// to their own code by the subcode, never by the text.
//
// Compression is deterministic: the same input and options give the same bytes (S3 keys and
// batch replays depend on it).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace icestream::compression {

enum class Codec { kNone, kDeflate, kZlib, kGzip, kZstd, kSnappy };

// "none", "deflate", "zlib", "gzip", "zstd", "snappy".
std::string_view CodecName(Codec codec);

// Why compressed input did not decode (the subcode of the kCorruption status).
enum class DecodeError {
  kDamaged = 1,    // not a valid stream of the codec
  kTruncated,      // the stream ends before its end marker
  kTooLarge,       // it expands beyond the caller's limit
  kTrailingBytes,  // bytes follow the end of the stream
  kSizeMismatch,   // it does not expand to the size the container recorded
};

struct CompressOptions {
  // 0: the codec's default (deflate, zlib, gzip: 6; zstd: 3). Ignored by snappy and none.
  int level = 0;
  // zstd: end the frame with the XXH64 checksum of the content (`zstd -d` checks it).
  bool zstd_checksum = false;
};

// One-shot compression with a context kept between calls (zstd's is worth reusing across
// Parquet pages). Not thread-safe: one per thread.
class Compressor {
 public:
  // Errors: kInvalidArgument for a level the codec refuses.
  static Result<std::unique_ptr<Compressor>> Make(Codec codec, CompressOptions options = {});
  ~Compressor();
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;

  Codec codec() const { return codec_; }
  // Appends the compressed form of `input` to *out (*out keeps its size on error).
  Status Compress(std::string_view input, std::string* out);

 private:
  Compressor(Codec codec, CompressOptions options) : codec_(codec), options_(options) {}
  Codec codec_;
  CompressOptions options_;
  void* zstd_ = nullptr;  // ZSTD_CCtx
};

// One-shot decompression with a context kept between calls. Not thread-safe.
class Decompressor {
 public:
  Decompressor() = default;
  ~Decompressor();
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;

  // Replaces *out with the decompressed `input`, which must be one whole stream of `codec`
  // expanding to at most `max_output` bytes, with nothing after it. *out is unspecified
  // after an error. Errors: kCorruption with a DecodeError subcode.
  Status Decompress(Codec codec, std::string_view input, size_t max_output, std::string* out);
  // The same, for containers that record the uncompressed size (a Parquet page header): the
  // output must be exactly `size` bytes, allocated once (kSizeMismatch otherwise).
  Status DecompressExact(Codec codec, std::string_view input, size_t size, std::string* out);

 private:
  Status Inflate(int window_bits, std::string_view input, size_t max_output,
                 std::optional<size_t> exact, std::string* out);
  Status Unzstd(std::string_view input, size_t max_output, std::optional<size_t> exact,
                std::string* out);
  void* zstd_ = nullptr;  // ZSTD_DCtx
};

// Free-function forms with a context of their own.
Status Compress(Codec codec, std::string_view input, std::string* out,
                CompressOptions options = {});
Status Decompress(Codec codec, std::string_view input, size_t max_output, std::string* out);

// Streaming compression of one stream fed piece by piece (an S3 object built record by
// record): input is gathered into 1 MiB chunks before it reaches the codec, output is
// appended to the caller's string as it is produced. Deflate, zlib, gzip, zstd and none;
// snappy has no streaming form here (its framing format is not used by any reader we
// serve). Not thread-safe.
class StreamCompressor {
 public:
  // `out` receives the stream and must outlive the compressor. Errors: kInvalidArgument for
  // snappy or a level the codec refuses.
  static Result<std::unique_ptr<StreamCompressor>> Make(Codec codec, std::string* out,
                                                        CompressOptions options = {});
  virtual ~StreamCompressor() = default;
  // Adds input. Errors: kInternal if the codec fails (then the stream is unusable).
  virtual Status Add(std::string_view data) = 0;
  // Ends the stream; *out is then complete. Add must not be called afterwards.
  virtual Status Finish() = 0;
};

}  // namespace icestream::compression
