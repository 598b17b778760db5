// Records framed by the AWS Glue Schema Registry serializer (kds-delivery-spec.md §2.3):
//
//   +------+-------------+------------------------------+-------------------------+
//   | 0x03 | compression | schema version id (16 bytes, | payload (JSON text, or  |
//   |      | 0x00 | 0x05 | big-endian UUID)             | zlib stream when 0x05)  |
//   +------+-------------+------------------------------+-------------------------+
//     byte 0  byte 1        bytes 2..17                    bytes 18..
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace icestream::delivery::table {

inline constexpr size_t kGsrHeaderSize = 18;

struct GsrFrame {
  std::string schema_version_id;  // lowercase UUID text "xxxxxxxx-xxxx-..."
  bool compressed = false;
  std::string_view raw;  // the payload bytes in the record (compressed or not)
  std::string inflated;  // the inflated payload when compressed
  // The JSON payload.
  std::string_view payload() const { return compressed ? std::string_view(inflated) : raw; }
};

// Whether the bytes carry a GSR header (what a JSON channel refuses as
// DESERIALIZATION_ERROR): header version 3, a known compression byte, room for the id.
bool LooksGsrFramed(std::string_view data);

// Parses the header and inflates a zlib payload of at most `max_payload` bytes.
// kInvalidArgument with the reason for anything else (no header, another header
// version, an unknown compression byte, a payload that does not inflate or is too big).
// The frame's `raw` points into `data` (data must outlive it).
Result<GsrFrame> ParseGsrFrame(std::string_view data, size_t max_payload);

}  // namespace icestream::delivery::table
