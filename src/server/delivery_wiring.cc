// Delivery parts from the configuration.
#include "server/delivery_wiring.h"

#include <algorithm>

#include "common/fs.h"
#include "delivery/s3/s3_sink.h"
#include "iceberg/warehouses.h"
#include "objectstore/local_store.h"
#include "objectstore/s3/s3_store.h"

namespace icestream::server {

std::shared_ptr<objectstore::ObjectStore> MakeBuckets(const Config& c) {
  if (c.s3_endpoint.empty()) {
    return std::make_shared<objectstore::LocalObjectStore>(fs::Join(c.data_dir, "buckets"));
  }
  objectstore::s3::S3Options s3;
  s3.endpoint = c.s3_endpoint;
  s3.region = c.s3_region.empty() ? c.region : c.s3_region;
  s3.credentials = objectstore::s3::CredentialsFromEnvironment();
  s3.path_style = c.s3_path_style;
  s3.multipart_threshold = c.s3_multipart_threshold;
  s3.request_timeout_ms = c.s3_request_timeout_ms;
  s3.max_attempts = c.s3_max_attempts;
  s3.retry_budget_ms = c.s3_retry_budget_ms;
  return std::make_shared<objectstore::s3::S3ObjectStore>(s3);
}

delivery::ChannelManagerOptions ChannelOptions(const Config& c) {
  delivery::ChannelManagerOptions co;
  co.data_dir = c.data_dir;
  co.region = c.region;
  co.account = c.account;
  co.min_freshness_seconds = c.aws_strict ? 300 : 1;
  co.max_channels_per_account = 2 * static_cast<size_t>(c.on_demand_stream_limit);
  co.worker_threads = c.delivery_workers;
  co.runner.max_batch_bytes = c.delivery_max_batch_bytes;
  co.runner.max_spanning_batch_bytes = c.table_max_commit_bytes;
  co.tick_ms = c.delivery_tick_ms;
  co.local_buckets = c.s3_endpoint.empty();
  co.activation_timeout_ms = c.delivery_activation_timeout_ms;
  co.runner.destination_grace_ms = c.delivery_destination_grace_ms;
  co.runner.redrive_batch_records = static_cast<size_t>(c.delivery_redrive_batch_records);
  // In a pool, other processes create and change channels: read the list at every lease
  // renewal's interval (2 s by default; it was once a second, at most: with two workers on
  // a 4-shard stream that read alone was half of the pool's statements besides batches).
  co.reload_ms = c.lease_renew_ms;
  return co;
}

delivery::table::TableServices TableServicesOf(iceberg::Warehouses* wh) {
  delivery::table::TableServices ts;
  ts.bucket_name = [wh](std::string_view arn) { return wh->BucketName(arn); };
  ts.catalog = [wh](const std::string& bucket) { return wh->CatalogFor(bucket); };
  ts.io = [wh](const std::string& bucket) { return wh->Io(bucket); };
  return ts;
}

nlohmann::json UnhealthyChannelsJson(const std::vector<delivery::ChannelManager::Unhealthy>& list) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : list) {
    nlohmann::json c = {{"channel", f.name}, {"state", f.state}};
    if (f.since_ms > 0) c["failingSince"] = static_cast<double>(f.since_ms) / 1000.0;
    if (!f.reason.empty()) c["reason"] = RedactPaths(f.reason);
    out.push_back(std::move(c));
  }
  return out;
}

sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return set;
}

std::vector<std::shared_ptr<delivery::Destination>> MakeDestinations(
    const Config& c, delivery::table::TableServices ts) {
  ts.region = c.region;
  ts.account = c.account;
  delivery::table::TableSinkOptions to;
  to.target_file_size_bytes = c.table_target_file_bytes;
  to.convert_threads = c.table_convert_threads;
  to.snapshot_max_age_ms = c.table_snapshot_max_age_ms;
  to.expire_interval_ms = c.table_expire_interval_ms;
  to.orphan_age_ms = c.table_orphan_age_ms;
  to.orphan_interval_ms = std::max<int64_t>(c.table_orphan_age_ms / 4, 10000);
  to.compaction = c.table_compaction;
  to.compaction_cold_after_ms = c.table_compaction_cold_after_ms;
  return {std::make_shared<delivery::s3::S3Destination>(),
          std::make_shared<delivery::table::TableDestination>(std::move(ts), to)};
}

}  // namespace icestream::server
