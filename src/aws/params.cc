// Request member reading and model validation.
#include "aws/params.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

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

namespace {

// AWS's request framework (Coral) names what it found where another JSON type was
// expected; these are its texts as kinesalite's suite recorded them against AWS
// (docs/kinesis-api.md, "Error texts"). `what` is "an String", "an Integer", "a Blob", ...
constexpr const char* kNumber = "class com.amazon.coral.value.json.numbers.TruncatingBigNumber";
constexpr const char* kListHere = "Start of list found where not expected";
constexpr const char* kMapHere = "Start of structure or map found where not expected.";

std::string Found(const json& v, std::string_view what) {
  if (v.is_array()) return kListHere;
  if (v.is_object()) return kMapHere;
  if (v.is_boolean())
    return fmt::format("class java.lang.Boolean can not be converted to {}", what);
  if (v.is_number()) return fmt::format("{} can not be converted to {}", kNumber, what);
  if (v.is_string()) return fmt::format("class java.lang.String can not be converted to {}", what);
  return kMapHere;
}

}  // namespace

std::string Params::TypeMessage(const json& v, MemberType type) {
  switch (type) {
    case MemberType::kString:
      return Found(v, "an String");
    case MemberType::kInteger:
      return Found(v, "an Integer");
    case MemberType::kLong:
      return Found(v, "an Long");
    case MemberType::kBoolean:
      // Coral upper-cases the string it could not read as a boolean.
      if (v.is_string()) {
        std::string up = v.get<std::string>();
        for (auto& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        return fmt::format("'{}' can not be converted to an Boolean", up);
      }
      return Found(v, "an Boolean");
    case MemberType::kBlob:
      return Found(v, "a Blob");
    case MemberType::kTimestamp:
      return Found(v, "milliseconds since epoch");
    case MemberType::kList:
      return v.is_object() ? std::string(kMapHere) : std::string("Expected list or null");
    case MemberType::kMap:
      return v.is_array() ? std::string(kListHere) : std::string("Expected map or null");
    case MemberType::kStructure:
      return v.is_array() ? std::string(kListHere) : std::string("Expected null");
  }
  return kMapHere;
}

std::optional<std::string> Params::Str(std::string_view name) {
  const json* v = Get(name);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    TypeError(name, TypeMessage(*v, MemberType::kString));
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::optional<int64_t> Params::Long(std::string_view name) {
  const json* v = Get(name);
  if (!v) return std::nullopt;
  if (!v->is_number()) {
    TypeError(name, TypeMessage(*v, MemberType::kLong));
    return std::nullopt;
  }
  return ToLong(*v);
}

int64_t Params::ToLong(const json& v) {
  if (v.is_number_float()) {
    double d = std::floor(v.get<double>());
    if (d > 9.2e18) return INT64_MAX;
    if (d < -9.2e18) return INT64_MIN;
    return static_cast<int64_t>(d);
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return INT64_MAX;
  }
  return v.get<int64_t>();
}

std::optional<int64_t> Params::Int(std::string_view name) {
  const json* v = Get(name);
  if (!v) return std::nullopt;
  if (!v->is_number()) {
    TypeError(name, TypeMessage(*v, MemberType::kInteger));
    return std::nullopt;
  }
  int64_t l = ToLong(*v);
  // Coral floors fractions and clamps to Integer's range (kinesalite's suite).
  if (l > INT32_MAX) return INT32_MAX;
  if (l < INT32_MIN) return INT32_MIN;
  return l;
}

std::optional<bool> Params::Bool(std::string_view name) {
  const json* v = Get(name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    TypeError(name, TypeMessage(*v, MemberType::kBoolean));
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<int64_t> Params::TimestampMs(std::string_view name) {
  const json* v = Get(name);
  if (!v) return std::nullopt;
  if (!v->is_number()) {
    TypeError(name, TypeMessage(*v, MemberType::kTimestamp));
    return std::nullopt;
  }
  return static_cast<int64_t>(std::llround(v->get<double>() * 1000.0));
}

const json* Params::List(std::string_view name) {
  const json* v = Get(name);
  if (!v) return nullptr;
  if (!v->is_array()) {
    TypeError(name, TypeMessage(*v, MemberType::kList));
    return nullptr;
  }
  return v;
}

const json* Params::Map(std::string_view name) {
  const json* v = Get(name);
  if (!v) return nullptr;
  if (!v->is_object()) {
    TypeError(name, TypeMessage(*v, MemberType::kMap));
    return nullptr;
  }
  return v;
}

const json* Params::Struct(std::string_view name) {
  const json* v = Get(name);
  if (!v) return nullptr;
  if (!v->is_object()) {
    TypeError(name, TypeMessage(*v, MemberType::kStructure));
    return nullptr;
  }
  return v;
}

namespace {

// A scalar as Java's toString shows it inside a list or map: strings unquoted.
std::string Scalar(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "null";
  return v.dump();
}

}  // namespace

std::string Params::RenderList(const json& list, std::string_view member_str) {
  std::string out = "[";
  bool first = true;
  for (const auto& item : list) {
    if (!first) out += ", ";
    first = false;
    out += member_str.empty() ? Scalar(item) : std::string(member_str);
  }
  return out + "]";
}

std::string Params::RenderMap(const json& map) {
  std::string out = "{";
  bool first = true;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!first) out += ", ";
    first = false;
    out += it.key() + "=" + Scalar(it.value());
  }
  return out + "}";
}

void Params::ListMemberLengths(std::string_view path, const json& list, size_t min, size_t max) {
  for (const auto& item : list) {
    if (!item.is_string()) continue;
    size_t n = Utf8Length(item.get<std::string>());
    if (n < min || n > max) {
      // AWS reports a list's member constraints on the list itself.
      AddViolation(
          fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must "
                      "satisfy constraint: [Member must have length less than or equal "
                      "to {}, Member must have length greater than or equal to {}]",
                      RenderList(list), path, max, min));
      return;
    }
  }
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
    AddViolation(
        fmt::format("Value {} at '{}' failed to satisfy constraint: Member must have "
                    "length greater than or equal to {}",
                    Quote(value), path, min));
  }
  if (n > max) {
    AddViolation(
        fmt::format("Value {} at '{}' failed to satisfy constraint: Member must have "
                    "length less than or equal to {}",
                    Quote(value), path, max));
  }
}

void Params::ListLength(std::string_view path, size_t size, const std::string& rendered, size_t min,
                        size_t max) {
  if (size < min) {
    AddViolation(
        fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have "
                    "length greater than or equal to {}",
                    rendered, path, min));
  }
  if (size > max) {
    AddViolation(
        fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have "
                    "length less than or equal to {}",
                    rendered, path, max));
  }
}

void Params::Pattern(std::string_view path, std::string_view value, bool ok,
                     std::string_view pattern) {
  if (!ok) {
    AddViolation(
        fmt::format("Value {} at '{}' failed to satisfy constraint: Member must satisfy "
                    "regular expression pattern: {}",
                    Quote(value), path, pattern));
  }
}

void Params::Range(std::string_view path, int64_t value, int64_t min, int64_t max) {
  if (value < min) {
    AddViolation(
        fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have "
                    "value greater than or equal to {}",
                    value, path, min));
  }
  if (value > max) {
    AddViolation(
        fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have "
                    "value less than or equal to {}",
                    value, path, max));
  }
}

void Params::Enum(std::string_view path, std::string_view value,
                  std::initializer_list<std::string_view> allowed) {
  Enum(path, value, std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

void Params::Enum(std::string_view path, std::string_view value,
                  std::span<const std::string_view> allowed) {
  for (auto a : allowed) {
    if (a == value) return;
  }
  AddViolation(
      fmt::format("Value {} at '{}' failed to satisfy constraint: Member must satisfy "
                  "enum value set: [{}]",
                  Quote(value), path, fmt::join(allowed, ", ")));
}

std::optional<ApiError> Params::Error() const {
  if (serialization_) return serialization_;
  if (violations_.empty()) return auth_ ? auth_ : deferred_;
  // AWS lists at most 10 violations, and counts only those it lists.
  size_t n = std::min<size_t>(violations_.size(), 10);
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
