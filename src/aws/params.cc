// Request member reading and model validation.
#include "aws/params.h"

#include <cmath>

#include <fmt/format.h>

namespace icestream::aws {

using nlohmann::json;

const json* Params::Get(std::string_view name) const {
  if (!obj_.is_object()) return nullptr;
  auto it = obj_.find(name);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool Params::Has(std::string_view name) const { return Get(name) != nullptr; }

void Params::TypeError(std::string_view, std::string message) {
  if (!serialization_) serialization_ = SerializationError(std::move(message));
}

std::optional<std::string> Params::Str(std::string_view name) {
  const json* v = Get(name);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    TypeError(name, v->is_number()
                        ? "class com.amazon.coral.value.json.numbers.TruncatingBigNumber can not "
                          "be converted to an String"
                        : (v->is_boolean() ? "class java.lang.Boolean can not be converted to an String"
                                           : "Start of structure or map found where not expected."));
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::optional<int64_t> Params::Long(std::string_view name) {
  const json* v = Get(name);
  if (!v) return std::nullopt;
  if (!v->is_number()) {
    TypeError(name, v->is_string() ? "class java.lang.String can not be converted to an Long"
                                   : "Start of structure or map found where not expected.");
    return std::nullopt;
  }
  if (v->is_number_float()) {
    double d = std::floor(v->get<double>());
    if (d > 9.2e18) return INT64_MAX;
    if (d < -9.2e18) return INT64_MIN;
    return static_cast<int64_t>(d);
  }
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return INT64_MAX;
  }
  return v->get<int64_t>();
}

std::optional<int64_t> Params::Int(std::string_view name) {
  const json* v = Get(name);
  if (v && v->is_string()) {
    TypeError(name, "class java.lang.String can not be converted to an Integer");
    return std::nullopt;
  }
  auto l = Long(name);
  if (!l) return l;
  if (*l > INT32_MAX) return INT32_MAX;
  if (*l < INT32_MIN) return INT32_MIN;
  return l;
}

std::optional<bool> Params::Bool(std::string_view name) {
  const json* v = Get(name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    TypeError(name, v->is_string() ? fmt::format("'{}' can not be converted to an Boolean",
                                                 v->get<std::string>())
                                   : "class com.amazon.coral.value.json.numbers.TruncatingBigNumber "
                                     "can not be converted to an Boolean");
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<int64_t> Params::TimestampMs(std::string_view name) {
  const json* v = Get(name);
  if (!v) return std::nullopt;
  if (!v->is_number()) {
    TypeError(name, v->is_string()
                        ? "class java.lang.String can not be converted to milliseconds since epoch"
                        : "Start of structure or map found where not expected.");
    return std::nullopt;
  }
  return static_cast<int64_t>(std::llround(v->get<double>() * 1000.0));
}

const json* Params::List(std::string_view name) {
  const json* v = Get(name);
  if (!v) return nullptr;
  if (!v->is_array()) {
    TypeError(name, "Expected list or null");
    return nullptr;
  }
  return v;
}

const json* Params::Map(std::string_view name) {
  const json* v = Get(name);
  if (!v) return nullptr;
  if (!v->is_object()) {
    TypeError(name, "Expected map or null");
    return nullptr;
  }
  return v;
}

const json* Params::Struct(std::string_view name) {
  const json* v = Get(name);
  if (!v) return nullptr;
  if (!v->is_object()) {
    TypeError(name, "Start of list found where not expected");
    return nullptr;
  }
  return v;
}

std::string Params::PathOf(std::string_view member) {
  std::string p(member);
  if (!p.empty()) p[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(p[0])));
  return p;
}

std::string Params::Quote(std::string_view s) { return fmt::format("'{}'", s); }

void Params::AddViolation(std::string text) { violations_.push_back(std::move(text)); }

void Params::AddSerializationError(std::string message) { TypeError("", std::move(message)); }

void Params::Absorb(const Params& nested) {
  if (nested.serialization_ && !serialization_) serialization_ = nested.serialization_;
  violations_.insert(violations_.end(), nested.violations_.begin(), nested.violations_.end());
  if (nested.deferred_ && !deferred_) deferred_ = nested.deferred_;
}

void Params::Defer(ApiError error) {
  if (!deferred_) deferred_ = std::move(error);
}

void Params::Required(std::string_view path, bool present) {
  if (!present) {
    AddViolation(fmt::format(
        "Value null at '{}' failed to satisfy constraint: Member must not be null", path));
  }
}

void Params::Length(std::string_view path, std::string_view value, size_t min, size_t max) {
  size_t n = Utf8Length(value);
  if (n < min) {
    AddViolation(fmt::format("Value {} at '{}' failed to satisfy constraint: Member must have "
                             "length greater than or equal to {}",
                             Quote(value), path, min));
  }
  if (n > max) {
    AddViolation(fmt::format("Value {} at '{}' failed to satisfy constraint: Member must have "
                             "length less than or equal to {}",
                             Quote(value), path, max));
  }
}

void Params::ListLength(std::string_view path, size_t size, const std::string& rendered, size_t min,
                        size_t max) {
  if (size < min) {
    AddViolation(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have "
                             "length greater than or equal to {}",
                             rendered, path, min));
  }
  if (size > max) {
    AddViolation(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have "
                             "length less than or equal to {}",
                             rendered, path, max));
  }
}

void Params::Pattern(std::string_view path, std::string_view value, bool ok,
                     std::string_view pattern) {
  if (!ok) {
    AddViolation(fmt::format("Value {} at '{}' failed to satisfy constraint: Member must satisfy "
                             "regular expression pattern: {}",
                             Quote(value), path, pattern));
  }
}

void Params::Range(std::string_view path, int64_t value, int64_t min, int64_t max) {
  if (value < min) {
    AddViolation(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have "
                             "value greater than or equal to {}",
                             value, path, min));
  }
  if (value > max) {
    AddViolation(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have "
                             "value less than or equal to {}",
                             value, path, max));
  }
}

void Params::Enum(std::string_view path, std::string_view value,
                  std::initializer_list<std::string_view> allowed) {
  for (auto a : allowed) {
    if (a == value) return;
  }
  AddViolation(fmt::format("Value {} at '{}' failed to satisfy constraint: Member must satisfy "
                           "enum value set: [{}]",
                           Quote(value), path, fmt::join(allowed, ", ")));
}

std::optional<ApiError> Params::Error() const {
  if (serialization_) return serialization_;
  if (violations_.empty()) return auth_ ? auth_ : deferred_;
  size_t n = violations_.size();
  std::string msg = fmt::format("{} validation error{} detected: ", n, n == 1 ? "" : "s");
  for (size_t i = 0; i < n && i < 10; ++i) {
    if (i) msg += "; ";
    msg += violations_[i];
  }
  return ValidationError(std::move(msg));
}

bool MatchesNameChars(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool MatchesDecimal(std::string_view s, size_t max_digits) {
  if (s.empty() || s.size() > max_digits) return false;
  if (s == "0") return true;
  if (s[0] < '1' || s[0] > '9') return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace icestream::aws
