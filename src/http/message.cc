// Header lookups.
#include "http/message.h"

#include <algorithm>
#include <cctype>

namespace icestream::http {

std::string_view Request::GetHeader(std::string_view lower_name) const {
  for (const auto& h : headers) {
    if (h.name == lower_name) return h.value;
  }
  return {};
}

bool Request::HasHeader(std::string_view lower_name) const {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const Header& h) { return h.name == lower_name; });
}

std::string AsciiLower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void Response::SetHeader(std::string name, std::string value) {
  auto same = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
             return std::tolower(x) == std::tolower(y);
           });
  };
  for (auto& h : headers) {
    if (same(h.name, name)) {
      h.value = std::move(value);
      return;
    }
  }
  headers.push_back({std::move(name), std::move(value)});
}

}  // namespace icestream::http
