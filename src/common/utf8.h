// UTF-8 checks shared by request validation (lengths count code points) and delivery
// (STRING records must be valid UTF-8).
#pragma once

#include <cstddef>
#include <string_view>

namespace icestream {

// Byte offset of the first invalid sequence (overlongs, surrogates and code points above
// U+10FFFF included), or std::string_view::npos when `s` is valid UTF-8.
size_t FirstInvalidUtf8(std::string_view s);
inline bool IsValidUtf8(std::string_view s) { return FirstInvalidUtf8(s) == std::string_view::npos; }
// Number of code points (continuation bytes are not counted).
size_t Utf8Length(std::string_view s);

}  // namespace icestream
