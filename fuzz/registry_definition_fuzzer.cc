// Fuzzes the schema registry's definition checks and compatibility rules (definitions
// come from Glue API callers). The first byte picks the data format; the rest is split
// at the first NUL into a new and an old definition. Invariants: no crash; a
// definition is always compatible with itself.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "registry/compatibility.h"
#include "registry/definition.h"

using namespace icestream;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  auto format = static_cast<registry::DataFormat>(data[0] % 3);
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  size_t nul = rest.find('\0');
  std::string_view a = rest.substr(0, nul);
  std::string_view b = nul == std::string_view::npos ? a : rest.substr(nul + 1);
  bool a_ok = registry::CheckDefinition(format, a).ok();
  bool b_ok = registry::CheckDefinition(format, b).ok();
  if (a_ok) {
    (void)registry::CanonicalDefinition(format, a);
    if (!registry::Incompatibility(format, registry::Compatibility::kFull, a, a).empty()) std::abort();
  }
  if (a_ok && b_ok) {
    (void)registry::Incompatibility(format, registry::Compatibility::kFullAll, a, b);
  }
  return 0;
}
