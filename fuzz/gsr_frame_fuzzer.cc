// Fuzzes the Glue Schema Registry frame parser (delivery/table/gsr_frame.h), which reads the
// producer's record bytes. Invariants: no crash; a parsed frame's raw payload is the tail of
// the input after the 18-byte header; an inflated payload never exceeds the limit; what
// parses also looks framed.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "delivery/table/gsr_frame.h"

using namespace icestream::delivery::table;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  constexpr size_t kLimit = 1 << 16;  // small, so that the limit is reached too
  auto frame = ParseGsrFrame(in, kLimit);
  if (!frame.ok()) return 0;
  if (!LooksGsrFramed(in)) std::abort();
  if (frame->raw.data() != in.data() + kGsrHeaderSize ||
      frame->raw.size() != size - kGsrHeaderSize) {
    std::abort();
  }
  if (frame->compressed && frame->inflated.size() > kLimit) std::abort();
  if (frame->schema_version_id.size() != 36) std::abort();
  return 0;
}
