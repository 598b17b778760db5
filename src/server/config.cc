// TOML configuration loading.
#include "server/config.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <utility>

namespace icestream::server {

Status ParseListen(std::string_view listen, std::string* host, uint16_t* port) {
  auto colon = listen.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == listen.size()) {
    return InvalidArgument("--listen must be HOST:PORT, got '" + std::string(listen) + "'");
  }
  std::string_view digits = listen.substr(colon + 1);
  uint32_t value = 0;
  for (char ch : digits) {
    if (ch < '0' || ch > '9') {
      return InvalidArgument("--listen '" + std::string(listen) +
                             "': the port must be a number from 0 to 65535");
    }
    value = value * 10 + static_cast<uint32_t>(ch - '0');
    if (value > 65535) {
      return InvalidArgument("--listen '" + std::string(listen) +
                             "': port out of range (0 to 65535)");
    }
  }
  std::string h(listen.substr(0, colon));
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (host) *host = h;
  if (port) *port = static_cast<uint16_t>(value);
  return Status::OK();
}

std::string Config::host() const {
  std::string h;
  if (!ParseListen(listen, &h, nullptr).ok()) return "127.0.0.1";
  return h;
}

uint16_t Config::port() const {
  uint16_t p = 4567;
  if (!ParseListen(listen, nullptr, &p).ok()) return 4567;
  return p;
}

bool ValidRegion(std::string_view r) {
  // AWS region names: lower-case letters and digits in dash-separated words, starting
  // with a letter ("us-east-1", "us-gov-west-1", "local"). They go into ARNs, SigV4
  // scopes and paths, where '/' or ':' would change what those mean.
  if (r.empty() || r.size() > 32 || !(r[0] >= 'a' && r[0] <= 'z') || r.back() == '-') return false;
  char prev = 0;
  for (char c : r) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok || (c == '-' && prev == '-')) return false;
    prev = c;
  }
  return true;
}

namespace {

// Reads one TOML document into a Config, refusing anything it does not know.
class StrictReader {
 public:
  explicit StrictReader(std::string path) : path_(std::move(path)) {}

  using Setter = std::function<Status(const toml::node&)>;
  using Keys = std::vector<std::pair<std::string, Setter>>;

  Status Error(const toml::source_region& at, const std::string& message) const {
    return InvalidArgument(fmt::format("config {} line {}: {}", path_, at.begin.line, message));
  }

  Setter Str(std::string* out, const std::string& name) const {
    return [this, out, name](const toml::node& n) -> Status {
      const auto* v = n.as_string();
      if (!v) return Error(n.source(), name + " must be a string");
      *out = v->get();
      return Status::OK();
    };
  }
  Setter Bool(bool* out, const std::string& name) const {
    return [this, out, name](const toml::node& n) -> Status {
      const auto* v = n.as_boolean();
      if (!v) return Error(n.source(), name + " must be true or false");
      *out = v->get();
      return Status::OK();
    };
  }
  Setter OptBool(std::optional<bool>* out, const std::string& name) const {
    return [this, out, name](const toml::node& n) -> Status {
      const auto* v = n.as_boolean();
      if (!v) return Error(n.source(), name + " must be true or false");
      *out = v->get();
      return Status::OK();
    };
  }
  template <typename T>
  Setter Int(T* out, const std::string& name, int64_t min, int64_t max) const {
    return [this, out, name, min, max](const toml::node& n) -> Status {
      const auto* v = n.as_integer();
      if (!v) return Error(n.source(), name + " must be an integer");
      int64_t x = v->get();
      if (x < min || x > max) {
        return Error(n.source(),
                     fmt::format("{} must be between {} and {}, got {}", name, min, max, x));
      }
      *out = static_cast<T>(x);
      return Status::OK();
    };
  }
  Setter StrList(std::vector<std::string>* out, const std::string& name) const {
    return [this, out, name](const toml::node& n) -> Status {
      const auto* arr = n.as_array();
      if (!arr) return Error(n.source(), name + " must be an array of strings");
      out->clear();
      for (const auto& e : *arr) {
        const auto* v = e.as_string();
        if (!v) return Error(e.source(), name + " must hold strings only");
        if (v->get().empty()) return Error(e.source(), name + " must not hold an empty string");
        out->push_back(v->get());
      }
      return Status::OK();
    };
  }

  Status Apply(const toml::table& t, const std::string& where, const Keys& keys) const {
    for (const auto& [key, node] : t) {
      std::string k(key.str());
      auto it = std::find_if(keys.begin(), keys.end(), [&](const auto& e) { return e.first == k; });
      if (it == keys.end()) {
        std::string known;
        for (const auto& e : keys) known += (known.empty() ? "" : ", ") + e.first;
        return Error(key.source(),
                     fmt::format("unknown key '{}' in {} (known keys: {})", k, where, known));
      }
      RETURN_IF_ERROR(it->second(node));
    }
    return Status::OK();
  }

 private:
  std::string path_;
};

}  // namespace

Result<Config> LoadConfigFile(const std::string& path, Config c) {
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(fmt::format("config {} line {}: {}", path, e.source().begin.line,
                                       std::string(e.description())));
  }
  StrictReader r(path);
  using Keys = StrictReader::Keys;
  constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
  const Keys storage = {
      {"fsync", r.Bool(&c.fsync, "storage.fsync")},
      {"segment_bytes", r.Int(&c.segment_bytes, "storage.segment_bytes", 4096, kMaxInt)},
      {"segment_ms", r.Int(&c.segment_ms, "storage.segment_ms", 1, kMaxInt)},
      {"index_interval_bytes",
       r.Int(&c.index_interval_bytes, "storage.index_interval_bytes", 1, kMaxInt)},
      {"page_cache_window_bytes",
       r.Int(&c.page_cache_window_bytes, "storage.page_cache_window_bytes", 0, kMaxInt)},
      {"commit_threads", r.Int(&c.commit_threads, "storage.commit_threads", 1, 64)},
      {"retention_check_interval_ms",
       r.Int(&c.retention_check_interval_ms, "storage.retention_check_interval_ms", 1, kMaxInt)},
      {"max_open_segment_files",
       r.Int(&c.max_open_segment_files, "storage.max_open_segment_files", 1, 1 << 20)},
  };
  const Keys server = {
      {"io_threads", r.Int(&c.io_threads, "server.io_threads", 0, 1024)},
      {"max_connections", r.Int(&c.max_connections, "server.max_connections", 1, 1 << 20)},
      {"idle_timeout_seconds",
       r.Int(&c.idle_timeout_seconds, "server.idle_timeout_seconds", 1, 86400)},
      {"access_log", r.Bool(&c.access_log, "server.access_log")},
      {"tls_cert", r.Str(&c.tls_cert, "server.tls_cert")},
      {"tls_key", r.Str(&c.tls_key, "server.tls_key")},
      {"first_byte_timeout_seconds",
       r.Int(&c.first_byte_timeout_seconds, "server.first_byte_timeout_seconds", 1, 3600)},
      {"max_request_bytes_in_flight",
       r.Int(&c.max_request_bytes_in_flight, "server.max_request_bytes_in_flight", 1 << 20,
             kMaxInt)},
      {"body_wait_seconds", r.Int(&c.body_wait_seconds, "server.body_wait_seconds", 1, 3600)},
      {"http2_connection_budget_bytes",
       r.Int(&c.http2_connection_budget_bytes, "server.http2_connection_budget_bytes", 1 << 20,
             kMaxInt)},
      {"subscription_threads",
       r.Int(&c.subscription_threads, "server.subscription_threads", 0, 256)},
  };
  const Keys auth = {
      {"bearer_tokens", r.StrList(&c.bearer_tokens, "auth.bearer_tokens")},
      {"public_metrics", r.Bool(&c.public_metrics, "auth.public_metrics")},
  };
  const Keys s3 = {
      {"endpoint", r.Str(&c.s3_endpoint, "s3.endpoint")},
      {"region", r.Str(&c.s3_region, "s3.region")},
      {"path_style", r.Bool(&c.s3_path_style, "s3.path_style")},
      {"multipart_threshold",
       r.Int(&c.s3_multipart_threshold, "s3.multipart_threshold", 5 << 20, kMaxInt)},
      {"request_timeout_ms",
       r.Int(&c.s3_request_timeout_ms, "s3.request_timeout_ms", 1, INT32_MAX)},
      {"max_attempts", r.Int(&c.s3_max_attempts, "s3.max_attempts", 1, 100)},
      {"retry_budget_ms", r.Int(&c.s3_retry_budget_ms, "s3.retry_budget_ms", 0, INT32_MAX)},
  };
  const Keys delivery = {
      {"workers", r.Int(&c.delivery_workers, "delivery.workers", 1, 256)},
      {"max_batch_bytes",
       r.Int(&c.delivery_max_batch_bytes, "delivery.max_batch_bytes", 1, kMaxInt)},
      {"tick_ms", r.Int(&c.delivery_tick_ms, "delivery.tick_ms", 1, 60000)},
      {"activation_timeout_ms",
       r.Int(&c.delivery_activation_timeout_ms, "delivery.activation_timeout_ms", 1, kMaxInt)},
      {"destination_grace_ms",
       r.Int(&c.delivery_destination_grace_ms, "delivery.destination_grace_ms", 0, kMaxInt)},
      {"redrive_batch_records",
       r.Int(&c.delivery_redrive_batch_records, "delivery.redrive_batch_records", 1, 1000000)},
      {"table_target_file_bytes",
       r.Int(&c.table_target_file_bytes, "delivery.table_target_file_bytes", 4096, kMaxInt)},
      {"table_max_commit_bytes",
       r.Int(&c.table_max_commit_bytes, "delivery.table_max_commit_bytes", 4096, kMaxInt)},
      {"table_convert_threads",
       r.Int(&c.table_convert_threads, "delivery.table_convert_threads", 1, 64)},
      {"table_snapshot_max_age_ms",
       r.Int(&c.table_snapshot_max_age_ms, "delivery.table_snapshot_max_age_ms", 0, kMaxInt)},
      {"table_expire_interval_ms",
       r.Int(&c.table_expire_interval_ms, "delivery.table_expire_interval_ms", 1, kMaxInt)},
      {"table_orphan_age_ms",
       r.Int(&c.table_orphan_age_ms, "delivery.table_orphan_age_ms", 0, kMaxInt)},
      {"table_compaction", r.Bool(&c.table_compaction, "delivery.table_compaction")},
      {"table_compaction_cold_after_ms",
       r.Int(&c.table_compaction_cold_after_ms, "delivery.table_compaction_cold_after_ms", 0,
             kMaxInt)},
  };
  const Keys kinesis = {
      {"iterator_ttl_ms", r.Int(&c.iterator_ttl_ms, "kinesis.iterator_ttl_ms", 1, kMaxInt)},
  };
  const Keys iceberg = {
      {"default_warehouse", r.Str(&c.iceberg_default_warehouse, "iceberg.default_warehouse")},
  };
  const Keys console = {
      {"enabled", r.Bool(&c.console, "console.enabled")},
      {"session_seconds",
       r.Int(&c.console_session_seconds, "console.session_seconds", 60, 30ll * 86400)},
  };
  const Keys scaleout = {
      {"pg", r.Str(&c.pg, "scaleout.pg")},
      {"lease_ms", r.Int(&c.lease_ms, "scaleout.lease_ms", 100, kMaxInt)},
      {"renew_ms", r.Int(&c.lease_renew_ms, "scaleout.renew_ms", 10, kMaxInt)},
      {"take_ms", r.Int(&c.lease_take_ms, "scaleout.take_ms", 10, kMaxInt)},
      {"source", r.Str(&c.source, "scaleout.source")},
      {"registry", r.Str(&c.registry, "scaleout.registry")},
      {"pace_reads", r.OptBool(&c.pace_reads, "scaleout.pace_reads")},
  };
  const Keys worker = {
      {"listen", r.Str(&c.worker_listen, "worker.listen")},
      {"data_dir", r.Str(&c.worker_data_dir, "worker.data_dir")},
  };
  const Keys limits = {
      {"shard_limit", r.Int(&c.shard_limit, "limits.shard_limit", 1, UINT32_MAX)},
      {"on_demand_stream_limit",
       r.Int(&c.on_demand_stream_limit, "limits.on_demand_stream_limit", 0, UINT32_MAX)},
  };
  const std::vector<std::pair<std::string, const Keys*>> sections = {
      {"storage", &storage},   {"server", &server},
      {"auth", &auth},         {"s3", &s3},
      {"delivery", &delivery}, {"kinesis", &kinesis},
      {"iceberg", &iceberg},   {"console", &console},
      {"limits", &limits},     {"scaleout", &scaleout},
      {"worker", &worker}};

  // [[credentials]]: an array of tables, each with both keys.
  auto credentials = [&](const toml::node& n) -> Status {
    const auto* arr = n.as_array();
    if (!arr || !arr->is_array_of_tables()) {
      return r.Error(n.source(),
                     "credentials must be an array of tables: write each key as [[credentials]] "
                     "(double brackets), not [credentials]");
    }
    for (const auto& e : *arr) {
      std::string ak, sk;
      RETURN_IF_ERROR(
          r.Apply(*e.as_table(), "[[credentials]]",
                  {{"access_key_id", r.Str(&ak, "credentials.access_key_id")},
                   {"secret_access_key", r.Str(&sk, "credentials.secret_access_key")}}));
      if (ak.empty() || sk.empty()) {
        return r.Error(e.source(),
                       "[[credentials]] needs a non-empty access_key_id and secret_access_key");
      }
      c.credentials[ak] = sk;
    }
    return Status::OK();
  };
  Keys top = {
      {"data_dir", r.Str(&c.data_dir, "data_dir")},
      {"listen", r.Str(&c.listen, "listen")},
      {"region", r.Str(&c.region, "region")},
      {"account", r.Str(&c.account, "account")},
      {"log_level", r.Str(&c.log_level, "log_level")},
      {"aws_strict", r.Bool(&c.aws_strict, "aws_strict")},
      {"credentials", credentials},
  };
  for (const auto& [name, keys] : sections) {
    top.emplace_back(name, [&r, name = name, keys = keys](const toml::node& n) -> Status {
      const auto* tab = n.as_table();
      if (!tab) return r.Error(n.source(), fmt::format("{} must be a section ([{}])", name, name));
      return r.Apply(*tab, "[" + name + "]", *keys);
    });
  }
  RETURN_IF_ERROR(r.Apply(t, "the top level", top));
  return c;
}

bool ValidLogLevel(std::string_view level) {
  for (std::string_view l : {"trace", "debug", "info", "warn", "error", "off"}) {
    if (level == l) return true;
  }
  return false;
}

Status Validate(const Config& c) {
  if (!ValidLogLevel(c.log_level)) {
    return InvalidArgument("log level '" + c.log_level +
                           "' is not one of trace, debug, info, warn, error, off");
  }
  if (!ValidRegion(c.region)) {
    return InvalidArgument("region '" + c.region +
                           "' is not a region name (lower-case letters, digits and single "
                           "dashes, starting with a letter, e.g. us-east-1)");
  }
  if (!c.s3_region.empty() && !ValidRegion(c.s3_region)) {
    return InvalidArgument("s3.region '" + c.s3_region + "' is not a region name");
  }
  RETURN_IF_ERROR(ParseListen(c.listen, nullptr, nullptr));
  if (Status st = ParseListen(c.worker_listen, nullptr, nullptr); !st.ok()) {
    return InvalidArgument("worker.listen: " + st.message());
  }
  if (c.tls_cert.empty() != c.tls_key.empty()) {
    return InvalidArgument(
        "TLS needs both server.tls_cert (--tls-cert) and server.tls_key (--tls-key)");
  }
  if (c.account.size() != 12) return InvalidArgument("account must have 12 digits");
  for (char ch : c.account) {
    if (ch < '0' || ch > '9') return InvalidArgument("account must have 12 digits");
  }
  if (c.segment_bytes < 4096) return InvalidArgument("storage.segment_bytes must be >= 4096");
  if (!c.pg.empty() && c.lease_ms < 2 * c.lease_renew_ms) {
    return InvalidArgument(
        "scaleout.lease_ms must be at least twice scaleout.renew_ms (a lease must survive one "
        "missed renewal)");
  }
  if (c.commit_threads == 0 || c.commit_threads > 64) {
    return InvalidArgument("storage.commit_threads must be 1..64");
  }
  return Status::OK();
}

}  // namespace icestream::server
