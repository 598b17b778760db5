// The delivery engine's parts as a configuration asks for them, shared by `icestream
// serve` (which reads its own shard logs) and `icestream worker` (which reads a Kinesis
// endpoint): the bucket store, the channel manager's options, and the destinations.
#pragma once

#include <memory>
#include <vector>

#include "delivery/channel_manager.h"
#include "delivery/table/table_sink.h"
#include "objectstore/object_store.h"
#include "server/config.h"

namespace icestream::server {

// The S3 endpoint of the configuration, or folders DATA_DIR/buckets/<bucket>/.
std::shared_ptr<objectstore::ObjectStore> MakeBuckets(const Config& c);

delivery::ChannelManagerOptions ChannelOptions(const Config& c);

// S3 buckets and streaming tables, the tables through `ts` (catalog, files, registry).
std::vector<std::shared_ptr<delivery::Destination>> MakeDestinations(
    const Config& c, delivery::table::TableServices ts);

}  // namespace icestream::server
