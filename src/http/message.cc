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

void Response::SetHeader(std::string name, std::string value) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (auto& h : headers) {
    if (h.name == name) {
      h.value = std::move(value);
      return;
    }
  }
  headers.push_back({std::move(name), std::move(value)});
}

}  // namespace icestream::http
