// ChannelManager: the delivery engine. Owns every channel — its lifecycle (CREATING →
// ACTIVE | FAILED, UPDATING → ACTIVE, DELETING → gone), its per-shard checkpoints, and the
// threads that deliver each shard's records exactly once into S3 buckets
// (kds-delivery-spec.md §1, §3, §4, §5; ARCHITECTURE.md §5 "Exactly-once per shard").
//
// Delivery of one shard is a sequence of batches. A batch starts at the checkpoint and is
// due when its oldest record is about to exceed the channel's freshness (or the backlog
// is large). It is read straight from the shard log, built into objects (BatchBuilder),
// its offset range is persisted as a plan, its objects (and DLQ lines) are uploaded under
// deterministic keys, and only then the checkpoint moves past it. After a crash the plan
// is replayed byte for byte, overwriting what a half-finished attempt left. A child shard
// is delivered only once its parents are delivered to their end.
//
// Errors use the Kinesis mapping (aws::KinesisError): kNotFound → ResourceNotFound,
// kAlreadyExists / kFailedPrecondition → ResourceInUse, kInvalidArgument →
// InvalidArgument, kResourceExhausted → LimitExceeded.
// Thread-safety: all public methods may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/sqlite.h"
#include "delivery/channel.h"
#include "delivery/channel_store.h"
#include "objectstore/object_store.h"
#include "stream/stream_manager.h"

namespace icestream::delivery {

class DeliveryLog;

struct ChannelManagerOptions {
  std::string data_dir;
  std::string region = "us-east-1";
  std::string account = "000000000000";
  // Lowest DataFreshnessInSeconds accepted (AWS: 300; icestream: 1 unless --aws-strict).
  int min_freshness_seconds = 1;
  int max_freshness_seconds = 900;
  size_t max_channels_per_stream = 2;
  size_t max_channels_per_account = 100;  // AWS: 2 x the on-demand stream quota (50)
  size_t worker_threads = 2;
  uint64_t max_batch_bytes = 32ull << 20;  // record bytes per batch (bounds memory)
  size_t max_batch_records = 250000;
  int64_t tick_ms = 50;
  int compression_level = 0;  // 0 = codec default (gzip 6, zstd 3)
  // Whether object stores check ExpectedBucketOwner (S3 does; local folders have no owner).
  bool local_buckets = true;
};

struct ChannelMetrics {
  std::atomic<uint64_t> bytes_in{0};
  std::atomic<uint64_t> bytes_processed{0};
  std::atomic<uint64_t> bytes_out{0};
  std::atomic<uint64_t> record_count{0};
  std::atomic<uint64_t> successful_record_count{0};
  std::atomic<uint64_t> failed_record_count{0};
  std::atomic<uint64_t> delivery_success{0};
  std::atomic<uint64_t> dlq_delivery_success{0};
  std::atomic<int64_t> data_freshness_ms{0};
};

class ChannelManager {
 public:
  static Result<std::unique_ptr<ChannelManager>> Open(
      ChannelManagerOptions options, stream::StreamManager* streams, Database* db,
      std::shared_ptr<objectstore::ObjectStore> store, const Clock* clock);
  ~ChannelManager();
  // Stops scheduling; batches in flight finish or are abandoned (they replay on restart).
  void Stop();

  const ChannelManagerOptions& options() const { return options_; }

  // Checks what needs state (name unique, stream exists and is ON_DEMAND, channel quotas),
  // fills defaults, persists the channel as CREATING and returns it. Activation (checking
  // the buckets, fixing start positions) happens in the background.
  Result<ChannelConfig> Create(ChannelConfig draft);
  Result<ChannelConfig> Describe(const std::string& arn) const;
  std::vector<ChannelConfig> List() const;  // by name
  // Only freshness and logging are mutable; the channel must be ACTIVE.
  Result<ChannelConfig> Update(const std::string& arn, std::optional<int> freshness_seconds,
                               std::optional<LoggingConfig> logging);
  Status Delete(const std::string& arn);

  size_t CountForStream(const std::string& stream_name) const;
  size_t Count() const;
  size_t Limit() const { return options_.max_channels_per_account; }

  bool Owns(std::string_view arn) const;  // a channel ARN of this account+region
  Status Tag(const std::string& arn, const std::map<std::string, std::string>& tags);
  Status Untag(const std::string& arn, const std::vector<std::string>& keys);
  Result<std::map<std::string, std::string>> Tags(const std::string& arn) const;

  // Prometheus text for every channel: DeliveryToS3_<Metric>{channel_name, channel_id,
  // stream_name} (kds-delivery-spec.md §5.1 names, '.' written as '_').
  std::string PrometheusText() const;
  // Smallest offset of this shard some channel has not delivered (UINT64_MAX if none).
  uint64_t RetentionFloor(uint64_t stream_uid, uint32_t shard) const;

  std::string ArnFor(const std::string& id) const;

  struct Channel;
  struct ShardState;

 private:
  ChannelManager(ChannelManagerOptions options, stream::StreamManager* streams,
                 std::unique_ptr<ChannelStore> store,
                 std::shared_ptr<objectstore::ObjectStore> objects, const Clock* clock);
  Status Load();
  Result<std::shared_ptr<Channel>> Find(const std::string& arn) const;
  void SchedulerLoop();
  void WorkerLoop();
  void Tick();
  void Activate(const std::shared_ptr<Channel>& ch);
  void ScheduleShards(const std::shared_ptr<Channel>& ch, int64_t now);
  void RunBatch(const std::shared_ptr<Channel>& ch, uint32_t shard, uint64_t end,
                std::shared_ptr<log::ShardLog> log);
  // Puts with retries until success, a permanent error, or the channel/manager stopping.
  Status PutWithRetry(const std::shared_ptr<Channel>& ch,
                      const std::shared_ptr<DeliveryLog>& dlog, const std::string& bucket,
                      const std::string& key, const std::string& body,
                      const objectstore::PutOptions& opts);
  void Fail(const std::shared_ptr<Channel>& ch, const std::string& reason);
  void Submit(std::function<void()> job);

  const ChannelManagerOptions options_;
  stream::StreamManager* streams_;
  std::unique_ptr<ChannelStore> store_;
  std::shared_ptr<objectstore::ObjectStore> objects_;
  const Clock* clock_;

  mutable std::mutex mu_;  // guards channels_
  std::map<std::string, std::shared_ptr<Channel>> channels_;  // by id

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<std::function<void()>> queue_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> workers_;
  std::thread scheduler_;
  std::mutex tick_mu_;
  std::condition_variable tick_cv_;
};

}  // namespace icestream::delivery
