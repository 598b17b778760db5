// TOML configuration loading.
#include "server/config.h"

#include <toml++/toml.h>

namespace icestream::server {

std::string Config::host() const {
  auto colon = listen.rfind(':');
  std::string h = colon == std::string::npos ? listen : listen.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  return h;
}

uint16_t Config::port() const {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) return 4567;
  return static_cast<uint16_t>(std::stoul(listen.substr(colon + 1)));
}

Result<Config> LoadConfigFile(const std::string& path, Config c) {
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return InvalidArgument("config " + path + ": " + std::string(e.description()));
  }
  c.data_dir = t["data_dir"].value_or(c.data_dir);
  c.listen = t["listen"].value_or(c.listen);
  c.region = t["region"].value_or(c.region);
  c.account = t["account"].value_or(c.account);
  c.log_level = t["log_level"].value_or(c.log_level);
  c.aws_strict = t["aws_strict"].value_or(c.aws_strict);
  if (auto* creds = t["credentials"].as_array()) {
    for (const auto& e : *creds) {
      const auto* tab = e.as_table();
      if (!tab) return InvalidArgument("config: [[credentials]] entries must be tables");
      auto ak = (*tab)["access_key_id"].value<std::string>();
      auto sk = (*tab)["secret_access_key"].value<std::string>();
      if (!ak || !sk) {
        return InvalidArgument("config: credentials need access_key_id and secret_access_key");
      }
      c.credentials[*ak] = *sk;
    }
  }
  if (auto* s = t["storage"].as_table()) {
    c.fsync = (*s)["fsync"].value_or(c.fsync);
    c.segment_bytes = (*s)["segment_bytes"].value_or(c.segment_bytes);
    c.page_cache_window_bytes =
        (*s)["page_cache_window_bytes"].value_or(c.page_cache_window_bytes);
    c.segment_ms = (*s)["segment_ms"].value_or(c.segment_ms);
    c.index_interval_bytes = (*s)["index_interval_bytes"].value_or(c.index_interval_bytes);
    c.commit_threads = (*s)["commit_threads"].value_or(c.commit_threads);
    c.retention_check_interval_ms =
        (*s)["retention_check_interval_ms"].value_or(c.retention_check_interval_ms);
  }
  if (auto* s = t["server"].as_table()) {
    c.io_threads = (*s)["io_threads"].value_or(c.io_threads);
  }
  if (auto* s = t["s3"].as_table()) {
    c.s3_endpoint = (*s)["endpoint"].value_or(c.s3_endpoint);
    c.s3_region = (*s)["region"].value_or(c.s3_region);
    c.s3_path_style = (*s)["path_style"].value_or(c.s3_path_style);
    c.s3_multipart_threshold = (*s)["multipart_threshold"].value_or(c.s3_multipart_threshold);
    c.s3_request_timeout_ms = (*s)["request_timeout_ms"].value_or(c.s3_request_timeout_ms);
    c.s3_max_attempts = (*s)["max_attempts"].value_or(c.s3_max_attempts);
  }
  if (auto* s = t["delivery"].as_table()) {
    c.delivery_workers = (*s)["workers"].value_or(c.delivery_workers);
    c.delivery_max_batch_bytes = (*s)["max_batch_bytes"].value_or(c.delivery_max_batch_bytes);
    c.delivery_tick_ms = (*s)["tick_ms"].value_or(c.delivery_tick_ms);
    c.delivery_activation_timeout_ms = (*s)["activation_timeout_ms"].value_or(c.delivery_activation_timeout_ms);
    c.table_target_file_bytes = (*s)["table_target_file_bytes"].value_or(c.table_target_file_bytes);
    c.table_max_commit_bytes = (*s)["table_max_commit_bytes"].value_or(c.table_max_commit_bytes);
    c.table_convert_threads = (*s)["table_convert_threads"].value_or(c.table_convert_threads);
    c.table_snapshot_max_age_ms = (*s)["table_snapshot_max_age_ms"].value_or(c.table_snapshot_max_age_ms);
    c.table_expire_interval_ms = (*s)["table_expire_interval_ms"].value_or(c.table_expire_interval_ms);
    c.table_orphan_age_ms = (*s)["table_orphan_age_ms"].value_or(c.table_orphan_age_ms);
    c.table_compaction = (*s)["table_compaction"].value_or(c.table_compaction);
    c.table_compaction_cold_after_ms =
        (*s)["table_compaction_cold_after_ms"].value_or(c.table_compaction_cold_after_ms);
  }
  if (auto* s = t["kinesis"].as_table()) {
    c.iterator_ttl_ms = (*s)["iterator_ttl_ms"].value_or(c.iterator_ttl_ms);
  }
  if (auto* s = t["iceberg"].as_table()) {
    c.iceberg_default_warehouse = (*s)["default_warehouse"].value_or(c.iceberg_default_warehouse);
  }
  if (auto* s = t["limits"].as_table()) {
    c.shard_limit = (*s)["shard_limit"].value_or(c.shard_limit);
    c.on_demand_stream_limit = (*s)["on_demand_stream_limit"].value_or(c.on_demand_stream_limit);
  }
  return c;
}

Status Validate(const Config& c) {
  auto colon = c.listen.rfind(':');
  if (colon == std::string::npos || colon + 1 == c.listen.size()) {
    return InvalidArgument("--listen must be HOST:PORT, got '" + c.listen + "'");
  }
  for (char ch : c.listen.substr(colon + 1)) {
    if (ch < '0' || ch > '9') return InvalidArgument("bad port in --listen '" + c.listen + "'");
  }
  if (std::stoul(c.listen.substr(colon + 1)) > 65535) return InvalidArgument("port out of range");
  if (c.account.size() != 12) return InvalidArgument("account must have 12 digits");
  for (char ch : c.account) {
    if (ch < '0' || ch > '9') return InvalidArgument("account must have 12 digits");
  }
  if (c.segment_bytes < 4096) return InvalidArgument("storage.segment_bytes must be >= 4096");
  if (c.table_convert_threads < 1 || c.table_convert_threads > 64) {
    return InvalidArgument("delivery.table_convert_threads must be 1..64");
  }
  if (c.table_target_file_bytes < 1024) return InvalidArgument("delivery.table_target_file_bytes must be >= 1024");
  if (c.commit_threads == 0 || c.commit_threads > 64) {
    return InvalidArgument("storage.commit_threads must be 1..64");
  }
  return Status::OK();
}

}  // namespace icestream::server
