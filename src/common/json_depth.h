// How deeply JSON text nests, found without parsing it: the guard in front of every
// parser of untrusted JSON (nlohmann's parser is iterative, but dumping, copying and the
// walkers of what it builds recurse once per level).
#pragma once

#include <cstddef>
#include <string_view>

namespace icestream {

// The deepest nesting of arrays and objects in `text` (brackets outside strings), or
// limit + 1 as soon as it exceeds `limit`. Does not validate the JSON.
size_t JsonNestingDepth(std::string_view text, size_t limit);

}  // namespace icestream
