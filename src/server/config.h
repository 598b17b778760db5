// Server configuration: defaults (the embedded mode), a TOML file, then command-line
// flags, in that order of precedence (docs/operations.md lists every key).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace icestream::server {

struct Config {
  std::string data_dir = "./icestream-data";
  std::string listen = "127.0.0.1:4567";
  std::string region = "us-east-1";
  std::string account = "000000000000";
  // Access key id → secret. Empty: any well-formed signature is accepted.
  std::map<std::string, std::string> credentials;
  // [auth]: bearer tokens accepted by the Iceberg REST catalog and /metrics; whether
  // /metrics stays open although credentials or tokens are configured.
  std::vector<std::string> bearer_tokens;
  bool public_metrics = false;
  std::string log_level = "info";
  bool aws_strict = false;

  // Storage.
  bool fsync = true;
  uint64_t page_cache_window_bytes = 64ull << 20;
  uint64_t segment_bytes = 128ull << 20;
  int64_t segment_ms = 3600 * 1000;
  uint64_t index_interval_bytes = 64 << 10;
  size_t commit_threads = 4;
  int64_t retention_check_interval_ms = 60 * 1000;
  size_t max_open_segment_files = 512;  // descriptors of sealed segments kept open

  // Serving.
  size_t io_threads = 0;           // 0 = one per core (at least 2)
  size_t max_connections = 4096;   // further connections wait in the listen backlog
  int idle_timeout_seconds = 300;  // a keep-alive connection idle this long is closed
  // A new connection's first bytes, its TLS handshake and a request header once begun
  // must arrive within this many seconds (slow or silent clients hold connection slots).
  int first_byte_timeout_seconds = 10;
  // Request-body bytes held at once, all connections together; a body that waits longer
  // than body_wait_seconds for room is answered 503.
  uint64_t max_request_bytes_in_flight = 256ull << 20;
  int body_wait_seconds = 10;
  // Bytes one HTTP/2 connection holds for its peer at most (request bodies, answers and
  // events it has not read yet).
  uint64_t http2_connection_budget_bytes = 64ull << 20;
  // Threads that push SubscribeToShard events for all subscriptions (0: one per core).
  size_t subscription_threads = 0;
  bool access_log = false;  // one info line per request
  // TLS on the listening port (PEM files; both or neither). With them the port takes
  // HTTPS (ALPN h2, http/1.1) beside plaintext HTTP/1.1 and h2c.
  std::string tls_cert;
  std::string tls_key;
  // Lifetime of shard iterators and NextTokens (AWS: 300 s). Tests shorten it.
  int64_t iterator_ttl_ms = 300 * 1000;

  // Object store for delivery destinations. Empty: buckets are folders
  // DATA_DIR/buckets/<bucket>/ (embedded). Otherwise an S3-compatible endpoint; credentials
  // come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN.
  std::string s3_endpoint;
  std::string s3_region;  // default: region
  bool s3_path_style = true;
  uint64_t s3_multipart_threshold = 16ull << 20;
  int s3_request_timeout_ms = 120000;
  int s3_max_attempts = 8;
  int s3_retry_budget_ms = 10000;

  // Delivery engine.
  size_t delivery_workers = 2;
  uint64_t delivery_max_batch_bytes = 32ull << 20;
  int64_t delivery_tick_ms = 50;
  // A channel whose destination stays unreachable this long after CreateChannel FAILS.
  int64_t delivery_activation_timeout_ms = 10 * 60 * 1000;
  // A missing destination (bucket, table bucket, table) or refused access is retried this
  // long, at activation and during delivery, before the channel FAILS.
  int64_t delivery_destination_grace_ms = 5 * 60 * 1000;
  // A DLQ redrive batch holds at most this many records.
  int64_t delivery_redrive_batch_records = 5000;
  // Streaming tables: data files are cut at this size; one commit takes at most this
  // many record bytes (all shards); records are converted on this many threads.
  int64_t table_target_file_bytes = 128ll << 20;
  uint64_t table_max_commit_bytes = 128ull << 20;
  int table_convert_threads = 2;
  // Table upkeep: snapshot age limit (written as the table's
  // history.expire.max-snapshot-age-ms), how often expiry runs, when an unreferenced file
  // of a failed attempt may be deleted.
  int64_t table_snapshot_max_age_ms = 60ll * 60 * 1000;
  int64_t table_expire_interval_ms = 5ll * 60 * 1000;
  int64_t table_orphan_age_ms = 60ll * 60 * 1000;
  // Inline compaction of table channels, and when a partition that receives nothing is
  // finished off.
  bool table_compaction = true;
  int64_t table_compaction_cold_after_ms = 10ll * 60 * 1000;

  // Iceberg REST catalog: the table bucket (warehouse) that clients reach without a
  // prefix (GET /iceberg/v1/namespaces without ?warehouse in /v1/config).
  std::string iceberg_default_warehouse = "default";

  // The web console at /console ("/" redirects there) and how long a sign-in lasts
  // (docs/console.md).
  bool console = true;
  int64_t console_session_seconds = 12 * 3600;
  // Scale-out ([scaleout], docs/scale-out.md). pg: a PostgreSQL conninfo or URI; set, the
  // channels, checkpoints, leases and the Iceberg catalog live there and this process is
  // one worker of the pool. Leases last lease_ms on the database clock, are renewed every
  // renew_ms and free ones taken every take_ms.
  std::string pg;
  int64_t lease_ms = 10000;
  int64_t lease_renew_ms = 2000;
  int64_t lease_take_ms = 3000;
  // `icestream worker`: the Kinesis endpoint channels read, and the Glue API the table
  // channels' schemas are read from (default: the source).
  std::string source;
  std::string registry;
  // Pace reads of the source to AWS's 2 MiB/s per shard as well as its 5 calls/s (unset:
  // on for *.amazonaws.com sources; set it for an endpoint that enforces AWS's limits,
  // such as `icestream serve --aws-strict`).
  std::optional<bool> pace_reads;
  // [worker]: `icestream worker`'s own address of /metrics and /health and its data
  // directory. A worker never takes the top-level `listen` and `data_dir`: they are
  // serve's, and a pool's processes often share one file.
  std::string worker_listen = "127.0.0.1:4568";
  std::string worker_data_dir = "./icestream-worker-data";

  // Account limits (DescribeLimits).
  uint32_t shard_limit = 20000;
  uint32_t on_demand_stream_limit = 50;

  std::string host() const;
  uint16_t port() const;
};

// Reads a TOML file over the defaults of `base`. Strict: a syntax error, an unknown
// section or key, a value of the wrong type or out of range, or `[credentials]` written
// as a table instead of `[[credentials]]` fails with a message naming the file and line.
Result<Config> LoadConfigFile(const std::string& path, Config base);
// Checks values and the listen address (and the log level).
Status Validate(const Config& c);
// HOST:PORT (HOST may be a name or [IPv6]); the port 0..65535. Either out may be null.
Status ParseListen(std::string_view listen, std::string* host, uint16_t* port);
// An AWS region name: lower-case letters, digits and single dashes, from a letter.
bool ValidRegion(std::string_view region);
// trace|debug|info|warn|error|off.
bool ValidLogLevel(std::string_view level);

}  // namespace icestream::server
