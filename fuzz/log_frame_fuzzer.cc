// Fuzzes the shard-log readers of untrusted bytes (log/format.h): frame parsing, the
// segment header and the sparse index. Invariants: no crash; a frame that parses is
// self-consistent (sizes add up, within the input).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "log/format.h"

using namespace icestream::log;

namespace {
void ParseFrames(std::string_view in) {
  size_t at = 0;
  while (at < in.size()) {
    FrameView f;
    if (ParseFrame(in.substr(at), &f) != FrameParse::kOk) break;
    if (f.frame_size < kFrameHeaderSize || at + f.frame_size > in.size() ||
        f.frame_size != kFrameHeaderSize + f.partition_key.size() + f.data.size()) {
      std::abort();
    }
    at += f.frame_size;
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  ParseFrames(in);
  // A whole segment file: header, then frames.
  if (in.size() > kSegmentHeaderSize) ParseFrames(in.substr(kSegmentHeaderSize));
  (void)DecodeSegmentHeader(in);
  auto idx = DecodeIndex(in);
  if (idx.ok() && idx->entries.size() * kIndexEntrySize > in.size()) std::abort();
  return 0;
}
