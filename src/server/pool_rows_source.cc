// A channel's shards as the pool's rows know them (no Kinesis endpoint).
#include "server/pool_rows_source.h"

#include <fmt/format.h>

#include <mutex>
#include <optional>
#include <set>

#include "common/clock.h"

namespace icestream::server {

namespace {

constexpr std::string_view kNeedsSource =
    "pass --source URL (the Kinesis endpoint the pool reads the streams from: an icestream "
    "server, kinesalite or https://kinesis.<region>.amazonaws.com), or set source in the "
    "[scaleout] section of --config";

class PoolRowsShardSource final : public delivery::ShardSource {
 public:
  PoolRowsShardSource(delivery::DeliveryStore* store, const delivery::Coordinator* coordinator,
                      std::string channel_id)
      : store_(store), coordinator_(coordinator), channel_id_(std::move(channel_id)) {}

  Result<std::vector<delivery::SourceShard>> Shards() override {
    const int64_t now = SystemClock::Default()->NowMillis();
    std::lock_guard lock(mu_);
    // The runner asks at every scheduling tick; the rows change slowly.
    if (cached_ && now - cached_at_ < 1000) return *cached_;
    ASSIGN_OR_RETURN(auto checkpoints, store_->Checkpoints(channel_id_));
    ASSIGN_OR_RETURN(auto finished, store_->FinishedShards(channel_id_));
    ASSIGN_OR_RETURN(auto owners, coordinator_->Owners(channel_id_));
    std::set<std::string> ids(finished.begin(), finished.end());
    for (const auto& [shard, position] : checkpoints) ids.insert(shard);
    const std::string prefix = delivery::ShardUnit("");
    for (const auto& [unit, owner] : owners) {
      if (unit.rfind(prefix, 0) == 0) ids.insert(unit.substr(prefix.size()));
    }
    std::vector<delivery::SourceShard> out;
    for (const auto& id : ids) {
      delivery::SourceShard s;
      s.id = id;
      s.closed = finished.count(id) > 0;
      out.push_back(std::move(s));
    }
    finished_ = std::move(finished);
    cached_ = out;
    cached_at_ = now;
    return out;
  }

  Result<delivery::Position> StartPosition(const std::string&,
                                           const delivery::StartingPosition&) override {
    return Unavailable(NoEndpoint("a shard's starting position"));
  }
  Result<delivery::ShardBacklog> Backlog(const std::string&, const delivery::Position&) override {
    return Unavailable(NoEndpoint("a shard's backlog"));
  }
  Result<delivery::ShardBacklog> Behind(const std::string& shard,
                                        const delivery::Position&) override {
    {
      std::lock_guard lock(mu_);
      if (finished_.count(shard)) {
        delivery::ShardBacklog b;
        b.finished = true;
        b.records_exact = false;
        return b;
      }
    }
    return Unavailable(NoEndpoint("how far a shard is behind"));
  }
  Result<delivery::PlannedRange> PlanRange(const std::string&, const delivery::Position&, uint64_t,
                                           size_t) override {
    return Unavailable(NoEndpoint("records"));
  }
  Result<std::unique_ptr<delivery::RangeReader>> OpenRange(const std::string&,
                                                           const delivery::Position&,
                                                           const std::string&, size_t,
                                                           size_t) override {
    return Unavailable(NoEndpoint("records"));
  }

 private:
  static std::string NoEndpoint(std::string_view what) {
    return fmt::format("{} needs the Kinesis endpoint: {}", what, kNeedsSource);
  }

  delivery::DeliveryStore* store_;
  const delivery::Coordinator* coordinator_;
  const std::string channel_id_;
  std::mutex mu_;
  std::optional<std::vector<delivery::SourceShard>> cached_;
  int64_t cached_at_ = 0;
  std::set<std::string> finished_;
};

}  // namespace

Result<delivery::SourceStream> PoolRowsSourceProvider::DescribeStream(const std::string& name) {
  return InvalidArgument(
      fmt::format("Stream {} cannot be checked: `icestream channels … --pg` has no Kinesis "
                  "endpoint to describe it with; {}.",
                  name, kNeedsSource));
}

Result<std::shared_ptr<delivery::ShardSource>> PoolRowsSourceProvider::OpenSource(
    const delivery::ChannelConfig& channel) {
  return std::shared_ptr<delivery::ShardSource>(
      new PoolRowsShardSource(store_.get(), coordinator_, channel.id));
}

}  // namespace icestream::server
