// ChannelManager: the channels of this server — their lifecycle (CREATING → ACTIVE |
// FAILED, UPDATING → ACTIVE, DELETING → gone; kds-delivery-spec.md §1), quotas, tags,
// metrics text, and the threads that run them: one scheduler thread that asks every
// active channel's ShardRunner for due batches, and a pool of workers that run them.
// What a batch does at its destination is the business of the Sink that the
// destination's Destination makes (registered by server/: S3 buckets, Iceberg tables);
// where its records come from is the business of the SourceProvider (server/: this
// server's shard logs); its state lives in a DeliveryStore.
//
// Fairness: a channel runs at most its share of the workers at once (workers divided by
// the channels that have work, at least one), so a channel whose destination hangs
// cannot take the workers of the others.
//
// Activation (CREATING → ACTIVE) checks the destination in the background and retries a
// destination that cannot be reached yet, with the reason in DescribeChannel's
// IcestreamStatus and in the log, until activation_timeout_ms (a missing destination or
// refused access: for the runner's destination_grace_ms); then the channel FAILS.
//
// FAILED is not the end: Resume (an icestream extension) makes a FAILED channel deliver
// again from the checkpoints and plans in its store — nothing delivered twice, nothing
// skipped; a channel that failed before it ever became active starts its activation
// over. A FAILED channel that was active keeps the records it has not delivered
// (NeededPosition) until it resumes or is deleted.
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
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/sqlite.h"
#include "delivery/channel.h"
#include "delivery/coordinator.h"
#include "delivery/delivery_store.h"
#include "delivery/shard_runner.h"
#include "delivery/shard_source.h"
#include "delivery/sink.h"
#include "objectstore/object_store.h"

namespace icestream::delivery {

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
  RunnerOptions runner;
  int64_t tick_ms = 50;
  int compression_level = 0;  // 0 = codec default (gzip 6, zstd 3)
  // Whether object stores check ExpectedBucketOwner (S3 does; local folders have no owner).
  bool local_buckets = true;
  // A channel whose destination stays unreachable this long after CreateChannel FAILS.
  int64_t activation_timeout_ms = 10 * 60 * 1000;
  // Scale-out: the processes that share the store share the channels through this
  // coordinator's leases (coordinator.h); the channel list is read again from the store
  // every reload_ms (other processes create, update and delete channels), and at once when
  // the store announces a change (DeliveryStore::WatchChannels; then every 10 x reload_ms
  // besides). Null: one server, every channel is this process's.
  Coordinator* coordinator = nullptr;
  int64_t reload_ms = 1000;
};

class ChannelManager {
 public:
  // `destinations`: one per destination type the server delivers to; a CreateChannel for
  // another type is refused. `sources` and `clock` must outlive it.
  static Result<std::unique_ptr<ChannelManager>> Open(
      ChannelManagerOptions options, SourceProvider* sources, std::unique_ptr<DeliveryStore> store,
      std::shared_ptr<objectstore::ObjectStore> buckets,
      std::vector<std::shared_ptr<Destination>> destinations, const Clock* clock);
  ~ChannelManager();
  // Stops scheduling; batches in flight finish or are abandoned (they replay on restart).
  void Stop();

  const ChannelManagerOptions& options() const { return options_; }
  bool Supports(DestinationType type) const;
  // The source's description of a stream (CreateChannel's checks where the streams are not
  // this process's own: `icestream channels --pg`). Errors as SourceProvider's.
  Result<SourceStream> DescribeSourceStream(const std::string& name) const {
    return sources_->DescribeStream(name);
  }

  // Checks what needs state (name unique, stream exists and is ON_DEMAND, channel quotas,
  // the destination's own rules), fills defaults, persists the channel as CREATING and
  // returns it. Activation happens in the background.
  Result<ChannelConfig> Create(ChannelConfig draft);
  Result<ChannelConfig> Describe(const std::string& arn) const;
  // icestream's status of the channel (IcestreamStatus in DescribeChannel).
  Result<nlohmann::json> DeliveryStatus(const std::string& arn) const;
  std::vector<ChannelConfig> List() const;  // by name
  // Only freshness and logging are mutable; the channel must be ACTIVE.
  Result<ChannelConfig> Update(const std::string& arn, std::optional<int> freshness_seconds,
                               std::optional<LoggingConfig> logging);
  Status Delete(const std::string& arn);
  // FAILED → ACTIVE (or CREATING when it never was active): see the class comment.
  // kFailedPrecondition when the channel is not FAILED (or its last attempt is still
  // finishing); kInvalidArgument when its sink still cannot be made.
  Result<ChannelConfig> Resume(const std::string& arn);
  // DLQ redrive (redrive.h) of an ACTIVE channel: kFailedPrecondition when it is not
  // ACTIVE or a redrive of it is active already.
  Result<RedriveState> StartRedrive(const std::string& arn, RedriveFilter filter);
  // The channel's redrives, oldest first.
  Result<std::vector<RedriveState>> Redrives(const std::string& arn) const;

  size_t CountForStream(const std::string& stream_name) const;
  size_t Count() const;
  size_t Limit() const { return options_.max_channels_per_account; }

  bool Owns(std::string_view arn) const;  // a channel ARN of this account+region
  Status Tag(const std::string& arn, const std::map<std::string, std::string>& tags);
  Status Untag(const std::string& arn, const std::vector<std::string>& keys);
  Result<std::map<std::string, std::string>> Tags(const std::string& arn) const;

  // Prometheus text for every channel (channel_metrics.h).
  std::string PrometheusText() const;
  // The earliest position of a shard of the local stream `stream_uid` that some channel
  // still has to read (a channel not yet active needs everything: a position at the
  // start); nullopt when no channel needs anything more of it. Retention keeps it.
  std::optional<Position> NeededPosition(uint64_t stream_uid, const std::string& shard) const;
  // Channels whose deliveries are failing now, and FAILED channels, for /health.
  struct Unhealthy {
    std::string name;
    std::string state;     // "ACTIVE", "FAILED", ...
    int64_t since_ms = 0;  // failing since (epoch ms); 0 when unknown (FAILED before a restart)
    std::string reason;    // the last error, or the FAILED channel's reason
  };
  std::vector<Unhealthy> FailingChannels() const;

  // The ARN of channel `id` (arn:aws:kinesis:<region>:<account>:channel/<id>), and the id
  // in a channel ARN of this region and account (nullopt for any other ARN).
  std::string ArnFor(const std::string& id) const;
  std::optional<std::string> IdOf(std::string_view arn) const;

  struct Channel;

 private:
  ChannelManager(ChannelManagerOptions options, SourceProvider* sources,
                 std::unique_ptr<DeliveryStore> store,
                 std::shared_ptr<objectstore::ObjectStore> buckets,
                 std::vector<std::shared_ptr<Destination>> destinations, const Clock* clock);
  Status Load();
  Destination* DestinationFor(DestinationType type) const;
  // Makes the channel's runner (its sink), loading its state from the store when `load`.
  Status MakeRunner(Channel* ch, bool load);
  // MakeRunner for a channel that delivers (or activates); one whose sink cannot be made
  // FAILS.
  void StartRunner(Channel* ch);
  Result<std::shared_ptr<Channel>> Find(const std::string& arn) const;
  void SchedulerLoop();
  void WorkerLoop();
  void Tick();
  // Scale-out: takes what other processes did to the channel list (mu_ not held).
  void Reload();
  // Whether this process runs the channel's lifecycle (always without a coordinator).
  bool HoldsControl(const Channel& ch) const;
  // Saves the channel's row (ch->mu held) and stamps the channel with this process's
  // write (Channel::written_here), so a reload that read the list before does not undo it.
  Status SaveRow(Channel* ch, const ChannelConfig& c);
  void Activate(const std::shared_ptr<Channel>& ch);
  void Fail(const std::shared_ptr<Channel>& ch, const std::string& reason);
  void Submit(std::function<void()> job);

  const ChannelManagerOptions options_;
  SourceProvider* sources_;
  std::unique_ptr<DeliveryStore> store_;
  std::shared_ptr<objectstore::ObjectStore> buckets_;
  std::vector<std::shared_ptr<Destination>> destinations_;
  const Clock* clock_;

  mutable std::mutex mu_;                                     // guards channels_
  std::map<std::string, std::shared_ptr<Channel>> channels_;  // by id

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<std::function<void()>> queue_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> workers_;
  std::thread scheduler_;
  std::mutex tick_mu_;
  std::condition_variable tick_cv_;
  int64_t last_reload_ms_ = 0;
  // Scale-out: set when the store says the channel list changed (WatchChannels); the next
  // tick reads it again. While the store announces changes, the list is also read every
  // kWatchedReloadFactor x reload_ms (a missed announcement), else every reload_ms.
  std::atomic<bool> reload_asked_{false};
  std::shared_ptr<void> channels_watch_;  // released in Stop, after the threads
  std::shared_ptr<void> taken_watch_;     // the coordinator's (WatchTaken); the same
  bool watching_ = false;                 // set before the threads start
  // The last reload left something for the next (a deletion waiting for a batch, a row
  // older than this process's write): that one comes after reload_ms, watched or not.
  bool look_again_soon_ = false;  // scheduler thread only
  static constexpr int64_t kWatchedReloadFactor = 10;
  // Scale-out: counts this process's writes of a channel's row (creations and changes); a
  // reload whose list was read before a channel's last write here does not apply the
  // stale row over it.
  std::atomic<uint64_t> local_writes_{0};
};

}  // namespace icestream::delivery
