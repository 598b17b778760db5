// Parquet page codecs: the compression module (compression/compression.h) with Parquet's
// codec numbers.
#include "format/parquet/compression.h"

#include "compression/compression.h"

namespace icestream::format::parquet {
namespace {

// The module's codec for a Parquet codec that icestream reads and writes, or nullopt.
std::optional<compression::Codec> ModuleCodec(Codec codec) {
  switch (codec) {
    case Codec::kUncompressed:
      return compression::Codec::kNone;
    case Codec::kSnappy:
      return compression::Codec::kSnappy;
    case Codec::kGzip:
      return compression::Codec::kGzip;
    case Codec::kZstd:
      return compression::Codec::kZstd;
    default:
      return std::nullopt;
  }
}

class ModuleCompressor final : public Compressor {
 public:
  explicit ModuleCompressor(std::unique_ptr<compression::Compressor> c) : c_(std::move(c)) {}
  Status Compress(std::string_view input, std::string* out) override {
    return c_->Compress(input, out);
  }

 private:
  std::unique_ptr<compression::Compressor> c_;
};

}  // namespace

bool ParseCodec(std::string_view name, Codec* codec) {
  if (name == "zstd") {
    *codec = Codec::kZstd;
  } else if (name == "snappy") {
    *codec = Codec::kSnappy;
  } else if (name == "gzip") {
    *codec = Codec::kGzip;
  } else if (name == "none" || name == "uncompressed") {
    *codec = Codec::kUncompressed;
  } else {
    return false;
  }
  return true;
}

std::string_view CodecName(Codec codec) {
  switch (codec) {
    case Codec::kZstd:
      return "zstd";
    case Codec::kSnappy:
      return "snappy";
    case Codec::kGzip:
      return "gzip";
    case Codec::kUncompressed:
      return "none";
    case Codec::kLzo:
      return "lzo";
    case Codec::kBrotli:
      return "brotli";
    case Codec::kLz4:
      return "lz4";
    case Codec::kLz4Raw:
      return "lz4_raw";
  }
  return "?";
}

Result<std::unique_ptr<Compressor>> MakeCompressor(Codec codec, int level) {
  auto module_codec = ModuleCodec(codec);
  if (!module_codec) return InvalidArgument("unsupported codec " + std::string(CodecName(codec)));
  ASSIGN_OR_RETURN(auto c, compression::Compressor::Make(*module_codec, {.level = level}));
  return std::unique_ptr<Compressor>(new ModuleCompressor(std::move(c)));
}

Decompressor::Decompressor() : d_(std::make_unique<compression::Decompressor>()) {}
Decompressor::~Decompressor() = default;

Status Decompressor::Decompress(Codec codec, std::string_view input, size_t expected_size,
                                std::string* out) {
  auto module_codec = ModuleCodec(codec);
  if (!module_codec) {
    return Unimplemented("codec " + std::string(CodecName(codec)) + " is not supported");
  }
  return d_->DecompressExact(*module_codec, input, expected_size, out);
}

Result<std::string> Decompress(Codec codec, std::string_view input, size_t expected_size) {
  Decompressor d;
  std::string out;
  RETURN_IF_ERROR(d.Decompress(codec, input, expected_size, &out));
  return out;
}

}  // namespace icestream::format::parquet
