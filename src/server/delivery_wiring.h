// The delivery engine's parts as a configuration asks for them, shared by `icestream
// serve` (which reads its own shard logs) and `icestream worker` (which reads a Kinesis
// endpoint): the bucket store, the channel manager's options, and the destinations.
#pragma once

#include <signal.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "delivery/channel_manager.h"
#include "delivery/table/table_sink.h"
#include "objectstore/object_store.h"
#include "server/config.h"

namespace icestream::iceberg {
class Warehouses;
}

namespace icestream::server {

// The S3 endpoint of the configuration, or folders DATA_DIR/buckets/<bucket>/.
std::shared_ptr<objectstore::ObjectStore> MakeBuckets(const Config& c);

delivery::ChannelManagerOptions ChannelOptions(const Config& c);

// A streaming-table destination's catalog and files: the warehouses (table buckets) of
// `wh`, which must outlive the sinks. The registry, versions and fence are the caller's.
delivery::table::TableServices TableServicesOf(iceberg::Warehouses* wh);

// /health's "channels" list: each failing or FAILED channel with its state, since when
// and why (paths in the reason redacted).
nlohmann::json UnhealthyChannelsJson(const std::vector<delivery::ChannelManager::Unhealthy>& list);

// Blocks SIGINT and SIGTERM in every thread started after it (the main thread waits for
// them with sigwait) and ignores SIGPIPE. Returns the set to wait on.
sigset_t BlockStopSignals();

// S3 buckets and streaming tables, the tables through `ts` (catalog, files, registry).
std::vector<std::shared_ptr<delivery::Destination>> MakeDestinations(
    const Config& c, delivery::table::TableServices ts);

}  // namespace icestream::server
