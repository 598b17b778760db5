// zlib and zstd streaming compressors. Input is gathered into 1 MiB chunks before it
// reaches the codec (records are small; per-call codec overhead would dominate), and
// codec output goes through a fixed scratch buffer appended to the result.
#include "delivery/s3/stream_compressor.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>

namespace icestream::delivery::s3 {
namespace {

constexpr size_t kChunk = 1 << 20;

class CopyCompressor final : public StreamCompressor {
 public:
  Status Add(std::string_view d) override {
    out_.append(d);
    return Status::OK();
  }
  Status Finish() override { return Status::OK(); }
};

// Gathers input; subclasses compress one chunk at a time.
class ChunkedCompressor : public StreamCompressor {
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
  ChunkedCompressor() { pending_.reserve(kChunk + 4096); }
  virtual Status Compress(std::string_view in, bool last) = 0;
  std::string scratch_;

 private:
  std::string pending_;
};

class GzipCompressor final : public ChunkedCompressor {
 public:
  explicit GzipCompressor(int level) {
    // windowBits 15 + 16: a gzip header and trailer around the deflate stream. The header's
    // mtime stays 0, so output depends on the input only.
    ok_ = deflateInit2(&z_, level ? level : 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    scratch_.resize(256 << 10);
  }
  ~GzipCompressor() override { deflateEnd(&z_); }

 private:
  Status Compress(std::string_view in, bool last) override {
    if (!ok_) return Internal("deflateInit2 failed");
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    int flush = last ? Z_FINISH : Z_NO_FLUSH;
    int rc;
    do {
      z_.next_out = reinterpret_cast<Bytef*>(scratch_.data());
      z_.avail_out = static_cast<uInt>(scratch_.size());
      rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR) return Internal("deflate failed");
      out_.append(scratch_.data(), scratch_.size() - z_.avail_out);
    } while (z_.avail_in > 0 || (last && rc != Z_STREAM_END));
    return Status::OK();
  }
  z_stream z_{};
  bool ok_ = false;
};

class ZstdCompressor final : public ChunkedCompressor {
 public:
  explicit ZstdCompressor(int level) : ctx_(ZSTD_createCCtx()) {
    ZSTD_CCtx_setParameter(ctx_, ZSTD_c_compressionLevel, level ? level : 3);
    ZSTD_CCtx_setParameter(ctx_, ZSTD_c_checksumFlag, 1);
    scratch_.resize(ZSTD_CStreamOutSize());
  }
  ~ZstdCompressor() override { ZSTD_freeCCtx(ctx_); }

 private:
  Status Compress(std::string_view in, bool last) override {
    ZSTD_inBuffer ib{in.data(), in.size(), 0};
    ZSTD_EndDirective mode = last ? ZSTD_e_end : ZSTD_e_continue;
    size_t remaining;
    do {
      ZSTD_outBuffer ob{scratch_.data(), scratch_.size(), 0};
      remaining = ZSTD_compressStream2(ctx_, &ob, &ib, mode);
      if (ZSTD_isError(remaining)) return Internal(std::string("zstd: ") + ZSTD_getErrorName(remaining));
      out_.append(scratch_.data(), ob.pos);
    } while (ib.pos < ib.size || (last && remaining != 0));
    return Status::OK();
  }
  ZSTD_CCtx* ctx_;
};

}  // namespace

Result<std::unique_ptr<StreamCompressor>> MakeStreamCompressor(Compression c, int level) {
  switch (c) {
    case Compression::kNone: return std::unique_ptr<StreamCompressor>(new CopyCompressor());
    case Compression::kGzip: return std::unique_ptr<StreamCompressor>(new GzipCompressor(level));
    case Compression::kZstd: return std::unique_ptr<StreamCompressor>(new ZstdCompressor(level));
  }
  return Internal("unknown compression");
}

}  // namespace icestream::delivery::s3
