// Streaming compressors (compression.h, StreamCompressor): zlib's deflate in its three
// framings and zstd's streaming API, fed in 1 MiB chunks.
#include <zlib.h>
#include <zstd.h>

#include <algorithm>

#include "compression/compression.h"

namespace icestream::compression {
namespace {

// Records are small; handing each to the codec would make per-call overhead dominate.
constexpr size_t kChunk = 1 << 20;

class CopyStream final : public StreamCompressor {
 public:
  explicit CopyStream(std::string* out) : out_(out) {}
  Status Add(std::string_view d) override {
    out_->append(d);
    return Status::OK();
  }
  Status Finish() override { return Status::OK(); }

 private:
  std::string* out_;
};

// Gathers input; subclasses compress one chunk at a time, appending to *out_.
class ChunkedStream : public StreamCompressor {
 public:
  Status Add(std::string_view d) override {
    pending_.append(d);
    if (pending_.size() < kChunk) return Status::OK();
    Status st = Compress(pending_, false);
    pending_.clear();
    return st;
  }
  Status Finish() override {
    Status st = Compress(pending_, true);
    pending_.clear();
    pending_.shrink_to_fit();
    return st;
  }

 protected:
  explicit ChunkedStream(std::string* out) : out_(out) { pending_.reserve(kChunk + 4096); }
  virtual Status Compress(std::string_view in, bool last) = 0;
  std::string* out_;
  std::string scratch_;

 private:
  std::string pending_;
};

class DeflateStream final : public ChunkedStream {
 public:
  DeflateStream(Codec codec, int level, std::string* out) : ChunkedStream(out), codec_(codec) {
    // The gzip header written by zlib has mtime 0 and no name: output depends on input only.
    int bits = codec == Codec::kDeflate ? -MAX_WBITS
                                        : (codec == Codec::kGzip ? MAX_WBITS + 16 : MAX_WBITS);
    ok_ =
        deflateInit2(&z_, level == 0 ? 6 : level, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    scratch_.resize(256 << 10);
  }
  ~DeflateStream() override {
    if (ok_) deflateEnd(&z_);
  }

 private:
  Status Compress(std::string_view in, bool last) override {
    if (!ok_) return Internal(std::string(CodecName(codec_)) + ": deflateInit2 failed");
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());  // at most one chunk
    const int flush = last ? Z_FINISH : Z_NO_FLUSH;
    int rc;
    do {
      z_.next_out = reinterpret_cast<Bytef*>(scratch_.data());
      z_.avail_out = static_cast<uInt>(scratch_.size());
      rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR)
        return Internal(std::string(CodecName(codec_)) + ": deflate failed");
      out_->append(scratch_.data(), scratch_.size() - z_.avail_out);
    } while (z_.avail_in > 0 || (last && rc != Z_STREAM_END));
    return Status::OK();
  }

  Codec codec_;
  z_stream z_{};
  bool ok_ = false;
};

class ZstdStream final : public ChunkedStream {
 public:
  ZstdStream(const CompressOptions& o, std::string* out)
      : ChunkedStream(out), ctx_(ZSTD_createCCtx()) {
    if (ctx_ != nullptr) {
      ZSTD_CCtx_setParameter(ctx_, ZSTD_c_compressionLevel, o.level == 0 ? 3 : o.level);
      ZSTD_CCtx_setParameter(ctx_, ZSTD_c_checksumFlag, o.zstd_checksum ? 1 : 0);
    }
    scratch_.resize(ZSTD_CStreamOutSize());
  }
  ~ZstdStream() override { ZSTD_freeCCtx(ctx_); }

 private:
  Status Compress(std::string_view in, bool last) override {
    if (ctx_ == nullptr) return Internal("zstd: ZSTD_createCCtx failed");
    ZSTD_inBuffer ib{in.data(), in.size(), 0};
    const ZSTD_EndDirective mode = last ? ZSTD_e_end : ZSTD_e_continue;
    size_t remaining;
    do {
      ZSTD_outBuffer ob{scratch_.data(), scratch_.size(), 0};
      remaining = ZSTD_compressStream2(ctx_, &ob, &ib, mode);
      if (ZSTD_isError(remaining))
        return Internal(std::string("zstd: ") + ZSTD_getErrorName(remaining));
      out_->append(scratch_.data(), ob.pos);
    } while (ib.pos < ib.size || (last && remaining != 0));
    return Status::OK();
  }

  ZSTD_CCtx* ctx_;
};

}  // namespace

Result<std::unique_ptr<StreamCompressor>> StreamCompressor::Make(Codec codec, std::string* out,
                                                                 CompressOptions options) {
  // The level check of the one-shot compressor, without keeping it.
  RETURN_IF_ERROR(Compressor::Make(codec, options).status());
  switch (codec) {
    case Codec::kNone:
      return std::unique_ptr<StreamCompressor>(new CopyStream(out));
    case Codec::kDeflate:
    case Codec::kZlib:
    case Codec::kGzip:
      return std::unique_ptr<StreamCompressor>(new DeflateStream(codec, options.level, out));
    case Codec::kZstd:
      return std::unique_ptr<StreamCompressor>(new ZstdStream(options, out));
    case Codec::kSnappy:
      break;
  }
  return InvalidArgument(std::string(CodecName(codec)) + " has no streaming form; use Compress");
}

}  // namespace icestream::compression
