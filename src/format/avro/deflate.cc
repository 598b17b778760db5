// zlib deflate/inflate with size limits.
#include "format/avro/deflate.h"

#include <zlib.h>

namespace icestream::format::avro {

Status DeflateRaw(std::string_view in, int level, std::string* out) {
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Internal("deflateInit2 failed");
  }
  size_t start = out->size();
  out->resize(start + deflateBound(&zs, static_cast<uLong>(in.size())) + 16);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out->data() + start);
  zs.avail_out = static_cast<uInt>(out->size() - start);
  int rc = deflate(&zs, Z_FINISH);
  size_t produced = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return Internal("deflate did not finish");
  out->resize(start + produced);
  return Status::OK();
}

Status Inflate(std::string_view in, int window_bits, size_t max_out, std::string* out) {
  z_stream zs{};
  if (inflateInit2(&zs, window_bits) != Z_OK) return Internal("inflateInit2 failed");
  out->clear();
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  char buf[64 << 10];
  int rc = Z_OK;
  Status st;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      st = Corruption("compressed data does not inflate");
      break;
    }
    out->append(buf, sizeof buf - zs.avail_out);
    if (out->size() > max_out) {
      st = Corruption("compressed data inflates beyond the size limit");
      break;
    }
    if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
      st = Corruption("compressed data is truncated");
      break;
    }
  }
  inflateEnd(&zs);
  return st;
}

}  // namespace icestream::format::avro
