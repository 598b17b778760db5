// Server wiring.
#include "server/server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/crypto.h"
#include "common/fs.h"
#include "common/sqlite.h"
#include "console/console.h"
#include "delivery/channel_manager.h"
#include "delivery/sqlite_delivery_store.h"
#include "delivery/table/table_sink.h"
#include "http/server.h"
#include "iceberg/warehouses.h"
#include "kinesis/api.h"
#include "metrics/request_metrics.h"
#include "metrics/stream_metrics.h"
#include "objectstore/object_store.h"
#include "scaleout/pool.h"
#include "server/catalog_wiring.h"
#include "server/data_dir_lock.h"
#include "server/delivery_wiring.h"
#include "server/router.h"
#include "server/surface_auth.h"
#include "server/task_thread.h"
#include "source/local/local_source.h"
#include "stream/model.h"
#include "stream/stream_manager.h"

namespace icestream::server {

struct IcestreamServer::Parts {
  Config config;
  std::unique_ptr<DataDirLock> lock;  // first in, last out
  std::unique_ptr<Database> db;
  std::unique_ptr<scaleout::Pool> pool;  // --pg: outlives the catalog and the channels
  std::unique_ptr<stream::StreamManager> streams;
  std::unique_ptr<metrics::StreamMetrics> stream_metrics;
  std::unique_ptr<metrics::RequestMetrics> request_metrics;
  std::shared_ptr<objectstore::ObjectStore> buckets;
  std::unique_ptr<CatalogServices> catalog;  // Iceberg REST catalog, Glue schema registry
  std::unique_ptr<source::LocalSourceProvider> sources;  // channels read the shard logs
  // Channels use the catalog's warehouses and registry: declared after it, destroyed first.
  std::unique_ptr<delivery::ChannelManager> channels;
  std::unique_ptr<kinesis::KinesisApi> kinesis;
  std::unique_ptr<console::Console> console;  // uses everything above
  std::unique_ptr<aws::Authenticator> auth;
  std::unique_ptr<SurfaceAuth> surface_auth;
  // Large CBOR transcodes (Router::SetOffload); outlives the router and the HTTP server.
  std::unique_ptr<TaskThread> offload;
  std::unique_ptr<Router> router;
  std::unique_ptr<http::Server> http;
  std::atomic<http::Server*> http_raw{nullptr};
  bool stopped = false;
};

namespace {

// A random secret kept in meta.db: it keys shard iterators and NextTokens so they stay
// valid across restarts and cannot be forged.
Result<std::string> TokenSecret(Database* db) {
  RETURN_IF_ERROR(db->Exec(
      "CREATE TABLE IF NOT EXISTS server_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"));
  ASSIGN_OR_RETURN(auto rows,
                   db->Query("SELECT value FROM server_meta WHERE key = 'token_secret'"));
  if (!rows.empty()) return AsText(rows[0][0]);
  uint8_t b[32];
  crypto::RandomBytes(b, sizeof b);
  std::string secret = crypto::Hex(b, sizeof b);
  RETURN_IF_ERROR(
      db->Query("INSERT INTO server_meta(key, value) VALUES ('token_secret', ?1)", {secret})
          .status());
  return secret;
}

// The streams as the metrics exposition needs them.
std::vector<metrics::StreamView> LiveStreams(const stream::StreamManager& streams) {
  std::vector<metrics::StreamView> out;
  for (const auto& info : streams.ListStreams()) {
    metrics::StreamView v;
    v.uid = info.uid;
    v.name = info.name;
    for (const auto& s : info.shards) v.shards.push_back({s.index, stream::ShardIdString(s.index)});
    v.shard_level_metrics = info.shard_level_metrics;
    out.push_back(std::move(v));
  }
  return out;
}

// The web console and the figures it reads that no public API has (console/console.h).
void AddConsole(IcestreamServer::Parts* p, const std::string& internal_token) {
  console::ConsoleOptions o;
  o.version = ICESTREAM_VERSION;
  o.region = p->config.region;
  o.account = p->config.account;
  o.default_warehouse = p->config.iceberg_default_warehouse;
  o.internal_token = internal_token;
  o.sessions.credentials = p->config.credentials;
  o.sessions.bearer_tokens = p->config.bearer_tokens;
  o.sessions.ttl_ms = p->config.console_session_seconds * 1000;
  console::ConsoleBackend b;
  Router* router = p->router.get();
  b.dispatch = [router](std::shared_ptr<http::Request> req, http::Responder respond) {
    router->Handle(std::move(req), std::move(respond));
  };
  kinesis::KinesisApi* k = p->kinesis.get();
  b.kinesis_knows = [k](std::string_view op) { return k->Knows(op); };
  stream::StreamManager* sm = p->streams.get();
  metrics::StreamMetrics* sms = p->stream_metrics.get();
  b.stream_rates = [sm, sms](const std::string& name) -> Result<nlohmann::json> {
    ASSIGN_OR_RETURN(stream::StreamInfo info, sm->Describe(name));
    metrics::StreamRates r = sms->IncomingRates(info.uid);
    nlohmann::json shards = nlohmann::json::array();
    for (const auto& s : r.shards) {
      shards.push_back({{"shard_id", stream::ShardIdString(s.shard)},
                        {"bytes", s.bytes},
                        {"records", s.records}});
    }
    return nlohmann::json{{"stream", info.name},
                          {"first_minute_ms", r.first_minute_ms},
                          {"minutes", r.minutes},
                          {"shards", shards}};
  };
  metrics::RequestMetrics* requests = p->request_metrics.get();
  b.recent_errors = [requests] { return requests->RecentErrors(); };
  delivery::ChannelManager* channels = p->channels.get();
  objectstore::ObjectStore* buckets = p->buckets.get();
  b.dlq_location = [channels, buckets](const std::string& arn) -> Result<console::DlqLocation> {
    ASSIGN_OR_RETURN(delivery::ChannelConfig c, channels->Describe(arn));
    ASSIGN_OR_RETURN(std::string bucket, objectstore::BucketFromArn(c.dlq.bucket_arn));
    return console::DlqLocation{buckets, bucket, c.dlq.error_output_prefix, c.id};
  };
  CatalogServices* catalog = p->catalog.get();
  iceberg::Warehouses* wh = catalog->warehouses();
  b.warehouses = [catalog] { return catalog->KnownWarehouses(); };
  b.bucket_name = [wh](std::string_view w) { return wh->BucketName(w); };
  b.catalog = [wh](const std::string& bucket) { return wh->CatalogFor(bucket); };
  b.io = [wh](const std::string& bucket) { return wh->Io(bucket); };
  p->console =
      std::make_unique<console::Console>(std::move(o), std::move(b), SystemClock::Default());
  console::Console* c = p->console.get();
  p->router->AddPath({"/console",
                      [c](std::shared_ptr<http::Request> req, http::Responder respond) {
                        c->Handle(std::move(req), std::move(respond));
                      },
                      /*with_target=*/true});
  p->router->SetRootRedirect("/console/");
}

// One info line per request: "access <client> <method> <path> <operation or -> <status>
// <response bytes> B <ms> ms".
http::Handler WithAccessLog(http::Handler inner) {
  return [inner = std::move(inner)](std::shared_ptr<http::Request> req, http::Responder respond) {
    int64_t start = MonotonicNanos();
    std::string line =
        fmt::format("access {} {} {} {}", req->remote_address, req->method, req->path,
                    req->HasHeader("x-amz-target") ? std::string(req->GetHeader("x-amz-target"))
                                                   : std::string("-"));
    inner(std::move(req),
          [respond = std::move(respond), line = std::move(line), start](http::Response r) {
            spdlog::info("{} {} {} B {:.1f} ms", line, r.status, r.body.size(),
                         static_cast<double>(MonotonicNanos() - start) / 1e6);
            respond(std::move(r));
          });
  };
}

// Every open shard holds its active segment file open, so the process's descriptor limit
// (ulimit -n, raised to the hard limit at start) bounds the shards it can serve beside its
// connections and sealed-segment files. A shard_limit beyond that is announced at start;
// CreateStream and resharding then answer LimitExceededException when the descriptors
// would not suffice (StreamManager checks before opening any shard).
void WarnAboutShardLimit(const Config& config) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return;
  uint64_t files = rl.rlim_cur;
  uint64_t reserved = std::min<uint64_t>(config.max_open_segment_files, files / 4) +
                      std::min<uint64_t>(config.max_connections, files / 4) + 128;
  uint64_t fit = files > reserved ? files - reserved : 0;
  if (fit >= config.shard_limit) return;
  spdlog::warn(
      "shard_limit {} is more than the process can open: it may open {} files (ulimit -n) and "
      "keeps about {} for connections, sealed segments and itself, so about {} shards fit; "
      "CreateStream answers LimitExceededException beyond what the descriptors allow (raise "
      "ulimit -n to serve more)",
      config.shard_limit, files, reserved, fit);
}

}  // namespace

IcestreamServer::IcestreamServer(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

IcestreamServer::~IcestreamServer() { Stop(); }

Result<std::unique_ptr<IcestreamServer>> IcestreamServer::Start(const Config& config) {
  RETURN_IF_ERROR(Validate(config));
  auto p = std::make_unique<Parts>();
  p->config = config;
  RETURN_IF_ERROR(fs::MakeDirs(config.data_dir));
  ASSIGN_OR_RETURN(p->lock, DataDirLock::Acquire(config.data_dir));
  ASSIGN_OR_RETURN(p->db, Database::Open(fs::Join(config.data_dir, "meta.db")));
  ASSIGN_OR_RETURN(std::string secret, TokenSecret(p->db.get()));

  stream::StreamManagerOptions so;
  so.data_dir = config.data_dir;
  so.region = config.region;
  so.account = config.account;
  so.log.fsync = config.fsync;
  so.enforce_shard_limits = config.aws_strict;
  so.log.cache_window_bytes = config.page_cache_window_bytes;
  so.log.segment_bytes = config.segment_bytes;
  so.log.segment_ms = config.segment_ms;
  so.log.index_interval_bytes = config.index_interval_bytes;
  so.commit_threads = config.commit_threads;
  so.retention_check_interval_ms = config.retention_check_interval_ms;
  so.shard_limit = config.shard_limit;
  WarnAboutShardLimit(config);
  so.on_demand_stream_limit = config.on_demand_stream_limit;
  so.max_open_segment_files = config.max_open_segment_files;
  ASSIGN_OR_RETURN(p->streams,
                   stream::StreamManager::Open(so, SystemClock::Default(), p->db.get()));

  p->buckets = MakeBuckets(config);
  kinesis::KinesisOptions ko;
  ko.region = config.region;
  ko.account = config.account;
  ko.aws_strict = config.aws_strict;
  ko.iterator_ttl_ms = config.iterator_ttl_ms;
  ko.next_token_ttl_ms = config.iterator_ttl_ms;
  ko.subscription_threads = config.subscription_threads;
  Parts* raw = p.get();
  auto post = [raw](std::function<void()> fn) {
    if (auto* h = raw->http_raw.load()) {
      h->Post(std::move(fn));
    } else {
      fn();
    }
  };
  p->kinesis = std::make_unique<kinesis::KinesisApi>(ko, p->streams.get(), SystemClock::Default(),
                                                     secret, post);
  p->stream_metrics = std::make_unique<metrics::StreamMetrics>(SystemClock::Default());
  p->request_metrics = std::make_unique<metrics::RequestMetrics>();
  p->kinesis->SetMetrics(p->stream_metrics.get());

  aws::AuthenticatorOptions auth_options;
  auth_options.secrets = config.credentials;
  auth_options.region = config.region;
  p->auth = std::make_unique<aws::Authenticator>(auth_options);
  // The console's dispatches into the router carry this token (never sent anywhere).
  uint8_t token_bytes[32];
  crypto::RandomBytes(token_bytes, sizeof token_bytes);
  std::string internal_token = crypto::Hex(token_bytes, sizeof token_bytes);
  p->surface_auth = std::make_unique<SurfaceAuth>(p->auth.get(), config.bearer_tokens,
                                                  config.public_metrics, internal_token);
  p->router = std::make_unique<Router>(p->auth.get());
  p->router->SetInternalToken(internal_token);
  metrics::RequestMetrics* requests = p->request_metrics.get();
  p->router->SetObserver([requests](const CallRecord& c) {
    requests->Observe(c.service, c.operation, c.error_code, c.http_status, c.message, c.latency_ns,
                      SystemClock::Default()->NowMillis());
  });
  p->offload = std::make_unique<TaskThread>("cbor-offload");
  p->router->SetOffload(
      [t = p->offload.get()](std::function<void()> task) { t->Post(std::move(task)); });
  kinesis::KinesisApi* k = p->kinesis.get();
  // Kinesis speaks JSON 1.1 and CBOR, and reports authentication failures in AWS's
  // order (after the body's type and model checks).
  JsonService kinesis_service{"Kinesis_20131202.", "kinesis", aws::ErrorFlavor::kKinesis,
                              [k](std::string_view op) { return k->Knows(op); }, nullptr};
  kinesis_service.cbor = &kinesis::KinesisApi::CborModel();
  kinesis_service.cbor_itself = [](std::string_view op) {
    return kinesis::KinesisApi::DecodesCborItself(op);
  };
  kinesis_service.handle_auth = [k](std::string_view op, std::shared_ptr<http::Request> req,
                                    http::Responder respond, JsonService::AuthResult auth_error) {
    k->Handle(op, std::move(req), std::move(respond), std::move(auth_error));
  };
  p->router->AddService(std::move(kinesis_service));
  SurfaceAuth* surface = p->surface_auth.get();
  p->router->AddPath(
      {"/metrics", [raw, surface](std::shared_ptr<http::Request> req, http::Responder respond) {
         if (auto denied = surface->CheckMetrics(*req)) return respond(MetricsDenied(*denied));
         http::Response r;
         r.SetHeader("Content-Type", "text/plain; version=0.0.4");
         r.body = raw->channels ? raw->channels->PrometheusText() : std::string();
         r.body += raw->stream_metrics->PrometheusText(LiveStreams(*raw->streams));
         r.body += raw->request_metrics->PrometheusText();
         respond(std::move(r));
       }});
  stream::StreamManager* sm = p->streams.get();
  p->router->AddPath(
      {"/health", [sm, raw](std::shared_ptr<http::Request>, http::Responder respond) {
         // 200 either way (the server serves); "degraded" lists the shards
         // that do not, the channels whose deliveries are failing and the
         // FAILED ones, and why.
         http::Response r;
         r.SetHeader("Content-Type", "application/json");
         auto problems = sm->Problems();
         std::vector<delivery::ChannelManager::Unhealthy> failing;
         if (raw->channels) failing = raw->channels->FailingChannels();
         if (problems.empty() && failing.empty()) {
           r.body = R"({"status":"ok"})";
         } else {
           nlohmann::json list = nlohmann::json::array();
           for (const auto& pr : problems) {
             list.push_back({{"stream", pr.stream}, {"shard", pr.shard}, {"reason", pr.reason}});
           }
           nlohmann::json body = {{"status", "degraded"}, {"shards", list}};
           if (!failing.empty()) body["channels"] = UnhealthyChannelsJson(failing);
           r.body = body.dump();
         }
         respond(std::move(r));
       }});

  // Scale-out: channels, checkpoints, leases and the catalog in PostgreSQL; this server's
  // delivery is one worker of the pool.
  std::function<Result<std::shared_ptr<iceberg::CatalogStore>>(const std::string&)> rows;
  if (!config.pg.empty()) {
    scaleout::PoolOptions po;
    po.conninfo = config.pg;
    po.leases.lease_ms = config.lease_ms;
    po.leases.renew_ms = config.lease_renew_ms;
    po.leases.take_ms = config.lease_take_ms;
    po.leases.listen = config.listen;
    ASSIGN_OR_RETURN(p->pool, scaleout::Pool::Join(po));
    scaleout::Pool* pool = p->pool.get();
    rows = [pool](const std::string& w) { return pool->CatalogRows(w); };
  }
  ASSIGN_OR_RETURN(p->catalog, CatalogServices::Start(
                                   config, p->db.get(), p->router.get(), p->surface_auth.get(),
                                   config.s3_endpoint.empty() ? nullptr : p->buckets, rows));

  // Channels: S3 buckets and streaming tables (the catalog's warehouses and registry).
  delivery::ChannelManagerOptions co = ChannelOptions(config);
  delivery::table::TableServices ts = TableServicesOf(p->catalog->warehouses());
  ts.registry = p->catalog->registry();
  std::unique_ptr<delivery::DeliveryStore> delivery_store;
  if (p->pool) {
    scaleout::Pool* pool = p->pool.get();
    co.coordinator = pool->leases();
    ts.fence_for = [pool](const delivery::ChannelConfig& c) { return pool->FenceFor(c.id); };
    ts.staging = pool->MakeStagingStore();
    delivery_store = pool->MakeDeliveryStore();
  } else {
    ASSIGN_OR_RETURN(delivery_store,
                     delivery::SqliteDeliveryStore::Open(p->db.get(), source::LegacyPosition));
  }
  p->sources = std::make_unique<source::LocalSourceProvider>(p->streams.get());
  ASSIGN_OR_RETURN(p->channels,
                   delivery::ChannelManager::Open(
                       co, p->sources.get(), std::move(delivery_store), p->buckets,
                       MakeDestinations(config, std::move(ts)), SystemClock::Default()));
  // Retention keeps what channels still have to read.
  delivery::ChannelManager* cm = p->channels.get();
  p->streams->SetRetentionFloor([cm](uint64_t uid, uint32_t shard) {
    return source::LocalSourceProvider::RetentionFloor(
        cm->NeededPosition(uid, stream::ShardIdString(shard)));
  });
  p->kinesis->SetChannels(p->channels.get());
  if (config.console) AddConsole(p.get(), internal_token);

  http::ServerOptions ho;
  ho.host = config.host();
  ho.port = config.port();
  ho.threads = config.io_threads ? config.io_threads
                                 : std::max<size_t>(2, std::thread::hardware_concurrency());
  ho.max_connections = config.max_connections;
  ho.idle_timeout_seconds = config.idle_timeout_seconds;
  ho.first_byte_timeout_seconds = config.first_byte_timeout_seconds;
  ho.max_request_bytes_in_flight = config.max_request_bytes_in_flight;
  ho.body_wait_seconds = config.body_wait_seconds;
  ho.h2_connection_budget_bytes = config.http2_connection_budget_bytes;
  ho.tls_cert_file = config.tls_cert;
  ho.tls_key_file = config.tls_key;
  Router* router = p->router.get();
  http::Handler handler = [router](std::shared_ptr<http::Request> req, http::Responder respond) {
    router->Handle(std::move(req), std::move(respond));
  };
  if (config.access_log) handler = WithAccessLog(std::move(handler));
  ASSIGN_OR_RETURN(p->http, http::Server::Start(ho, std::move(handler)));
  p->http_raw.store(p->http.get());
  return std::unique_ptr<IcestreamServer>(new IcestreamServer(std::move(p)));
}

uint16_t IcestreamServer::port() const { return parts_->http->port(); }

void IcestreamServer::Stop() {
  if (!parts_ || parts_->stopped) return;
  parts_->stopped = true;
  // Order matters: stop taking requests (in-flight ones are answered, which needs the
  // log threads), then flush and close the logs.
  if (parts_->http) parts_->http->Stop();
  parts_->http_raw.store(nullptr);
  if (parts_->offload) parts_->offload->Stop();
  // SubscribeToShard threads read the logs: end them before the logs close.
  if (parts_->kinesis) parts_->kinesis->StopSubscriptions();
  // Deliveries waiting on an object store that does not answer end now (they replay
  // after the restart) instead of holding the stop for minutes.
  if (parts_->buckets) parts_->buckets->Abort();
  if (parts_->channels) parts_->channels->Stop();
  // Delivery stopped: the leases go back to the pool at once (no wait for their expiry).
  if (parts_->pool) parts_->pool->Leave(/*handoff=*/true);
  // Until the stream manager stops, retention must not delete what channels still need,
  // and the channels are about to go: keep everything.
  if (parts_->streams)
    parts_->streams->SetRetentionFloor([](uint64_t, uint32_t) { return uint64_t{0}; });
  if (parts_->streams) parts_->streams->Stop();
}

}  // namespace icestream::server
