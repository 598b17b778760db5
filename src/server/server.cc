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
#include "delivery/channel_manager.h"
#include "delivery/sqlite_delivery_store.h"
#include "delivery/table/table_sink.h"
#include "http/server.h"
#include "iceberg/warehouses.h"
#include "kinesis/api.h"
#include "scaleout/pool.h"
#include "server/catalog_wiring.h"
#include "server/data_dir_lock.h"
#include "server/delivery_wiring.h"
#include "server/router.h"
#include "server/surface_auth.h"
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
  std::shared_ptr<objectstore::ObjectStore> buckets;
  std::unique_ptr<CatalogServices> catalog;  // Iceberg REST catalog, Glue schema registry
  std::unique_ptr<source::LocalSourceProvider> sources;  // channels read the shard logs
  // Channels use the catalog's warehouses and registry: declared after it, destroyed first.
  std::unique_ptr<delivery::ChannelManager> channels;
  std::unique_ptr<kinesis::KinesisApi> kinesis;
  std::unique_ptr<aws::Authenticator> auth;
  std::unique_ptr<SurfaceAuth> surface_auth;
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

  aws::AuthenticatorOptions auth_options;
  auth_options.secrets = config.credentials;
  auth_options.region = config.region;
  p->auth = std::make_unique<aws::Authenticator>(auth_options);
  p->surface_auth =
      std::make_unique<SurfaceAuth>(p->auth.get(), config.bearer_tokens, config.public_metrics);
  p->router = std::make_unique<Router>(p->auth.get());
  kinesis::KinesisApi* k = p->kinesis.get();
  // Kinesis speaks JSON 1.1 and CBOR, and reports authentication failures in AWS's
  // order (after the body's type and model checks).
  JsonService kinesis_service{"Kinesis_20131202.", "kinesis", aws::ErrorFlavor::kKinesis,
                              [k](std::string_view op) { return k->Knows(op); }, nullptr};
  kinesis_service.cbor = &kinesis::KinesisApi::CborModel();
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
         respond(std::move(r));
       }});
  stream::StreamManager* sm = p->streams.get();
  p->router->AddPath(
      {"/health", [sm, raw](std::shared_ptr<http::Request>, http::Responder respond) {
         // 200 either way (the server serves); "degraded" lists the shards
         // that do not and the channels whose deliveries are failing, and why.
         http::Response r;
         r.SetHeader("Content-Type", "application/json");
         auto problems = sm->Problems();
         std::map<std::string, int64_t> failing;
         if (raw->channels) failing = raw->channels->FailingChannels();
         if (problems.empty() && failing.empty()) {
           r.body = R"({"status":"ok"})";
         } else {
           nlohmann::json list = nlohmann::json::array();
           for (const auto& pr : problems) {
             list.push_back({{"stream", pr.stream}, {"shard", pr.shard}, {"reason", pr.reason}});
           }
           nlohmann::json body = {{"status", "degraded"}, {"shards", list}};
           if (!failing.empty()) {
             nlohmann::json channels = nlohmann::json::array();
             for (const auto& [name, since] : failing) {
               channels.push_back(
                   {{"channel", name}, {"failingSince", static_cast<double>(since) / 1000.0}});
             }
             body["channels"] = std::move(channels);
           }
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
  delivery::table::TableServices ts;
  iceberg::Warehouses* wh = p->catalog->warehouses();
  ts.bucket_name = [wh](std::string_view arn) { return wh->BucketName(arn); };
  ts.catalog = [wh](const std::string& bucket) { return wh->CatalogFor(bucket); };
  ts.io = [wh](const std::string& bucket) { return wh->Io(bucket); };
  ts.registry = p->catalog->registry();
  std::unique_ptr<delivery::DeliveryStore> delivery_store;
  if (p->pool) {
    scaleout::Pool* pool = p->pool.get();
    co.coordinator = pool->leases();
    ts.fence_for = [pool](const delivery::ChannelConfig& c) { return pool->FenceFor(c.id); };
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
  // SubscribeToShard threads read the logs: end them before the logs close.
  if (parts_->kinesis) parts_->kinesis->StopSubscriptions();
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
