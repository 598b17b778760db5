// The console's static files (index.html, JavaScript modules, CSS), compiled into the
// binary from src/console/assets/ by embed_assets.cmake.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace icestream::console {

struct Asset {
  std::string_view path;          // relative to assets/, e.g. "app.js", "pages/stream.js"
  std::string_view content_type;  // "text/javascript; charset=utf-8"
  std::string_view etag;          // quoted, from the file's SHA-256
  const char* data;
  size_t size;

  std::string_view bytes() const { return {data, size}; }
};

// Every asset, by path.
const std::vector<Asset>& Assets();
// nullptr when there is no such asset.
const Asset* FindAsset(std::string_view path);

}  // namespace icestream::console
