// Reading DLQ objects.
#include "console/dlq_view.h"

#include <algorithm>

namespace icestream::console {

Result<nlohmann::json> ReadDlq(const DlqLocation& loc, const DlqQuery& q) {
  nlohmann::json out = {{"bucket", loc.bucket},
                        {"prefix", loc.prefix},
                        {"objects", 0},
                        {"objects_read", 0},
                        {"lines_read", 0},
                        {"error_counts", nlohmann::json::object()},
                        {"lines", nlohmann::json::array()},
                        {"truncated", false}};
  auto listed = loc.store->List(loc.bucket, loc.prefix);
  if (!listed.ok()) {
    if (listed.status().code() != StatusCode::kNotFound) return listed.status();
    out["bucket_error"] = listed.status().message();
    return out;
  }
  // Only this channel's objects: <prefix><yyyy>/<MM>/<dd>/<HH>/<channel-id><suffix>.
  std::vector<objectstore::ObjectInfo> objects;
  for (auto& o : *listed) {
    std::string_view name = o.key;
    name = name.substr(name.rfind('/') == std::string_view::npos ? 0 : name.rfind('/') + 1);
    if (!loc.channel_id.empty() && name.rfind(loc.channel_id, 0) != 0) continue;
    objects.push_back(std::move(o));
  }
  std::sort(objects.begin(), objects.end(),
            [](const auto& a, const auto& b) { return a.key > b.key; });
  out["objects"] = objects.size();
  size_t read = 0, lines_read = 0;
  uint64_t bytes = 0;
  nlohmann::json& lines = out["lines"];
  nlohmann::json& counts = out["error_counts"];
  bool truncated = false;
  for (const auto& o : objects) {
    if (read >= q.max_objects || bytes + o.size > q.max_bytes) {
      truncated = true;
      break;
    }
    ASSIGN_OR_RETURN(std::string body, loc.store->Get(loc.bucket, o.key));
    ++read;
    bytes += body.size();
    size_t at = 0, n = 0;
    while (at < body.size()) {
      size_t nl = body.find('\n', at);
      if (nl == std::string::npos) nl = body.size();
      std::string_view text = std::string_view(body).substr(at, nl - at);
      at = nl + 1;
      if (text.empty()) continue;
      ++n;
      ++lines_read;
      auto j = nlohmann::json::parse(text, nullptr, false);
      if (!j.is_object()) {
        j = {{"errorCode", "UNREADABLE_DLQ_LINE"},
             {"errorMessage", std::string(text.substr(0, 300))}};
      }
      std::string code = j.value("errorCode", std::string("UNKNOWN"));
      counts[code] = counts.value(code, 0) + 1;
      if (lines.size() < q.max_lines) {
        j["object"] = o.key;
        j["line"] = n;
        lines.push_back(std::move(j));
      } else {
        truncated = true;
      }
    }
  }
  out["objects_read"] = read;
  out["lines_read"] = lines_read;
  out["truncated"] = truncated;
  return out;
}

}  // namespace icestream::console
