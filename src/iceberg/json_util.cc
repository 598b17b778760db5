// Typed JSON member access for the Iceberg codecs.
#include "iceberg/json_util.h"

#include <fmt/format.h>

namespace icestream::iceberg::json_util {

namespace {

Status Missing(std::string_view key, std::string_view where) {
  return InvalidArgument(fmt::format("{}: missing \"{}\"", where, key));
}
Status Wrong(std::string_view key, std::string_view where, std::string_view what) {
  return InvalidArgument(fmt::format("{}: \"{}\" must be {}", where, key, what));
}

}  // namespace

const json* Find(const json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

Result<std::optional<int64_t>> OptLong(const json& j, std::string_view key, std::string_view where) {
  const json* v = Find(j, key);
  if (v == nullptr) return std::optional<int64_t>();
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return Wrong(key, where, "a 64-bit integer");
    }
    return std::optional<int64_t>(v->get<int64_t>());
  }
  return Wrong(key, where, "an integer");
}

Result<std::optional<int32_t>> OptInt(const json& j, std::string_view key, std::string_view where) {
  ASSIGN_OR_RETURN(auto v, OptLong(j, key, where));
  if (!v) return std::optional<int32_t>();
  if (*v < INT32_MIN || *v > INT32_MAX) return Wrong(key, where, "a 32-bit integer");
  return std::optional<int32_t>(static_cast<int32_t>(*v));
}

Result<std::optional<std::string>> OptString(const json& j, std::string_view key,
                                             std::string_view where) {
  const json* v = Find(j, key);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return Wrong(key, where, "a string");
  return std::optional<std::string>(v->get<std::string>());
}

Result<std::optional<bool>> OptBool(const json& j, std::string_view key, std::string_view where) {
  const json* v = Find(j, key);
  if (v == nullptr) return std::optional<bool>();
  if (!v->is_boolean()) return Wrong(key, where, "a boolean");
  return std::optional<bool>(v->get<bool>());
}

Result<int64_t> Long(const json& j, std::string_view key, std::string_view where) {
  ASSIGN_OR_RETURN(auto v, OptLong(j, key, where));
  if (!v) return Missing(key, where);
  return *v;
}

Result<int32_t> Int(const json& j, std::string_view key, std::string_view where) {
  ASSIGN_OR_RETURN(auto v, OptInt(j, key, where));
  if (!v) return Missing(key, where);
  return *v;
}

Result<std::string> String(const json& j, std::string_view key, std::string_view where) {
  ASSIGN_OR_RETURN(auto v, OptString(j, key, where));
  if (!v) return Missing(key, where);
  return *v;
}

Result<bool> Bool(const json& j, std::string_view key, std::string_view where) {
  ASSIGN_OR_RETURN(auto v, OptBool(j, key, where));
  if (!v) return Missing(key, where);
  return *v;
}

Result<std::map<std::string, std::string>> StringMap(const json& j, std::string_view key,
                                                     std::string_view where) {
  std::map<std::string, std::string> out;
  const json* v = Find(j, key);
  if (v == nullptr) return out;
  if (!v->is_object()) return Wrong(key, where, "an object of strings");
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (!it.value().is_string()) return Wrong(key, where, "an object of strings");
    out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

Result<std::vector<std::string>> StringList(const json& j, std::string_view key,
                                            std::string_view where) {
  std::vector<std::string> out;
  const json* v = Find(j, key);
  if (v == nullptr) return out;
  if (!v->is_array()) return Wrong(key, where, "an array of strings");
  for (const auto& e : *v) {
    if (!e.is_string()) return Wrong(key, where, "an array of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

Result<std::vector<int64_t>> LongList(const json& j, std::string_view key, std::string_view where) {
  std::vector<int64_t> out;
  const json* v = Find(j, key);
  if (v == nullptr) return out;
  if (!v->is_array()) return Wrong(key, where, "an array of integers");
  for (const auto& e : *v) {
    if (!e.is_number_integer()) return Wrong(key, where, "an array of integers");
    out.push_back(e.get<int64_t>());
  }
  return out;
}

}  // namespace icestream::iceberg::json_util
