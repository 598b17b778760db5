// Console: the web console at /console (a single-page app compiled into the binary) and
// the JSON endpoints under /console/api/ it reads (docs/console.md lists each):
//
//   session, login, logout      sign-in (session.h)
//   aws                         POST: a Kinesis or Glue call (X-Amz-Target), dispatched
//                               into the server's own router as the console
//   iceberg/..., metrics, health   GET: the REST catalog, /metrics, /health, likewise
//   info, errors                the server's version, region, feature flags (operations
//                               the Kinesis API knows), warehouses; recent API errors
//   streams/{name}/rates        the per-minute incoming ring of a stream's shards
//   channels/dlq?arn=           a channel's dead-letter queue lines, read from its bucket
//   tables/files, tables/rows   a snapshot's live files and sample rows (table_view.h)
//
// What the public APIs answer goes through them unchanged; the read-only endpoints
// exist only where no public API has the figure. Every API answer is no-store; every
// page carries a strict Content-Security-Policy (no inline script or style).
//
// Thread-safety: Handle may run on any I/O thread. Endpoints that read objects (DLQ
// lines, table files and rows) run on the console's own worker thread, so that a large
// file never holds an I/O thread. Lifetime: the backend's objects must outlive it.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "console/session.h"
#include "http/message.h"
#include "iceberg/catalog.h"
#include "iceberg/file_io.h"
#include "metrics/request_metrics.h"
#include "objectstore/object_store.h"

namespace icestream::console {

// Where a channel's dead-letter queue objects are.
struct DlqLocation {
  objectstore::ObjectStore* store = nullptr;
  std::string bucket;
  std::string prefix;      // ErrorOutputPrefix
  std::string channel_id;  // DLQ object names start with it after the date folders
};

// What the console reads that has no public API, wired by server/ (so that the console
// depends on neither delivery/ nor the stream manager).
struct ConsoleBackend {
  // Hands a request to the server's router; the console sets the in-process token
  // (ConsoleOptions::internal_token) as its bearer credential.
  http::Handler dispatch;
  std::function<bool(std::string_view operation)> kinesis_knows;
  // {"stream", "first_minute_ms", "minutes", "shards": [{"shard_id", "bytes": [...],
  //  "records": [...]}]}: the stream's incoming ring (metrics::StreamRates).
  std::function<Result<nlohmann::json>(const std::string& stream)> stream_rates;
  std::function<std::vector<metrics::ApiError>()> recent_errors;
  std::function<Result<DlqLocation>(const std::string& channel_arn)> dlq_location;
  std::function<std::vector<std::string>()> warehouses;  // table bucket names
  std::function<Result<std::string>(std::string_view name_or_arn)> bucket_name;
  std::function<Result<iceberg::Catalog*>(const std::string& bucket)> catalog;
  std::function<Result<const iceberg::FileIO*>(const std::string& bucket)> io;
};

struct ConsoleOptions {
  std::string version;
  std::string region;
  std::string account;
  std::string default_warehouse;
  // The credential the router and the catalog/metrics checks accept from the console's
  // dispatches (never sent over the network).
  std::string internal_token;
  SessionOptions sessions;
};

class Console {
 public:
  Console(ConsoleOptions options, ConsoleBackend backend, const Clock* clock);
  ~Console();
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;

  // Any request whose path starts with /console.
  void Handle(std::shared_ptr<http::Request> req, http::Responder respond);

 private:
  void Api(std::string_view rest, std::shared_ptr<http::Request> req, http::Responder respond,
           const std::optional<Session>& session);
  void Dispatch(std::shared_ptr<http::Request> inner, http::Responder respond);
  void Info(http::Responder respond);
  // Runs `job` on the worker thread.
  void Submit(std::function<void()> job);
  void WorkerLoop();

  const ConsoleOptions options_;
  const ConsoleBackend backend_;
  const Clock* clock_;
  SessionStore sessions_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread worker_;
};

// The headers every console answer carries (CSP, nosniff, no framing, no referrer).
void AddSecurityHeaders(http::Response* r);

}  // namespace icestream::console
