// Staged files as text.
#include "delivery/table/staging.h"

#include <nlohmann/json.hpp>

#include "common/base64.h"

namespace icestream::delivery::table {

namespace {

using nlohmann::json;

json CountsToJson(const std::map<int32_t, int64_t>& m) {
  json a = json::array();
  for (const auto& [id, n] : m) a.push_back({id, n});
  return a;
}

json BoundsToJson(const std::map<int32_t, std::string>& m) {
  json a = json::array();
  for (const auto& [id, b] : m) a.push_back({id, base64::Encode(b)});
  return a;
}

Status CountsFromJson(const json& j, const char* key, std::map<int32_t, int64_t>* out) {
  if (!j.contains(key)) return Status::OK();
  if (!j[key].is_array()) return Corruption(std::string("staged file: ") + key + " is no array");
  for (const auto& e : j[key]) {
    if (!e.is_array() || e.size() != 2 || !e[0].is_number_integer() || !e[1].is_number_integer()) {
      return Corruption(std::string("staged file: bad ") + key + " entry");
    }
    (*out)[e[0].get<int32_t>()] = e[1].get<int64_t>();
  }
  return Status::OK();
}

Status BoundsFromJson(const json& j, const char* key, std::map<int32_t, std::string>* out) {
  if (!j.contains(key)) return Status::OK();
  if (!j[key].is_array()) return Corruption(std::string("staged file: ") + key + " is no array");
  for (const auto& e : j[key]) {
    if (!e.is_array() || e.size() != 2 || !e[0].is_number_integer() || !e[1].is_string()) {
      return Corruption(std::string("staged file: bad ") + key + " entry");
    }
    auto bytes = base64::Decode(e[1].get<std::string>());
    if (!bytes) return Corruption(std::string("staged file: ") + key + " is not base64");
    (*out)[e[0].get<int32_t>()] = std::move(*bytes);
  }
  return Status::OK();
}

}  // namespace

std::string DataFilesToJson(const std::vector<iceberg::DataFile>& files) {
  json a = json::array();
  for (const auto& f : files) {
    json part = json::array();
    for (const auto& v : f.partition) {
      if (v) {
        part.push_back(v->as_int());
      } else {
        part.push_back(nullptr);
      }
    }
    json j = {{"path", f.file_path},
              {"format", f.file_format},
              {"partition", std::move(part)},
              {"records", f.record_count},
              {"bytes", f.file_size_in_bytes},
              {"spec", f.spec_id},
              {"column_sizes", CountsToJson(f.column_sizes)},
              {"value_counts", CountsToJson(f.value_counts)},
              {"null_counts", CountsToJson(f.null_value_counts)},
              {"nan_counts", CountsToJson(f.nan_value_counts)},
              {"lower", BoundsToJson(f.lower_bounds)},
              {"upper", BoundsToJson(f.upper_bounds)},
              {"splits", f.split_offsets}};
    if (f.sort_order_id) j["sort_order"] = *f.sort_order_id;
    a.push_back(std::move(j));
  }
  return a.dump();
}

Result<std::vector<iceberg::DataFile>> DataFilesFromJson(std::string_view text) {
  json a = json::parse(text, nullptr, false);
  if (a.is_discarded() || !a.is_array()) return Corruption("staged files are not a JSON array");
  std::vector<iceberg::DataFile> out;
  for (const auto& j : a) {
    if (!j.is_object() || !j.value("path", json()).is_string() ||
        !j.value("records", json()).is_number_integer() ||
        !j.value("bytes", json()).is_number_integer() || !j.value("partition", json()).is_array()) {
      return Corruption("a staged file lacks its path, counts or partition");
    }
    iceberg::DataFile f;
    f.file_path = j["path"].get<std::string>();
    f.file_format = j.value("format", std::string("PARQUET"));
    for (const auto& v : j["partition"]) {
      if (v.is_null()) {
        f.partition.push_back(std::nullopt);
      } else if (v.is_number_integer()) {
        f.partition.push_back(iceberg::Literal::Int(v.get<int32_t>()));
      } else {
        return Corruption("a staged file's partition value is not an int");
      }
    }
    f.record_count = j["records"].get<int64_t>();
    f.file_size_in_bytes = j["bytes"].get<int64_t>();
    f.spec_id = j.value("spec", 0);
    RETURN_IF_ERROR(CountsFromJson(j, "column_sizes", &f.column_sizes));
    RETURN_IF_ERROR(CountsFromJson(j, "value_counts", &f.value_counts));
    RETURN_IF_ERROR(CountsFromJson(j, "null_counts", &f.null_value_counts));
    RETURN_IF_ERROR(CountsFromJson(j, "nan_counts", &f.nan_value_counts));
    RETURN_IF_ERROR(BoundsFromJson(j, "lower", &f.lower_bounds));
    RETURN_IF_ERROR(BoundsFromJson(j, "upper", &f.upper_bounds));
    if (j.contains("splits")) {
      if (!j["splits"].is_array()) return Corruption("a staged file's split offsets are no array");
      for (const auto& s : j["splits"]) {
        if (!s.is_number_integer()) return Corruption("a staged file's split offset is no int");
        f.split_offsets.push_back(s.get<int64_t>());
      }
    }
    if (j.contains("sort_order") && j["sort_order"].is_number_integer()) {
      f.sort_order_id = j["sort_order"].get<int32_t>();
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace icestream::delivery::table
