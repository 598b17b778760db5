// The channel API against a pool's PostgreSQL, in process.
#include "server/pool_channels.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <future>

#include "common/clock.h"
#include "common/crypto.h"
#include "common/fs.h"
#include "common/logging.h"
#include "delivery/channel_manager.h"
#include "iceberg/warehouses.h"
#include "kinesis/api.h"
#include "objectstore/local_store.h"
#include "scaleout/pool.h"
#include "server/config.h"
#include "server/delivery_wiring.h"
#include "server/pool_registry.h"
#include "server/pool_rows_source.h"
#include "source/kinesis/kinesis_source.h"

namespace icestream::server {

struct PoolChannelApi::Impl {
  Config config;
  std::unique_ptr<scaleout::Pool> pool;
  std::unique_ptr<delivery::SourceProvider> sources;  // the endpoint's, or the rows'

  std::unique_ptr<source::AwsJsonClient> source_client;  // other Kinesis calls (null: none)
  std::shared_ptr<objectstore::ObjectStore> buckets;
  std::shared_ptr<objectstore::ObjectStore> table_buckets;
  std::unique_ptr<iceberg::Warehouses> warehouses;
  std::unique_ptr<delivery::ChannelManager> channels;
  std::unique_ptr<kinesis::KinesisApi> api;

  ~Impl() {
    api.reset();
    if (channels) channels->Stop();
    channels.reset();
    if (pool) pool->Leave(false);
  }
};

PoolChannelApi::PoolChannelApi(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PoolChannelApi::~PoolChannelApi() = default;

Result<std::unique_ptr<PoolChannelApi>> PoolChannelApi::Open(const PoolChannelFlags& f) {
  // The command's output (stdout) is the API's answer: only warnings and errors are logged,
  // on stderr (spdlog's own default logger writes to stdout).
  SetupLogging("warn");
  auto impl = std::make_unique<Impl>();
  Config& c = impl->config;
  if (!f.config_file.empty()) {
    ASSIGN_OR_RETURN(c, LoadConfigFile(f.config_file, c));
  }
  c.data_dir = c.worker_data_dir;  // as a worker's: the top-level one is serve's
  if (!f.pg.empty()) c.pg = f.pg;
  if (!f.source.empty()) c.source = f.source;
  if (!f.registry.empty()) c.registry = f.registry;
  if (!f.s3_endpoint.empty()) c.s3_endpoint = f.s3_endpoint;
  if (c.pg.empty()) {
    return InvalidArgument(
        "--pg needs the pool's PostgreSQL conninfo (--pg CONNINFO, or pg in the [scaleout] "
        "section of --config)");
  }
  RETURN_IF_ERROR(Validate(c));

  scaleout::PoolOptions po;
  po.conninfo = c.pg;
  po.observe = true;
  po.max_connections = 2;
  ASSIGN_OR_RETURN(impl->pool, scaleout::Pool::Join(po));
  scaleout::Pool* p = impl->pool.get();

  if (c.source.empty()) {
    // Without the endpoint the channels are what the pool's rows say (pool_rows_source.h):
    // everything but CreateChannel works, and a describe has no lag.
    impl->sources = std::make_unique<PoolRowsSourceProvider>(p->MakeDeliveryStore(), p->leases());
  } else {
    source::KinesisSourceOptions so;
    so.endpoint.url = c.source;
    so.endpoint.region = c.region;
    so.endpoint.credentials = source::CredentialsFromEnvironment();
    so.endpoint.ca_file = f.source_ca_file;
    so.pace_reads = c.pace_reads.value_or(source::PaceReadsFor(c.source));
    ASSIGN_OR_RETURN(impl->sources, source::KinesisSourceProvider::Make(so));
    so.endpoint.service = "kinesis";
    so.endpoint.target_prefix = "Kinesis_20131202.";
    ASSIGN_OR_RETURN(impl->source_client, source::AwsJsonClient::Make(so.endpoint));
  }
  ASSIGN_OR_RETURN(auto versions, MakePoolRegistry(c, f.source_ca_file));

  impl->buckets = MakeBuckets(c);
  impl->table_buckets =
      c.s3_endpoint.empty()
          ? std::make_shared<objectstore::LocalObjectStore>(fs::Join(c.data_dir, "table-buckets"))
          : impl->buckets;
  impl->warehouses = std::make_unique<iceberg::Warehouses>(
      [p](const std::string& w) { return p->CatalogRows(w); }, impl->table_buckets.get(),
      SystemClock::Default(), c.region, c.account);
  delivery::table::TableServices ts = TableServicesOf(impl->warehouses.get());
  ts.versions = versions;
  ts.fence_for = [p](const delivery::ChannelConfig& ch) { return p->FenceFor(ch.id); };
  ts.staging = p->MakeStagingStore();
  delivery::ChannelManagerOptions co = ChannelOptions(c);
  co.coordinator = p->leases();
  ASSIGN_OR_RETURN(
      impl->channels,
      delivery::ChannelManager::Open(co, impl->sources.get(), p->MakeDeliveryStore(), impl->buckets,
                                     MakeDestinations(c, std::move(ts)), SystemClock::Default()));
  kinesis::KinesisOptions ko;
  ko.region = c.region;
  ko.account = c.account;
  ko.aws_strict = c.aws_strict;
  ko.subscription_threads = 1;
  impl->api = std::make_unique<kinesis::KinesisApi>(ko, nullptr, SystemClock::Default(),
                                                    crypto::RandomUuid(),
                                                    [](std::function<void()> fn) { fn(); });
  impl->api->SetChannels(impl->channels.get());
  return std::unique_ptr<PoolChannelApi>(new PoolChannelApi(std::move(impl)));
}

Result<http::ClientResponse> PoolChannelApi::Call(std::string_view target,
                                                  const nlohmann::json& body) {
  constexpr std::string_view kPrefix = "Kinesis_20131202.";
  if (target.substr(0, kPrefix.size()) != kPrefix) {
    return InvalidArgument("not a Kinesis operation: " + std::string(target));
  }
  std::string op(target.substr(kPrefix.size()));
  if (op.find("Channel") == std::string::npos) {
    // Stream operations are the source's.
    if (!impl_->source_client) {
      return InvalidArgument(op +
                             " needs the Kinesis endpoint: pass --source URL, or set source "
                             "in the [scaleout] section of --config");
    }
    ASSIGN_OR_RETURN(auto r, impl_->source_client->Post(op, aws::kJsonContentType, body.dump()));
    return r;
  }
  auto req = std::make_shared<http::Request>();
  req->method = "POST";
  req->target = req->path = "/";
  req->headers = {{"content-type", std::string(aws::kJsonContentType)},
                  {"x-amz-target", std::string(target)}};
  req->body = body.dump();
  req->remote_address = "127.0.0.1";
  std::promise<http::Response> answered;
  auto answer = answered.get_future();
  impl_->api->Handle(op, std::move(req),
                     [&answered](http::Response r) { answered.set_value(std::move(r)); });
  http::Response r = answer.get();
  http::ClientResponse out;
  out.status = r.status;
  out.body = std::move(r.body);
  return out;
}

Result<std::string> PoolChannelApi::StreamArn(const std::string& name) {
  if (!impl_->source_client) {
    // What the source would answer: streams are named by region and account
    // (CreateChannel checks a channel's StreamARN against them too).
    return fmt::format("arn:aws:kinesis:{}:{}:stream/{}", impl_->config.region,
                       impl_->config.account, name);
  }
  ASSIGN_OR_RETURN(auto r, impl_->source_client->Call("DescribeStreamSummary",
                                                      nlohmann::json{{"StreamName", name}}));
  return r.value("StreamDescriptionSummary", nlohmann::json::object()).value("StreamARN", "");
}

std::string PoolChannelApi::endpoint() const {
  if (impl_->config.source.empty()) return "the pool's database";
  return "the pool's database (" + impl_->config.source + " as source)";
}

}  // namespace icestream::server
