// One scan over an ECMAScript pattern: groups balanced and nested at most 32 deep,
// quantifiers after something quantifiable with ordered bounds, classes terminated with
// ordered ranges, no trailing backslash.
#include "registry/ecma_pattern.h"

#include <cstdint>

namespace icestream::registry {

namespace {

// Reads `{n}`, `{n,}` or `{n,m}` at p[i] == '{'. Returns the length of the quantifier,
// or 0 when the brace is a literal (Annex B); *out_of_order when m < n.
size_t BraceQuantifier(std::string_view p, size_t i, bool* out_of_order) {
  size_t j = i + 1;
  auto number = [&](uint64_t* v) {
    size_t start = j;
    *v = 0;
    while (j < p.size() && p[j] >= '0' && p[j] <= '9') {
      if (*v < (uint64_t{1} << 40)) *v = *v * 10 + static_cast<uint64_t>(p[j] - '0');
      ++j;
    }
    return j > start;
  };
  uint64_t lo = 0, hi = 0;
  if (!number(&lo)) return 0;
  bool bounded = true;
  if (j < p.size() && p[j] == ',') {
    ++j;
    bounded = number(&hi);
  } else {
    hi = lo;
  }
  if (j >= p.size() || p[j] != '}') return 0;
  *out_of_order = bounded && hi < lo;
  return j + 1 - i;
}

// The single character a class atom at p[i] stands for (-1: a class escape such as \d,
// which cannot bound a range); *len gets its length.
int ClassAtom(std::string_view p, size_t i, size_t* len) {
  if (p[i] != '\\') {
    *len = 1;
    return static_cast<unsigned char>(p[i]);
  }
  if (i + 1 >= p.size()) {
    *len = 1;
    return -2;  // trailing backslash
  }
  *len = 2;
  switch (p[i + 1]) {
    case 'd':
    case 'D':
    case 'w':
    case 'W':
    case 's':
    case 'S':
      return -1;
    case 'n':
      return '\n';
    case 't':
      return '\t';
    case 'r':
      return '\r';
    case 'f':
      return '\f';
    case 'v':
      return '\v';
    case 'b':
      return '\b';
    default:
      return static_cast<unsigned char>(p[i + 1]);
  }
}

}  // namespace

std::string CheckEcmaPattern(std::string_view p) {
  if (p.size() > kMaxSchemaPatternBytes) {
    return "longer than " + std::to_string(kMaxSchemaPatternBytes) + " bytes";
  }
  size_t depth = 0;
  bool quantifiable = false;  // the previous token is an atom a quantifier may follow
  size_t i = 0;
  while (i < p.size()) {
    char c = p[i];
    switch (c) {
      case '\\':
        if (i + 1 >= p.size()) return "'\\' at the end";
        quantifiable = p[i + 1] != 'b' && p[i + 1] != 'B';
        i += 2;
        break;
      case '(': {
        if (++depth > kMaxSchemaPatternNesting) {
          return "groups nested more than " + std::to_string(kMaxSchemaPatternNesting) + " deep";
        }
        ++i;
        if (i < p.size() && p[i] == '?') {
          std::string_view rest = p.substr(i);
          if (rest.substr(0, 2) == "?:" || rest.substr(0, 2) == "?=" || rest.substr(0, 2) == "?!") {
            i += 2;
          } else if (rest.substr(0, 3) == "?<=" || rest.substr(0, 3) == "?<!") {
            i += 3;
          } else if (rest.substr(0, 2) == "?<") {
            size_t close = rest.find('>');
            if (close == std::string_view::npos || close == 2) return "unterminated group name";
            i += close + 1;
          } else {
            return "invalid group at offset " + std::to_string(i - 1);
          }
        }
        quantifiable = false;
        break;
      }
      case ')':
        if (depth == 0) return "unmatched ')' at offset " + std::to_string(i);
        --depth;
        quantifiable = true;
        ++i;
        break;
      case '[': {
        size_t start = i++;
        if (i < p.size() && p[i] == '^') ++i;
        bool closed = false;
        while (i < p.size()) {
          if (p[i] == ']') {
            closed = true;
            ++i;
            break;
          }
          size_t len = 0;
          int atom = ClassAtom(p, i, &len);
          if (atom == -2) return "'\\' at the end";
          i += len;
          if (i + 1 < p.size() && p[i] == '-' && p[i + 1] != ']') {
            size_t hi_len = 0;
            int hi = ClassAtom(p, i + 1, &hi_len);
            if (hi == -2) return "'\\' at the end";
            if (atom >= 0 && hi >= 0 && hi < atom) {
              return "character class range out of order at offset " + std::to_string(i - len);
            }
            i += 1 + hi_len;
            continue;
          }
        }
        if (!closed) return "unterminated character class at offset " + std::to_string(start);
        quantifiable = true;
        break;
      }
      case '*':
      case '+':
      case '?':
        if (!quantifiable) return "nothing to repeat at offset " + std::to_string(i);
        ++i;
        if (i < p.size() && p[i] == '?') ++i;  // lazy
        quantifiable = false;
        break;
      case '{': {
        bool out_of_order = false;
        size_t len = BraceQuantifier(p, i, &out_of_order);
        if (len == 0) {  // a literal brace (Annex B)
          quantifiable = true;
          ++i;
          break;
        }
        if (!quantifiable) return "nothing to repeat at offset " + std::to_string(i);
        if (out_of_order)
          return "numbers out of order in {} quantifier at offset " + std::to_string(i);
        i += len;
        if (i < p.size() && p[i] == '?') ++i;
        quantifiable = false;
        break;
      }
      case '|':
      case '^':
      case '$':
        quantifiable = false;
        ++i;
        break;
      default:
        quantifiable = true;
        ++i;
    }
  }
  if (depth != 0) return "unterminated group";
  return "";
}

}  // namespace icestream::registry
