// GSR wire header parsing and zlib inflation.
#include "delivery/table/gsr_frame.h"

#include <fmt/format.h>
#include <zlib.h>

namespace icestream::delivery::table {

namespace {

constexpr unsigned char kHeaderVersion = 0x03;
constexpr unsigned char kNone = 0x00;
constexpr unsigned char kZlib = 0x05;

std::string UuidText(const unsigned char* b) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s.push_back(hex[b[i] >> 4]);
    s.push_back(hex[b[i] & 15]);
  }
  return s;
}

Status Inflate(std::string_view in, size_t max_out, std::string* out) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return Internal("zlib inflateInit failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  out->clear();
  char buf[64 << 10];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      return InvalidArgument(
          fmt::format("the zlib payload does not inflate ({})", z.msg ? z.msg : "truncated"));
    }
    out->append(buf, sizeof buf - z.avail_out);
    if (out->size() > max_out) {
      inflateEnd(&z);
      return InvalidArgument(fmt::format("the inflated payload exceeds {} bytes", max_out));
    }
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      return InvalidArgument("the zlib payload is truncated");
    }
  }
  bool trailing = z.avail_in != 0;
  inflateEnd(&z);
  if (trailing) return InvalidArgument("bytes follow the zlib payload");
  return Status::OK();
}

}  // namespace

bool LooksGsrFramed(std::string_view data) {
  return data.size() >= kGsrHeaderSize && static_cast<unsigned char>(data[0]) == kHeaderVersion &&
         (static_cast<unsigned char>(data[1]) == kNone ||
          static_cast<unsigned char>(data[1]) == kZlib);
}

Result<GsrFrame> ParseGsrFrame(std::string_view data, size_t max_payload) {
  if (data.empty() || static_cast<unsigned char>(data[0]) != kHeaderVersion) {
    return InvalidArgument(
        "the record does not start with the Glue Schema Registry header (version byte 0x03); it "
        "was not written "
        "by the GSR serializer");
  }
  if (data.size() < kGsrHeaderSize) {
    return InvalidArgument(
        fmt::format("the record is {} bytes, shorter than the {}-byte Glue Schema Registry header",
                    data.size(), kGsrHeaderSize));
  }
  auto compression = static_cast<unsigned char>(data[1]);
  if (compression != kNone && compression != kZlib) {
    return InvalidArgument(
        fmt::format("unknown Glue Schema Registry compression byte 0x{:02x}", compression));
  }
  GsrFrame f;
  f.schema_version_id = UuidText(reinterpret_cast<const unsigned char*>(data.data()) + 2);
  f.raw = data.substr(kGsrHeaderSize);
  if (compression == kZlib) {
    f.compressed = true;
    RETURN_IF_ERROR(Inflate(f.raw, max_payload, &f.inflated));
  }
  return f;
}

}  // namespace icestream::delivery::table
