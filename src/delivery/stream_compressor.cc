// zlib and zstd streaming compressors.
#include "delivery/stream_compressor.h"

#include <zlib.h>
#include <zstd.h>

namespace icestream::delivery {
namespace {

class CopyCompressor final : public StreamCompressor {
 public:
  Status Add(std::string_view d) override {
    out_.append(d);
    return Status::OK();
  }
  Status Finish() override { return Status::OK(); }
};

class GzipCompressor final : public StreamCompressor {
 public:
  explicit GzipCompressor(int level) {
    // windowBits 15 + 16: a gzip header and trailer around the deflate stream. The header's
    // mtime stays 0, so output depends on the input only.
    ok_ = deflateInit2(&z_, level ? level : 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  }
  ~GzipCompressor() override { deflateEnd(&z_); }
  Status Add(std::string_view d) override { return Run(d, Z_NO_FLUSH); }
  Status Finish() override { return Run({}, Z_FINISH); }

 private:
  Status Run(std::string_view d, int flush) {
    if (!ok_) return Internal("deflateInit2 failed");
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(d.data()));
    z_.avail_in = static_cast<uInt>(d.size());
    int rc;
    do {
      size_t have = out_.size();
      size_t room = std::max<size_t>(64 << 10, d.size() / 2 + 1024);
      out_.resize(have + room);
      z_.next_out = reinterpret_cast<Bytef*>(out_.data() + have);
      z_.avail_out = static_cast<uInt>(room);
      rc = deflate(&z_, flush);
      out_.resize(have + room - z_.avail_out);
      if (rc == Z_STREAM_ERROR) return Internal("deflate failed");
    } while (z_.avail_in > 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
    return Status::OK();
  }
  z_stream z_{};
  bool ok_ = false;
};

class ZstdCompressor final : public StreamCompressor {
 public:
  explicit ZstdCompressor(int level) : ctx_(ZSTD_createCCtx()) {
    ZSTD_CCtx_setParameter(ctx_, ZSTD_c_compressionLevel, level ? level : 3);
    ZSTD_CCtx_setParameter(ctx_, ZSTD_c_checksumFlag, 1);
  }
  ~ZstdCompressor() override { ZSTD_freeCCtx(ctx_); }
  Status Add(std::string_view d) override { return Run(d, ZSTD_e_continue); }
  Status Finish() override { return Run({}, ZSTD_e_end); }

 private:
  Status Run(std::string_view d, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{d.data(), d.size(), 0};
    size_t remaining;
    do {
      size_t have = out_.size();
      size_t room = std::max<size_t>(ZSTD_CStreamOutSize(), d.size() / 2 + 1024);
      out_.resize(have + room);
      ZSTD_outBuffer ob{out_.data() + have, room, 0};
      remaining = ZSTD_compressStream2(ctx_, &ob, &in, mode);
      out_.resize(have + ob.pos);
      if (ZSTD_isError(remaining)) return Internal(std::string("zstd: ") + ZSTD_getErrorName(remaining));
    } while (in.pos < in.size || (mode == ZSTD_e_end && remaining != 0));
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

}  // namespace icestream::delivery
