// Fuzzes the output key template parser and renderer (delivery/s3/key_template.h): any
// bytes as a template under each compression. Invariants: no crash; an accepted template
// renders keys that never start with '/', never contain "//" or a ".." or "." segment, and
// carry the suffix right before the extension.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "delivery/s3/key_template.h"

using namespace icestream::delivery;
using namespace icestream::delivery::s3;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  for (auto c : {Compression::kNone, Compression::kGzip, Compression::kZstd}) {
    auto t = KeyTemplate::Parse(text, c);
    if (!t.ok()) continue;
    KeyContext ctx{"chan.name_1", "0d3c-id", "stream-x"};
    std::string suffix = ObjectSuffix(42, "shardId-000000000007", ctx.channel_id, "4999");
    std::string key = t->RenderWithSuffix(ctx, 1788431399500, suffix);
    if (key.empty() || key.front() == '/' || key.find("//") != std::string::npos ||
        key.find("/../") != std::string::npos || key.find("/./") != std::string::npos) {
      std::abort();
    }
    if (key.find(suffix) == std::string::npos) std::abort();
    std::string plain = t->Render(ctx, 1788431399500);
    if (plain.size() + suffix.size() != key.size()) std::abort();
  }
  return 0;
}
