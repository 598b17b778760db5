// Avro object container files (Avro specification, "Object Container Files"):
//
//   +------------+---------------------------------------+----------+
//   | "Obj" 0x01 | metadata: map<bytes> (avro.schema, …) | sync(16) |   header
//   +------------+---------------------------------------+----------+
//   | long count | long size | size bytes (codec-compressed) | sync(16) |   block × n
//   +------------+-----------+-------------------------------+--------+
//
// The writer takes the schema as JSON text and copies it verbatim into `avro.schema`,
// so attributes that schema libraries drop (Iceberg's `field-id`, `element-id`,
// `logicalType`: formats.md §B.3) survive. Values are encoded by the caller with the
// Put* functions of encoding.h, one datum at a time.
//
// Codecs: writing null and deflate (raw RFC 1951, no zlib header); reading also snappy
// (raw block + big-endian CRC-32 of the uncompressed data) and zstandard.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "format/avro/datum.h"
#include "format/avro/schema.h"

namespace icestream::format::avro {

enum class Codec : uint8_t { kNull, kDeflate, kSnappy, kZstandard };

std::string_view CodecName(Codec codec);

struct ContainerWriterOptions {
  Codec codec = Codec::kDeflate;
  int deflate_level = 6;
  // A block is closed once its uncompressed size reaches this many bytes.
  size_t block_bytes = 64 << 10;
  // User metadata (Iceberg puts its keys here); "avro." keys are reserved.
  std::vector<std::pair<std::string, std::string>> metadata;
  // Sync marker; random when empty. Tests pass a fixed one for byte-exact output.
  std::string sync_marker;
};

// Builds a whole container file in memory. Not thread-safe.
class ContainerWriter {
 public:
  // Fails with kInvalidArgument for a reserved metadata key, a sync marker that is not
  // 16 bytes or a codec that cannot be written.
  static Result<std::unique_ptr<ContainerWriter>> Make(std::string schema_json,
                                                       ContainerWriterOptions options);

  // Buffer for the next datum: append its encoding, then call EndDatum().
  std::string* datum() { return &block_; }
  Status EndDatum();
  int64_t count() const { return total_count_; }

  // Writes the last block and returns the file bytes. The writer is spent afterwards.
  Result<std::string> Finish();

 private:
  ContainerWriter(std::string schema_json, ContainerWriterOptions options);
  Status FlushBlock();

  ContainerWriterOptions options_;
  std::string out_;
  std::string block_;
  int64_t block_count_ = 0;
  int64_t total_count_ = 0;
  bool finished_ = false;
};

struct ContainerLimits {
  // A block that decompresses to more than this is refused (zip bombs).
  size_t max_block_bytes = 256 << 20;
  DecodeLimits decode;
};

// Reads a container file held in memory. The caller keeps `file` alive as long as the
// reader. Not thread-safe.
class ContainerReader {
 public:
  // Parses the header. Errors: kCorruption for a bad magic, truncated header, unknown
  // codec or a schema that does not parse.
  static Result<std::unique_ptr<ContainerReader>> Open(std::string_view file,
                                                       ContainerLimits limits = {});

  const Schema& schema() const { return *schema_; }
  const std::string& schema_json() const { return schema_json_; }
  Codec codec() const { return codec_; }
  // User and reserved metadata, as stored (values are raw bytes).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Metadata value or "" when absent.
  std::string Meta(std::string_view key) const;

  // Decodes the next datum into *out; returns false at the end of the file.
  // Errors: kCorruption (bad sync marker, truncated block, decompression failure,
  // block data that does not match its count).
  Result<bool> Next(Datum* out);

 private:
  ContainerReader(std::string_view file, ContainerLimits limits)
      : file_(file), limits_(limits) {}
  Status ReadHeader();
  Status LoadBlock();

  std::string_view file_;
  ContainerLimits limits_;
  size_t pos_ = 0;
  std::shared_ptr<const Schema> schema_;
  std::string schema_json_;
  Codec codec_ = Codec::kNull;
  std::map<std::string, std::string> metadata_;
  std::string sync_;
  std::string block_storage_;   // decompressed block
  std::string_view block_;      // current block data
  Decoder block_decoder_{std::string_view()};
  int64_t block_remaining_ = 0;
};

}  // namespace icestream::format::avro
