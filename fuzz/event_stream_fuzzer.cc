// Fuzzes the event-stream message decoder (aws/event_stream.h), the counterpart of the
// SubscribeToShard encoder. Invariants: no crash; a message that decodes and carries only
// string headers re-encodes to the same bytes.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "aws/event_stream.h"

using namespace icestream;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  size_t used = 0;
  auto m = aws::DecodeEventMessage(in, &used);
  if (!m) return 0;
  if (used > in.size()) std::abort();
  // Re-encoding writes every header as a string: equal bytes only when the input's were.
  std::string again = aws::EncodeEventMessage(m->headers, m->payload);
  size_t used2 = 0;
  auto m2 = aws::DecodeEventMessage(again, &used2);
  if (!m2 || used2 != again.size() || m2->payload != m->payload || m2->headers != m->headers) {
    std::abort();
  }
  return 0;
}
