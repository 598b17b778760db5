// Whole-object compression for S3 delivery, fed record by record: GZIP (one RFC 1952
// member, `gzip -d` reads it) and ZSTD (one frame, `zstd -d` reads it). Output grows in
// memory; input is never held. Deterministic: the same input gives the same bytes.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "delivery/channel.h"

namespace icestream::delivery::s3 {

class StreamCompressor {
 public:
  virtual ~StreamCompressor() = default;
  virtual Status Add(std::string_view data) = 0;
  // Ends the stream; output() is then complete.
  virtual Status Finish() = 0;
  std::string& output() { return out_; }

 protected:
  std::string out_;
};

// level 0 = default (gzip 6, zstd 3). kNone copies.
Result<std::unique_ptr<StreamCompressor>> MakeStreamCompressor(Compression c, int level = 0);

}  // namespace icestream::delivery::s3
