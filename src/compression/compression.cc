// One-shot compression and bounded decompression over zlib, zstd and snappy.
#include "compression/compression.h"

#include <snappy.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <climits>
#include <limits>

namespace icestream::compression {
namespace {

// zlib counts in uInt: larger inputs are fed in pieces of at most this.
constexpr size_t kZlibPiece = size_t{1} << 30;

int WindowBits(Codec codec) {
  switch (codec) {
    case Codec::kDeflate:
      return -MAX_WBITS;  // raw: no header, no checksum
    case Codec::kGzip:
      return MAX_WBITS + 16;
    default:
      return MAX_WBITS;  // zlib
  }
}

bool IsZlibFamily(Codec codec) {
  return codec == Codec::kDeflate || codec == Codec::kZlib || codec == Codec::kGzip;
}

Status DecodeFailure(Codec codec, DecodeError kind, std::string_view what) {
  return WithSubcode(Corruption(std::string(CodecName(codec)) + ": " + std::string(what)), kind);
}

Status TooLarge(Codec codec, size_t max_output) {
  return DecodeFailure(codec, DecodeError::kTooLarge,
                       "the data expands beyond " + std::to_string(max_output) + " bytes");
}

Status SizeMismatch(Codec codec, size_t got, size_t want) {
  return DecodeFailure(codec, DecodeError::kSizeMismatch,
                       "the data expands to " + std::string(got == SIZE_MAX ? "more than " : "") +
                           std::to_string(got == SIZE_MAX ? want : got) + " bytes where " +
                           std::to_string(want) + " were recorded");
}

Status CheckLevel(Codec codec, int level) {
  if (level == 0) return Status::OK();
  if (IsZlibFamily(codec) && (level < 1 || level > 9)) {
    return InvalidArgument(std::string(CodecName(codec)) + " level must be 1 to 9, not " +
                           std::to_string(level));
  }
  if (codec == Codec::kZstd && (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())) {
    return InvalidArgument("zstd level must be " + std::to_string(ZSTD_minCLevel()) + " to " +
                           std::to_string(ZSTD_maxCLevel()) + ", not " + std::to_string(level));
  }
  return Status::OK();
}

Status Deflate(Codec codec, int level, std::string_view input, std::string* out) {
  z_stream zs{};
  if (deflateInit2(&zs, level == 0 ? 6 : level, Z_DEFLATED, WindowBits(codec), 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    return Internal(std::string(CodecName(codec)) + ": deflateInit2 failed");
  }
  const size_t start = out->size();
  // deflateBound covers the wrapper of this stream; a little slack for the gzip header.
  out->resize(start + deflateBound(&zs, static_cast<uLong>(input.size())) + 32);
  size_t fed = 0;
  int rc = Z_OK;
  zs.next_out = reinterpret_cast<Bytef*>(out->data() + start);
  zs.avail_out = static_cast<uInt>(std::min(out->size() - start, kZlibPiece));
  while (rc == Z_OK) {
    if (zs.avail_in == 0 && fed < input.size()) {
      size_t n = std::min(input.size() - fed, kZlibPiece);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data() + fed));
      zs.avail_in = static_cast<uInt>(n);
      fed += n;
    }
    if (zs.avail_out == 0) {
      size_t done = static_cast<size_t>(reinterpret_cast<char*>(zs.next_out) - out->data());
      zs.avail_out = static_cast<uInt>(std::min(out->size() - done, kZlibPiece));
    }
    rc = deflate(&zs, fed == input.size() ? Z_FINISH : Z_NO_FLUSH);
  }
  size_t produced = static_cast<size_t>(reinterpret_cast<char*>(zs.next_out) - out->data()) - start;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    out->resize(start);
    return Internal(std::string(CodecName(codec)) + ": deflate did not finish");
  }
  out->resize(start + produced);
  return Status::OK();
}

}  // namespace

std::string_view CodecName(Codec codec) {
  switch (codec) {
    case Codec::kNone:
      return "none";
    case Codec::kDeflate:
      return "deflate";
    case Codec::kZlib:
      return "zlib";
    case Codec::kGzip:
      return "gzip";
    case Codec::kZstd:
      return "zstd";
    case Codec::kSnappy:
      return "snappy";
  }
  return "?";
}

Result<std::unique_ptr<Compressor>> Compressor::Make(Codec codec, CompressOptions options) {
  RETURN_IF_ERROR(CheckLevel(codec, options.level));
  std::unique_ptr<Compressor> c(new Compressor(codec, options));
  if (codec == Codec::kZstd) {
    auto* ctx = ZSTD_createCCtx();
    if (ctx == nullptr) return Internal("zstd: ZSTD_createCCtx failed");
    c->zstd_ = ctx;
    ZSTD_CCtx_setParameter(ctx, ZSTD_c_compressionLevel, options.level == 0 ? 3 : options.level);
    ZSTD_CCtx_setParameter(ctx, ZSTD_c_checksumFlag, options.zstd_checksum ? 1 : 0);
    ZSTD_CCtx_setParameter(ctx, ZSTD_c_contentSizeFlag, 1);  // readers check it (DuckDB)
  }
  return c;
}

Compressor::~Compressor() {
  if (zstd_ != nullptr) ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(zstd_));
}

Status Compressor::Compress(std::string_view input, std::string* out) {
  switch (codec_) {
    case Codec::kNone:
      out->append(input);
      return Status::OK();
    case Codec::kSnappy: {
      const size_t start = out->size();
      out->resize(start + snappy::MaxCompressedLength(input.size()));
      size_t n = 0;
      snappy::RawCompress(input.data(), input.size(), out->data() + start, &n);
      out->resize(start + n);
      return Status::OK();
    }
    case Codec::kZstd: {
      const size_t start = out->size();
      out->resize(start + ZSTD_compressBound(input.size()));
      size_t n = ZSTD_compress2(static_cast<ZSTD_CCtx*>(zstd_), out->data() + start,
                                out->size() - start, input.data(), input.size());
      if (ZSTD_isError(n)) {
        out->resize(start);
        return Internal(std::string("zstd: ") + ZSTD_getErrorName(n));
      }
      out->resize(start + n);
      return Status::OK();
    }
    case Codec::kDeflate:
    case Codec::kZlib:
    case Codec::kGzip:
      return Deflate(codec_, options_.level, input, out);
  }
  return Internal("unknown codec");
}

Decompressor::~Decompressor() {
  if (zstd_ != nullptr) ZSTD_freeDCtx(static_cast<ZSTD_DCtx*>(zstd_));
}

Status Decompressor::Decompress(Codec codec, std::string_view input, size_t max_output,
                                std::string* out) {
  out->clear();
  switch (codec) {
    case Codec::kNone:
      if (input.size() > max_output) return TooLarge(codec, max_output);
      out->assign(input);
      return Status::OK();
    case Codec::kSnappy: {
      // The preamble states the length: checked, and the whole block validated without
      // writing, before anything is allocated.
      size_t n = 0;
      if (!snappy::GetUncompressedLength(input.data(), input.size(), &n)) {
        return DecodeFailure(codec, DecodeError::kDamaged, "the block has no valid length");
      }
      if (n > max_output) return TooLarge(codec, max_output);
      if (!snappy::IsValidCompressedBuffer(input.data(), input.size())) {
        return DecodeFailure(codec, DecodeError::kDamaged, "the block is damaged");
      }
      out->resize(n);
      if (!snappy::RawUncompress(input.data(), input.size(), out->data())) {
        return DecodeFailure(codec, DecodeError::kDamaged, "the block is damaged");
      }
      return Status::OK();
    }
    case Codec::kZstd:
      return Unzstd(input, max_output, std::nullopt, out);
    case Codec::kDeflate:
    case Codec::kZlib:
    case Codec::kGzip:
      return Inflate(WindowBits(codec), input, max_output, std::nullopt, out);
  }
  return Internal("unknown codec");
}

Status Decompressor::DecompressExact(Codec codec, std::string_view input, size_t size,
                                     std::string* out) {
  switch (codec) {
    case Codec::kNone:
    case Codec::kSnappy: {
      Status st = Decompress(codec, input, size, out);
      if (st.Is(DecodeError::kTooLarge)) return SizeMismatch(codec, SIZE_MAX, size);
      RETURN_IF_ERROR(st);
      if (out->size() != size) return SizeMismatch(codec, out->size(), size);
      return Status::OK();
    }
    case Codec::kZstd:
      return Unzstd(input, size, size, out);
    case Codec::kDeflate:
    case Codec::kZlib:
    case Codec::kGzip:
      return Inflate(WindowBits(codec), input, size, size, out);
  }
  return Internal("unknown codec");
}

Status Decompressor::Inflate(int window_bits, std::string_view input, size_t max_output,
                             std::optional<size_t> exact, std::string* out) {
  const Codec codec =
      window_bits < 0 ? Codec::kDeflate : (window_bits > MAX_WBITS ? Codec::kGzip : Codec::kZlib);
  out->clear();
  // Deflate expands at most 1032:1 (RFC 1951 §3.2.5's longest match per 2 bits or so): a
  // recorded size beyond that is a damaged header, refused before allocating it.
  if (exact && *exact > input.size() * 1032 + 1024) {
    return SizeMismatch(codec, input.size() * 1032 + 1024, *exact);
  }
  z_stream zs{};
  if (inflateInit2(&zs, window_bits) != Z_OK) {
    return Internal(std::string(CodecName(codec)) + ": inflateInit2 failed");
  }
  // Output goes straight into *out, grown geometrically up to max_output + 1 (one byte more
  // than allowed tells "too large" from "exactly full").
  const size_t cap = max_output == SIZE_MAX ? max_output : max_output + 1;
  out->resize(exact ? std::min(cap, *exact + 1)
                    : std::min(cap, std::max<size_t>(input.size() * 4, 4096)));
  size_t fed = 0, produced = 0;
  int rc = Z_OK;
  Status st;
  while (true) {
    if (zs.avail_in == 0 && fed < input.size()) {
      size_t n = std::min(input.size() - fed, kZlibPiece);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data() + fed));
      zs.avail_in = static_cast<uInt>(n);
      fed += n;
    }
    if (produced == out->size()) {
      if (out->size() >= cap) {
        st = exact ? SizeMismatch(codec, SIZE_MAX, *exact) : TooLarge(codec, max_output);
        break;
      }
      out->resize(std::min(cap, out->size() * 2));
    }
    zs.next_out = reinterpret_cast<Bytef*>(out->data() + produced);
    zs.avail_out = static_cast<uInt>(std::min(out->size() - produced, kZlibPiece));
    const uInt before = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    produced += before - zs.avail_out;
    if (rc == Z_STREAM_END) break;
    if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_STREAM_ERROR || rc == Z_MEM_ERROR) {
      st = DecodeFailure(codec, DecodeError::kDamaged,
                         std::string("the data does not inflate (") +
                             (zs.msg != nullptr ? zs.msg : "invalid stream") + ")");
      break;
    }
    // inflate stops short of the end only when the output is full or the input is used up:
    // with room left and nothing more to give, the stream ends before its end marker.
    if (zs.avail_out > 0 && zs.avail_in == 0 && fed == input.size()) {
      st = DecodeFailure(codec, DecodeError::kTruncated, "the data is truncated");
      break;
    }
  }
  const bool trailing = st.ok() && (zs.avail_in != 0 || fed < input.size());
  inflateEnd(&zs);
  RETURN_IF_ERROR(st);
  if (produced > max_output) {
    return exact ? SizeMismatch(codec, SIZE_MAX, *exact) : TooLarge(codec, max_output);
  }
  out->resize(produced);
  if (trailing) {
    return DecodeFailure(codec, DecodeError::kTrailingBytes, "bytes follow the end of the data");
  }
  if (exact && produced != *exact) return SizeMismatch(codec, produced, *exact);
  return Status::OK();
}

Status Decompressor::Unzstd(std::string_view input, size_t max_output, std::optional<size_t> exact,
                            std::string* out) {
  constexpr Codec codec = Codec::kZstd;
  out->clear();
  if (zstd_ == nullptr) zstd_ = ZSTD_createDCtx();
  if (zstd_ == nullptr) return Internal("zstd: ZSTD_createDCtx failed");
  auto* ctx = static_cast<ZSTD_DCtx*>(zstd_);
  // The frame's extent first: a damaged or truncated frame, or bytes after it, are refused
  // before anything is allocated.
  const size_t frame = ZSTD_findFrameCompressedSize(input.data(), input.size());
  if (ZSTD_isError(frame)) {
    if (ZSTD_getErrorCode(frame) == ZSTD_error_srcSize_wrong) {
      return DecodeFailure(codec, DecodeError::kTruncated, "the frame is truncated");
    }
    return DecodeFailure(codec, DecodeError::kDamaged,
                         std::string("not a zstd frame (") + ZSTD_getErrorName(frame) + ")");
  }
  if (frame != input.size()) {
    return DecodeFailure(codec, DecodeError::kTrailingBytes, "bytes follow the frame");
  }
  const unsigned long long stated = ZSTD_getFrameContentSize(input.data(), input.size());
  if (stated != ZSTD_CONTENTSIZE_UNKNOWN && stated != ZSTD_CONTENTSIZE_ERROR) {
    if (exact && stated != *exact) return SizeMismatch(codec, static_cast<size_t>(stated), *exact);
    if (stated > max_output) return TooLarge(codec, max_output);
    out->resize(static_cast<size_t>(stated));
    // The output buffer bounds what the frame may expand to.
    size_t n = ZSTD_decompressDCtx(ctx, out->data(), out->size(), input.data(), input.size());
    if (ZSTD_isError(n)) {
      return DecodeFailure(codec, DecodeError::kDamaged,
                           std::string("the frame is damaged (") + ZSTD_getErrorName(n) + ")");
    }
    if (n != stated) return SizeMismatch(codec, n, static_cast<size_t>(stated));
    return Status::OK();
  }
  // No content size in the frame: stream it out, never beyond the limit.
  ZSTD_DCtx_reset(ctx, ZSTD_reset_session_only);
  const size_t cap = max_output == SIZE_MAX ? max_output : max_output + 1;
  out->resize(std::min(cap, std::max<size_t>(input.size() * 4, 4096)));
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  size_t produced = 0;
  while (true) {
    if (produced == out->size()) {
      if (out->size() >= cap) {
        return exact ? SizeMismatch(codec, SIZE_MAX, *exact) : TooLarge(codec, max_output);
      }
      out->resize(std::min(cap, out->size() * 2));
    }
    ZSTD_outBuffer ob{out->data() + produced, out->size() - produced, 0};
    size_t rc = ZSTD_decompressStream(ctx, &ob, &in);
    produced += ob.pos;
    if (ZSTD_isError(rc)) {
      return DecodeFailure(codec, DecodeError::kDamaged,
                           std::string("the frame is damaged (") + ZSTD_getErrorName(rc) + ")");
    }
    if (rc == 0) break;  // frame complete
    if (in.pos == in.size && ob.pos < ob.size) {
      return DecodeFailure(codec, DecodeError::kTruncated, "the frame is truncated");
    }
  }
  if (produced > max_output) {
    return exact ? SizeMismatch(codec, SIZE_MAX, *exact) : TooLarge(codec, max_output);
  }
  out->resize(produced);
  if (exact && produced != *exact) return SizeMismatch(codec, produced, *exact);
  return Status::OK();
}

Status Compress(Codec codec, std::string_view input, std::string* out, CompressOptions options) {
  ASSIGN_OR_RETURN(auto c, Compressor::Make(codec, options));
  return c->Compress(input, out);
}

Status Decompress(Codec codec, std::string_view input, size_t max_output, std::string* out) {
  Decompressor d;
  return d.Decompress(codec, input, max_output, out);
}

}  // namespace icestream::compression
