// PoolRowsSourceProvider: the "source" of `icestream channels … --pg` run without a Kinesis
// endpoint (no --source, no [scaleout] source). It reads no records: a channel's shards
// are the ones the pool's rows name — the shard lease units (`shard:<id>`), the shards
// with a checkpoint and those marked finished — so list, describe, update, delete and
// resume work from the database alone. What needs the endpoint says so:
//
//   DescribeStream (CreateChannel's stream check)   kInvalidArgument: "… pass --source URL …"
//   Behind (DescribeChannel's lag) of an open shard  kUnavailable: the lag fields are left out
//   Behind of a finished shard                       finished, no lag
//   PlanRange, OpenRange, Backlog                    kUnavailable (an observer never delivers)
//
// Shards carry no lineage (parents) and are "closed" only when finished: enough for a
// status, not for delivery.
//
// Thread-safety: as SourceProvider; `store` and `coordinator` must outlive the provider.
#pragma once

#include <memory>
#include <string>

#include "delivery/coordinator.h"
#include "delivery/delivery_store.h"
#include "delivery/shard_source.h"

namespace icestream::server {

class PoolRowsSourceProvider final : public delivery::SourceProvider {
 public:
  PoolRowsSourceProvider(std::unique_ptr<delivery::DeliveryStore> store,
                         const delivery::Coordinator* coordinator)
      : store_(std::move(store)), coordinator_(coordinator) {}

  Result<delivery::SourceStream> DescribeStream(const std::string& name) override;
  Result<std::shared_ptr<delivery::ShardSource>> OpenSource(
      const delivery::ChannelConfig& channel) override;

 private:
  std::unique_ptr<delivery::DeliveryStore> store_;
  const delivery::Coordinator* coordinator_;
};

}  // namespace icestream::server
