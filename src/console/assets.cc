// Asset lookup.
#include "console/assets.h"

namespace icestream::console {

const Asset* FindAsset(std::string_view path) {
  for (const auto& a : Assets()) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

}  // namespace icestream::console
