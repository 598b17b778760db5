// Parquet page codecs over zstd, snappy and zlib.
#include "format/parquet/compression.h"

#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

namespace icestream::format::parquet {
namespace {

class CopyCompressor final : public Compressor {
 public:
  Status Compress(std::string_view input, std::string* out) override {
    out->append(input);
    return Status::OK();
  }
};

class SnappyCompressor final : public Compressor {
 public:
  Status Compress(std::string_view input, std::string* out) override {
    size_t start = out->size();
    out->resize(start + snappy::MaxCompressedLength(input.size()));
    size_t n = 0;
    snappy::RawCompress(input.data(), input.size(), out->data() + start, &n);
    out->resize(start + n);
    return Status::OK();
  }
};

class ZstdCompressor final : public Compressor {
 public:
  explicit ZstdCompressor(int level) : ctx_(ZSTD_createCCtx()), level_(level) {}
  ~ZstdCompressor() override { ZSTD_freeCCtx(ctx_); }
  Status Compress(std::string_view input, std::string* out) override {
    size_t start = out->size();
    out->resize(start + ZSTD_compressBound(input.size()));
    // ZSTD_compressCCtx writes the content size into the frame header, which
    // DuckDB checks against the page header.
    size_t n = ZSTD_compressCCtx(ctx_, out->data() + start, out->size() - start, input.data(),
                                 input.size(), level_);
    if (ZSTD_isError(n)) {
      out->resize(start);
      return Internal(std::string("zstd: ") + ZSTD_getErrorName(n));
    }
    out->resize(start + n);
    return Status::OK();
  }

 private:
  ZSTD_CCtx* ctx_;
  int level_;
};

class GzipCompressor final : public Compressor {
 public:
  explicit GzipCompressor(int level) : level_(level) {}
  Status Compress(std::string_view input, std::string* out) override {
    z_stream zs{};
    // windowBits 15 + 16: a gzip member (RFC 1952), not a zlib stream.
    if (deflateInit2(&zs, level_, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      return Internal("gzip: deflateInit2 failed");
    }
    size_t start = out->size();
    out->resize(start + deflateBound(&zs, input.size()) + 32);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
    zs.avail_in = static_cast<uInt>(input.size());
    zs.next_out = reinterpret_cast<Bytef*>(out->data() + start);
    zs.avail_out = static_cast<uInt>(out->size() - start);
    int rc = deflate(&zs, Z_FINISH);
    size_t n = zs.total_out;
    deflateEnd(&zs);
    if (rc != Z_STREAM_END) {
      out->resize(start);
      return Internal("gzip: deflate did not finish");
    }
    out->resize(start + n);
    return Status::OK();
  }

 private:
  int level_;
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
    case Codec::kZstd: return "zstd";
    case Codec::kSnappy: return "snappy";
    case Codec::kGzip: return "gzip";
    case Codec::kUncompressed: return "none";
    case Codec::kLzo: return "lzo";
    case Codec::kBrotli: return "brotli";
    case Codec::kLz4: return "lz4";
    case Codec::kLz4Raw: return "lz4_raw";
  }
  return "?";
}

Result<std::unique_ptr<Compressor>> MakeCompressor(Codec codec, int level) {
  switch (codec) {
    case Codec::kUncompressed: return std::unique_ptr<Compressor>(new CopyCompressor());
    case Codec::kSnappy: return std::unique_ptr<Compressor>(new SnappyCompressor());
    case Codec::kZstd:
      return std::unique_ptr<Compressor>(new ZstdCompressor(level == 0 ? 3 : level));
    case Codec::kGzip:
      return std::unique_ptr<Compressor>(new GzipCompressor(level == 0 ? 6 : level));
    default: break;
  }
  return InvalidArgument("unsupported codec " + std::string(CodecName(codec)));
}

Decompressor::~Decompressor() {
  if (zstd_ != nullptr) ZSTD_freeDCtx(static_cast<ZSTD_DCtx*>(zstd_));
}

Status Decompressor::Decompress(Codec codec, std::string_view input, size_t expected_size,
                                std::string* out) {
  out->clear();
  switch (codec) {
    case Codec::kUncompressed:
      if (input.size() != expected_size) {
        return Corruption("uncompressed page: stored " + std::to_string(input.size()) +
                          " bytes, header says " + std::to_string(expected_size));
      }
      out->assign(input);
      return Status::OK();
    case Codec::kSnappy: {
      // The preamble states the length; check it (and the whole block, without
      // writing) before allocating anything.
      size_t n = 0;
      if (!snappy::GetUncompressedLength(input.data(), input.size(), &n) || n != expected_size ||
          !snappy::IsValidCompressedBuffer(input.data(), input.size())) {
        return Corruption("snappy: bad block or length (expected " + std::to_string(expected_size) +
                          " bytes)");
      }
      out->resize(expected_size);
      if (!snappy::RawUncompress(input.data(), input.size(), out->data())) {
        return Corruption("snappy: bad block");
      }
      return Status::OK();
    }
    case Codec::kZstd: {
      if (zstd_ == nullptr) zstd_ = ZSTD_createDCtx();
      if (zstd_ == nullptr) return Internal("zstd: ZSTD_createDCtx failed");
      // A frame that states its size must state the page's; checked before allocating.
      const unsigned long long stated = ZSTD_getFrameContentSize(input.data(), input.size());
      if (stated == ZSTD_CONTENTSIZE_ERROR) return Corruption("zstd: not a zstd frame");
      if (stated != ZSTD_CONTENTSIZE_UNKNOWN && stated != expected_size) {
        return Corruption("zstd: frame of " + std::to_string(stated) + " bytes where the page header says " +
                          std::to_string(expected_size));
      }
      out->resize(expected_size);
      // The output buffer bounds what a frame may expand to.
      size_t n = ZSTD_decompressDCtx(static_cast<ZSTD_DCtx*>(zstd_), out->data(), out->size(),
                                     input.data(), input.size());
      if (ZSTD_isError(n) || n != expected_size) {
        return Corruption(std::string("zstd: ") +
                          (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "size differs from the header"));
      }
      return Status::OK();
    }
    case Codec::kGzip: {
      // Deflate expands at most ~1032:1; a larger claim is a damaged header.
      if (expected_size > input.size() * 1040 + 1024) {
        return Corruption("gzip: header claims " + std::to_string(expected_size) + " bytes from " +
                          std::to_string(input.size()));
      }
      out->resize(expected_size);
      z_stream zs{};
      if (inflateInit2(&zs, 15 + 16) != Z_OK) return Internal("inflateInit2");
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
      zs.avail_in = static_cast<uInt>(input.size());
      zs.next_out = reinterpret_cast<Bytef*>(out->data());
      zs.avail_out = static_cast<uInt>(out->size());
      int rc = inflate(&zs, Z_FINISH);
      size_t n = zs.total_out;
      inflateEnd(&zs);
      if (rc != Z_STREAM_END || n != expected_size) return Corruption("gzip: bad member");
      return Status::OK();
    }
    default: break;
  }
  return Unimplemented("codec " + std::string(CodecName(codec)) + " is not supported");
}

Result<std::string> Decompress(Codec codec, std::string_view input, size_t expected_size) {
  Decompressor d;
  std::string out;
  RETURN_IF_ERROR(d.Decompress(codec, input, expected_size, &out));
  return out;
}

}  // namespace icestream::format::parquet
