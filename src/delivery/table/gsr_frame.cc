// GSR wire header parsing; the zlib payload inflates through the compression module.
#include "delivery/table/gsr_frame.h"

#include <fmt/format.h>

#include "compression/compression.h"

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

// The payload is the producer's data: a payload that does not inflate is a bad record
// (kInvalidArgument, to the DLQ), told in the record's terms.
Status Inflate(std::string_view in, size_t max_out, std::string* out) {
  Status st = compression::Decompress(compression::Codec::kZlib, in, max_out, out);
  if (st.ok()) return st;
  switch (st.subcode<compression::DecodeError>().value_or(compression::DecodeError::kDamaged)) {
    case compression::DecodeError::kTooLarge:
      return InvalidArgument(fmt::format("the inflated payload exceeds {} bytes", max_out));
    case compression::DecodeError::kTruncated:
      return InvalidArgument("the zlib payload is truncated");
    case compression::DecodeError::kTrailingBytes:
      return InvalidArgument("bytes follow the zlib payload");
    default:
      return InvalidArgument("the zlib payload does not inflate (" + st.message() + ")");
  }
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
