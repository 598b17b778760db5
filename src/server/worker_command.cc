// `icestream worker`: one delivery worker of a scale-out pool. It reads the channels'
// streams from a Kinesis endpoint (an icestream server, kinesalite or AWS Kinesis), keeps
// channels, checkpoints and leases in PostgreSQL with every other worker, commits tables
// to the Iceberg JDBC catalog in the same database, and serves /metrics and /health.
// SIGTERM stops delivery and hands its leases over at once (docs/scale-out.md).
#include <signal.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/fs.h"
#include "common/logging.h"
#include "delivery/channel_manager.h"
#include "http/server.h"
#include "iceberg/warehouses.h"
#include "objectstore/local_store.h"
#include "scaleout/pool.h"
#include "server/commands.h"
#include "server/config.h"
#include "server/delivery_wiring.h"
#include "server/pool_registry.h"
#include "source/kinesis/kinesis_source.h"

namespace icestream::server {
namespace {

struct WorkerFlags {
  std::string config_file;
  std::string pg;
  std::string source;
  std::string source_ca_file;
  std::string registry;
  std::string s3_endpoint;
  std::string listen;
  std::string data_dir;
  std::string log_level;
};

// /metrics and /health of a worker (no other surface: channels are managed through the
// pool's server or `icestream channels --pg`).
http::Handler WorkerHandler(std::atomic<delivery::ChannelManager*>* channels,
                            const scaleout::LeaseManager* leases) {
  return [channels, leases](std::shared_ptr<http::Request> req, http::Responder respond) {
    http::Response r;
    delivery::ChannelManager* cm = channels->load();
    if (req->path == "/metrics") {
      r.SetHeader("Content-Type", "text/plain; version=0.0.4");
      if (cm) r.body = cm->PrometheusText();
      size_t held = 0;
      for (const auto& [channel, units] : leases->Held()) held += units.size();
      r.body +=
          "# HELP icestream_worker_leases Lease units this worker holds.\n"
          "# TYPE icestream_worker_leases gauge\n"
          "icestream_worker_leases " +
          std::to_string(held) + "\n";
      return respond(std::move(r));
    }
    if (req->path == "/health") {
      r.SetHeader("Content-Type", "application/json");
      nlohmann::json body = {{"status", "ok"}, {"worker", leases->owner()}};
      nlohmann::json held = nlohmann::json::object();
      for (const auto& [channel, units] : leases->Held()) {
        for (const auto& [unit, epoch] : units) held[channel][unit] = epoch;
      }
      body["leases"] = std::move(held);
      if (cm) {
        auto failing = cm->FailingChannels();
        if (!failing.empty()) {
          body["status"] = "degraded";
          body["channels"] = UnhealthyChannelsJson(failing);
        }
      }
      r.body = body.dump();
      return respond(std::move(r));
    }
    r.status = 404;
    r.SetHeader("Content-Type", "application/json");
    r.body =
        R"({"__type":"ResourceNotFoundException","message":"a worker serves /metrics and /health only"})";
    respond(std::move(r));
  };
}

int RunWorker(const WorkerFlags& f) {
  Config c;
  if (!f.config_file.empty()) {
    auto loaded = LoadConfigFile(f.config_file, c);
    if (!loaded.ok()) {
      std::cerr << "icestream: " << loaded.status().message() << "\n";
      return 2;
    }
    c = *loaded;
  }
  // The top-level `listen` and `data_dir` of a shared file are serve's (a worker beside
  // the server would try its port): a worker's are [worker] listen and data_dir, or flags.
  c.listen = f.listen.empty() ? c.worker_listen : f.listen;
  c.data_dir = f.data_dir.empty() ? c.worker_data_dir : f.data_dir;
  if (!f.pg.empty()) c.pg = f.pg;
  if (!f.source.empty()) c.source = f.source;
  if (!f.registry.empty()) c.registry = f.registry;
  if (!f.s3_endpoint.empty()) c.s3_endpoint = f.s3_endpoint;
  if (!f.log_level.empty()) c.log_level = f.log_level;
  if (c.pg.empty()) {
    std::cerr << "icestream: worker needs --pg (the pool's PostgreSQL conninfo)\n";
    return 2;
  }
  if (c.source.empty()) {
    std::cerr << "icestream: worker needs --source (the Kinesis endpoint URL the streams are "
                 "read from)\n";
    return 2;
  }
  if (Status st = Validate(c); !st.ok()) {
    std::cerr << "icestream: " << st.message() << "\n";
    return 2;
  }
  SetupLogging(c.log_level);
  sigset_t set = BlockStopSignals();
  if (Status st = fs::MakeDirs(c.data_dir); !st.ok()) {
    spdlog::error("cannot start: {}", st.ToString());
    return 1;
  }

  // The HTTP surface first: the pool records where each worker answers.
  std::atomic<delivery::ChannelManager*> channels{nullptr};
  std::atomic<const scaleout::LeaseManager*> leases_for_http{nullptr};
  http::ServerOptions ho;
  ho.host = c.host();
  ho.port = c.port();
  ho.threads = 1;
  ho.max_connections = 256;
  // The handler needs the lease manager, which needs the port: bind, then join.
  std::unique_ptr<scaleout::Pool> pool;
  std::string listen_at;
  auto http = http::Server::Start(
      ho,
      [&leases_for_http, &channels](std::shared_ptr<http::Request> req, http::Responder respond) {
        const scaleout::LeaseManager* l = leases_for_http.load();
        if (!l) {
          http::Response r;
          r.status = 503;
          r.body = R"({"status":"starting"})";
          return respond(std::move(r));
        }
        WorkerHandler(&channels, l)(std::move(req), std::move(respond));
      });
  if (!http.ok()) {
    spdlog::error("cannot listen on {}: {}", c.listen, http.status().ToString());
    return 1;
  }
  listen_at = c.host() + ":" + std::to_string((*http)->port());

  scaleout::PoolOptions po;
  po.conninfo = c.pg;
  po.leases.lease_ms = c.lease_ms;
  po.leases.renew_ms = c.lease_renew_ms;
  po.leases.take_ms = c.lease_take_ms;
  po.leases.listen = listen_at;
  auto joined = scaleout::Pool::Join(po);
  if (!joined.ok()) {
    spdlog::error("cannot join the pool: {}", joined.status().ToString());
    (*http)->Stop();
    return 1;
  }
  pool = std::move(*joined);
  leases_for_http.store(pool->leases());

  source::KinesisSourceOptions so;
  so.endpoint.url = c.source;
  so.endpoint.region = c.region;
  so.endpoint.credentials = source::CredentialsFromEnvironment();
  so.endpoint.ca_file = f.source_ca_file;
  so.pace_reads = c.pace_reads.value_or(source::PaceReadsFor(c.source));
  auto sources = source::KinesisSourceProvider::Make(so);
  auto versions = MakePoolRegistry(c, f.source_ca_file);
  if (!sources.ok() || !versions.ok()) {
    spdlog::error("cannot start: {}",
                  (!sources.ok() ? sources.status() : versions.status()).ToString());
    pool->Leave(true);
    (*http)->Stop();
    return 2;
  }

  std::shared_ptr<objectstore::ObjectStore> buckets = MakeBuckets(c);
  std::shared_ptr<objectstore::ObjectStore> table_buckets =
      c.s3_endpoint.empty()
          ? std::make_shared<objectstore::LocalObjectStore>(fs::Join(c.data_dir, "table-buckets"))
          : buckets;
  scaleout::Pool* p = pool.get();
  iceberg::Warehouses warehouses([p](const std::string& w) { return p->CatalogRows(w); },
                                 table_buckets.get(), SystemClock::Default(), c.region, c.account);
  delivery::table::TableServices ts = TableServicesOf(&warehouses);
  ts.versions = *versions;
  ts.fence_for = [p](const delivery::ChannelConfig& ch) { return p->FenceFor(ch.id); };
  ts.staging = p->MakeStagingStore();
  delivery::ChannelManagerOptions co = ChannelOptions(c);
  co.coordinator = pool->leases();
  auto cm =
      delivery::ChannelManager::Open(co, sources->get(), pool->MakeDeliveryStore(), buckets,
                                     MakeDestinations(c, std::move(ts)), SystemClock::Default());
  if (!cm.ok()) {
    spdlog::error("cannot start delivery: {}", cm.status().ToString());
    pool->Leave(true);
    (*http)->Stop();
    return 1;
  }
  channels.store(cm->get());
  spdlog::info(
      "icestream {} worker {} | reads {} | registry {} | /metrics and /health on http://{} | "
      "S3: {} | lease {} ms",
      ICESTREAM_VERSION, pool->leases()->owner(), c.source, PoolRegistryUrl(c), listen_at,
      c.s3_endpoint.empty() ? "folders in " + c.data_dir : c.s3_endpoint, c.lease_ms);
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("received {}, handing the leases over", sig == SIGINT ? "SIGINT" : "SIGTERM");
  (*cm)->Stop();
  pool->Leave(/*handoff=*/true);
  channels.store(nullptr);
  (*http)->Stop();
  cm->reset();
  spdlog::info("stopped cleanly");
  return 0;
}

}  // namespace

void AddWorkerCommand(CLI::App* app) {
  auto flags = std::make_shared<WorkerFlags>();
  auto* cmd = app->add_subcommand(
      "worker", "Run a delivery worker of a scale-out pool (PostgreSQL, any Kinesis endpoint)");
  cmd->add_option("--pg", flags->pg, "PostgreSQL conninfo of the pool ([scaleout] pg)");
  cmd->add_option("--source", flags->source,
                  "Kinesis endpoint URL the streams are read from (an icestream server, "
                  "kinesalite, https://kinesis.<region>.amazonaws.com) ([scaleout] source)");
  cmd->add_option("--source-ca-file", flags->source_ca_file,
                  "PEM bundle the source's and registry's TLS certificates are checked against");
  cmd->add_option("--registry", flags->registry,
                  "Glue Schema Registry endpoint URL (default: --source) ([scaleout] registry)");
  cmd->add_option("--s3-endpoint", flags->s3_endpoint,
                  "S3-compatible endpoint of the buckets and table buckets (default: folders in "
                  "the data dir)");
  cmd->add_option("--listen", flags->listen,
                  "HOST:PORT of /metrics and /health ([worker] listen; default 127.0.0.1:4568)");
  cmd->add_option("--data-dir", flags->data_dir,
                  "Delivery logs (and buckets without --s3-endpoint) ([worker] data_dir; default "
                  "./icestream-worker-data)");
  cmd->add_option("--config", flags->config_file, "TOML configuration file");
  cmd->add_option("--log-level", flags->log_level, "trace|debug|info|warn|error|off");
  cmd->callback([flags] { SetExitCode(RunWorker(*flags)); });
}

}  // namespace icestream::server
