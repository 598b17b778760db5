// The S3 sink's whole-object compressors: the compression module's streaming compressors
// (compression/compression.h), writing into this object's output.
#include "delivery/s3/stream_compressor.h"

#include "compression/compression.h"

namespace icestream::delivery::s3 {
namespace {

class ModuleStream final : public StreamCompressor {
 public:
  Status Init(compression::Codec codec, compression::CompressOptions options) {
    ASSIGN_OR_RETURN(stream_, compression::StreamCompressor::Make(codec, &out_, options));
    return Status::OK();
  }
  Status Add(std::string_view data) override { return stream_->Add(data); }
  Status Finish() override { return stream_->Finish(); }

 private:
  std::unique_ptr<compression::StreamCompressor> stream_;
};

}  // namespace

Result<std::unique_ptr<StreamCompressor>> MakeStreamCompressor(Compression c, int level) {
  compression::Codec codec = compression::Codec::kNone;
  compression::CompressOptions options{.level = level};
  switch (c) {
    case Compression::kNone:
      break;
    // One RFC 1952 member with mtime 0: `gzip -d` reads it, and a replay gives the same bytes.
    case Compression::kGzip:
      codec = compression::Codec::kGzip;
      break;
    // One frame with its checksum: `zstd -d` reads and verifies it.
    case Compression::kZstd:
      codec = compression::Codec::kZstd;
      options.zstd_checksum = true;
      break;
    default:
      return Internal("unknown compression");
  }
  auto s = std::make_unique<ModuleStream>();
  RETURN_IF_ERROR(s->Init(codec, options));
  return std::unique_ptr<StreamCompressor>(std::move(s));
}

}  // namespace icestream::delivery::s3
