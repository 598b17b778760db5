// Typed member access for the Iceberg JSON codecs (internal to iceberg/): a missing or
// mistyped member becomes a kInvalidArgument status naming the member and where it is.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace icestream::iceberg::json_util {

using nlohmann::json;

Result<int64_t> Long(const json& j, std::string_view key, std::string_view where);
Result<int32_t> Int(const json& j, std::string_view key, std::string_view where);
Result<std::string> String(const json& j, std::string_view key, std::string_view where);
Result<bool> Bool(const json& j, std::string_view key, std::string_view where);
// Absent or null -> nullopt.
Result<std::optional<int64_t>> OptLong(const json& j, std::string_view key, std::string_view where);
Result<std::optional<int32_t>> OptInt(const json& j, std::string_view key, std::string_view where);
Result<std::optional<std::string>> OptString(const json& j, std::string_view key,
                                             std::string_view where);
Result<std::optional<bool>> OptBool(const json& j, std::string_view key, std::string_view where);
// A JSON object of string values; absent or null -> empty.
Result<std::map<std::string, std::string>> StringMap(const json& j, std::string_view key,
                                                     std::string_view where);
// A JSON array of strings; absent or null -> empty.
Result<std::vector<std::string>> StringList(const json& j, std::string_view key,
                                            std::string_view where);
Result<std::vector<int64_t>> LongList(const json& j, std::string_view key, std::string_view where);
// The member if present and not null, else nullptr.
const json* Find(const json& j, std::string_view key);

}  // namespace icestream::iceberg::json_util
