// How deeply JSON text nests and how many values it holds, found without parsing it: the
// guards in front of every parser of untrusted JSON (nlohmann's parser is iterative, but
// dumping, copying and the walkers of what it builds recurse once per level; and a tree
// costs tens of bytes per value, several times the text).
#pragma once

#include <cstddef>
#include <string_view>

namespace icestream {

// The deepest nesting of arrays and objects in `text` (brackets outside strings), or
// limit + 1 as soon as it exceeds `limit`. Does not validate the JSON.
size_t JsonNestingDepth(std::string_view text, size_t limit);

// A bound on the number of values in `text`: separators and openings outside strings,
// counted up to limit + 1 (one linear pass, no allocation). Does not validate the JSON.
size_t JsonValueBound(std::string_view text, size_t limit);

}  // namespace icestream
