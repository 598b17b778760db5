// ShardRunner: the destination-blind half of one channel's delivery (ARCHITECTURE.md §5
// "Exactly-once per shard"). It knows the channel's shards (from its ShardSource) and,
// per shard, the checkpoint (the position of the last delivered record) and the batch in
// flight; the Sink knows what a destination does with a batch.
//
// A batch is due when its oldest record is about to outlive the channel's freshness, or
// when enough is pending to fill one. Its ranges are persisted as a plan (DeliveryStore)
// before the sink sees it and dropped in the transaction that moves the checkpoints past
// it, so after a crash or a failed attempt the very same batch is offered again (replay)
// before anything new. A sink that spans shards (a table: one commit for every shard)
// gets one batch with a range of every shard that has records; other sinks get one batch
// per shard. A child shard is delivered only once every parent is finished (delivered
// to its end, a durable mark). Where the destination itself records what it holds (a
// table's snapshot summary), that record wins over the store after a restart.
//
// Retries: the one retry loop above the clients. A job makes one attempt; a retryable
// failure (anything not IsPermanent) backs the batch off (0.5 s doubling to 30 s,
// jittered) and it is replayed by a later Schedule, so a failing destination never holds
// a delivery worker while it waits. A permanent failure, and a plan that does not start
// at its shard's checkpoint, set fatal(), which the channel manager turns into FAILED.
//
// Thread-safety: every public method may be called from any thread. Jobs returned by
// Schedule() run on the manager's workers and must not outlive the runner (the manager
// waits for in_flight() == 0 before dropping it).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "delivery/channel.h"
#include "delivery/channel_metrics.h"
#include "delivery/coordinator.h"
#include "delivery/delivery_log.h"
#include "delivery/delivery_store.h"
#include "delivery/shard_source.h"
#include "delivery/sink.h"

namespace icestream::delivery {

struct RunnerOptions {
  // A batch of one shard holds at most this many record bytes and records (memory).
  uint64_t max_batch_bytes = 32ull << 20;
  size_t max_batch_records = 250000;
  // A batch that spans shards (one table commit) holds at most this much in all.
  uint64_t max_spanning_batch_bytes = 128ull << 20;
  size_t max_spanning_batch_records = 1000000;
  // Records are handed to the sink in chunks of at most this size.
  size_t read_chunk_bytes = 4u << 20;
  size_t read_chunk_records = 10000;
  int64_t min_retry_delay_ms = 500;
  int64_t max_retry_delay_ms = 30000;
};

class ShardRunner {
 public:
  using Job = std::function<void()>;

  // Makes the channel's sink through `destination`. `store` and `clock` must outlive the
  // runner. Errors: the sink cannot be made (bad stored configuration) — the channel is
  // then FAILED.
  static Result<std::unique_ptr<ShardRunner>> Make(const ChannelConfig& config,
                                                   Destination* destination,
                                                   std::shared_ptr<ShardSource> source,
                                                   DeliveryStore* store, const Clock* clock,
                                                   RunnerOptions options, SinkEnv env);
  ~ShardRunner();

  // Takes the checkpoints, plans and finished marks the store holds (a channel that was
  // ACTIVE before). The destination's own checkpoints are read by the first Schedule().
  Status Load();

  // Scale-out: deliver only the lease units this process holds (coordinator.h). Each
  // time a unit is taken (anew, or under a new epoch) its shards' state is read again
  // from the store (another process may have moved it); a unit lost is forgotten. Set
  // before the first Schedule; null (the default) delivers everything.
  void SetCoordinator(Coordinator* coordinator) { coordinator_ = coordinator; }
  // The unit a shard's state belongs to, and the unit of the channel's lifecycle.
  std::string UnitOf(const std::string& shard) const;
  std::string ControlUnit() const;
  bool spans_shards() const { return sink_->spans_shards(); }

  // CREATING → ACTIVE: checks the destination and fixes where each existing shard starts
  // (StartingPosition; shards created later start at their beginning). The caller
  // persists the returned checkpoints with the ACTIVE status, then calls Activated().
  // Errors as Sink::Check().
  Result<std::map<std::string, Position>> PrepareActivation(const StartingPosition& start);
  void Activated(const std::map<std::string, Position>& checkpoints);

  // One scheduling pass over an ACTIVE channel: the jobs to run now, at most `max_jobs`
  // besides those already running (the channel's share of the delivery workers).
  std::vector<Job> Schedule(int64_t now, int64_t freshness_ms, int max_jobs);

  // The earliest position of `shard` the channel still needs to read (its checkpoint,
  // or a planned batch's start); nullopt when it needs nothing more of the shard.
  std::optional<Position> NeededPosition(const std::string& shard) const;
  int in_flight() const;
  // Set when the channel must go FAILED, with the reason.
  std::optional<std::string> fatal() const;
  // Stops scheduling (deleting, failing, stopping); jobs in flight finish their attempt.
  void Stop();
  bool stopping() const { return stopping_.load(); }

  ChannelMetrics& metrics() { return metrics_; }
  const ChannelMetrics& metrics() const { return metrics_; }
  // The delivery log events go to (replaced by UpdateChannel); null when logging is off.
  void SetLog(std::shared_ptr<DeliveryLog> log);
  void LogEvent(nlohmann::json event);

  // icestream's status fields for DescribeChannel: per shard the last delivered sequence
  // number and the lag in records and seconds; the DLQ count; the last error (with its
  // time and the attempts it has failed); and the sink's own fields.
  // With a coordinator, each shard also names its Owner and Epoch across the pool.
  nlohmann::json StatusJson(int64_t now) const;
  // The last retryable error (empty when the last attempt succeeded).
  std::string last_error() const;
  // The sink's own /metrics figures.
  std::vector<SinkMetric> SinkMetrics() const { return sink_->Metrics(); }

 private:
  void AddPoolStatus(nlohmann::json* out) const;
  struct ShardState;
  ShardRunner(ChannelConfig config, std::shared_ptr<ShardSource> source, DeliveryStore* store,
              const Clock* clock, RunnerOptions options);
  // Scale-out: which of `shards` this process holds now; reloads the state of those taken
  // since the last pass and forgets those lost. Returns the held ones (all without a
  // coordinator). Called without mu_.
  std::set<std::string> HeldShards(const std::vector<SourceShard>& shards);

  Job RecoverJob();
  Job BatchJob(DeliveryBatch batch);
  void RunBatch(const DeliveryBatch& batch);
  void Recover();
  void SetFatal(const std::string& reason);  // mu_ held
  // A retryable failure: remembered for the status and the log (mu_ held).
  void NoteFailure(const Status& st, int attempts);
  int64_t Backoff(int failures);

  const ChannelConfig config_;  // identity and source; the destination is the sink's
  std::shared_ptr<ShardSource> source_;
  DeliveryStore* store_;
  const Clock* clock_;
  const RunnerOptions options_;
  std::unique_ptr<Sink> sink_;
  ChannelMetrics metrics_;
  std::atomic<bool> stopping_{false};

  mutable std::mutex mu_;
  std::map<std::string, ShardState> shards_;
  std::set<std::string> finished_;          // delivered to their end (durable marks)
  std::map<std::string, BatchPlan> plans_;  // persisted, not yet delivered
  std::vector<SourceShard> known_shards_;   // from the last Schedule
  bool recovered_ = true;  // the destination's checkpoints have been taken into account
  bool recovering_ = false;
  int recover_failures_ = 0;
  int64_t recover_after_ms_ = 0;
  int in_flight_ = 0;          // batches running
  int spanning_failures_ = 0;  // consecutive failures of the spanning batch
  int64_t spanning_retry_after_ms_ = 0;
  std::optional<std::string> fatal_;
  std::string last_error_;
  int64_t last_error_ms_ = 0;
  int last_error_attempts_ = 0;
  int64_t last_warning_ms_ = -1;  // of the rate-limited failure warning
  uint64_t rng_state_ = 0;
  std::mutex log_mu_;  // guards log_ only (taken inside mu_, never the other way)
  std::shared_ptr<DeliveryLog> log_;
  Coordinator* coordinator_ = nullptr;
  std::map<std::string, uint64_t> unit_epochs_;  // the epoch each unit was last seen held at
};

}  // namespace icestream::delivery
