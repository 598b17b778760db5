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
// Retries: the one retry loop above the clients (retry.h). A job makes one attempt; a
// retryable failure backs the batch off (0.5 s doubling to 30 s, jittered) and it is
// replayed by a later Schedule, so a failing destination never holds a delivery worker
// while it waits. A failure of the grace kind (something missing, access refused) is
// retried so for destination_grace_ms from its first occurrence, then it is taken as
// lasting. That, a permanent failure, and a plan that does not start at its shard's
// checkpoint set fatal(), which the channel manager turns into FAILED. Failures are
// logged as one warning per channel per 30 s; the first success after them says how long
// delivery was failing.
//
// What it says: failures as above; rejected records (the DLQ) as counts per error code,
// the last one, and one info line per channel per reject_log_interval_ms that names the
// reasons; every delivered batch as one compact info line (the detail at debug).
//
// DLQ redrive (redrive.h): at most one redrive of the channel is active; its prepare step
// and its batches run as jobs of their own between the channel's batches (a spanning
// sink alternates them with its batches), within the channel's share of the workers and
// under the same retry policy. Its progress is the store's document of it, or what the
// destination holds (HeldRedrive) where that is further.
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
  // How long a missing destination or refused access (FailureKind::kGrace) is retried
  // before the channel goes FAILED.
  int64_t destination_grace_ms = 5 * 60 * 1000;
  // At most one warning about failing deliveries per channel per this interval.
  int64_t warning_interval_ms = 30000;
  // At most one info line about records sent to the DLQ per channel per this interval.
  int64_t reject_log_interval_ms = 30000;
  // A redrive batch holds at most this many DLQ lines' records.
  size_t redrive_batch_records = 5000;
  // In a pool: a process that cannot list the source's shards for this long (a worker
  // with wrong credentials, or cut off from its endpoint) gives the channel's units up
  // (Coordinator::Forget), so that processes that can read it deliver it meanwhile.
  int64_t source_handover_ms = 30000;
};

// Subcodes of ShardRunner statuses.
enum class RunnerError {
  // The channel's source stream failed (not its destination).
  kSource = 1,
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
  // Errors as Sink::Check(); a failure of the source (listing the shards, finding where
  // they start) carries RunnerError::kSource.
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

  // DLQ redrive. StartRedrive records a new redrive (PREPARING) of the DLQ lines that
  // match `filter`; kFailedPrecondition while another one is active. Redrives(): all of
  // the channel's, oldest first.
  Result<RedriveState> StartRedrive(RedriveFilter filter);
  std::vector<RedriveState> Redrives() const;
  // Records rejected since the server started, per error code (for /metrics).
  std::map<std::string, uint64_t> RejectedByCode() const;
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
  Status LoadRedrives();

  Job RecoverJob();
  Job BatchJob(DeliveryBatch batch);
  // A staged sink's commit (Sink::CommitStaged), where the control unit is held.
  void RunCommit();
  void RunBatch(const DeliveryBatch& batch);
  // A delivered batch's rejections: counted, and logged at most once per interval (mu_).
  void NoteRejects(uint64_t records_in, const RejectSummary& rejects, int64_t now);
  void FlushRejectLog(int64_t now, bool force);
  // A shard whose backlog or next range cannot be read is passed over until the next pass;
  // logged at warn at most every 30 s (read_warn_after_ms_), else at debug: a stall that
  // repeats leaves a trace.
  void LogReadFailure(int64_t now, const std::string& what, const Status& st);
  // The active redrive (mu_ held); null when none.
  RedriveState* ActiveRedrive();
  void RunRedrive();
  // One step of the active redrive `r` (a copy): its prepare or its next batch. On
  // success `r` is what to store. *redrive_fault: the error ends the redrive (FAILED),
  // not the channel.
  Status PrepareStep(RedriveState* r, const std::vector<RedriveState>& earlier,
                     bool* redrive_fault);
  Status RedriveBatchStep(RedriveState* r, DeliveryCounts* counts, bool* redrive_fault);
  void Recover();
  void SetFatal(const std::string& reason);  // mu_ held
  // A retryable failure: remembered for the status and the log (mu_ held).
  void NoteFailure(const Status& st, int attempts);
  // A delivery succeeded: the failing stretch (if any) is over (mu_ held).
  void NoteSuccess();
  // Classifies a failed attempt (mu_ held): true when the channel must now go FAILED
  // (fatal_ is set); `grace_since_ms` is the failing unit's first grace-kind failure.
  bool FailsChannel(const Status& st, int64_t* grace_since_ms, int64_t now);
  int64_t Backoff(int failures);

  const ChannelConfig config_;  // identity and source; the destination is the sink's
  std::shared_ptr<ShardSource> source_;
  DeliveryStore* store_;
  const Clock* clock_;
  const RunnerOptions options_;
  std::unique_ptr<Sink> sink_;
  objectstore::ObjectStore* buckets_ = nullptr;  // the DLQ's (SinkEnv::buckets)
  bool local_buckets_ = true;
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
  int source_failures_ = 0;              // consecutive failures to list the source's shards
  int64_t source_failing_since_ms_ = 0;  // the first of them (0: listing works)
  bool source_handed_over_ = false;      // the units were given up (RunnerOptions)
  int64_t recover_after_ms_ = 0;
  int in_flight_ = 0;          // batches running
  int spanning_failures_ = 0;  // consecutive failures of the spanning batch
  int64_t spanning_retry_after_ms_ = 0;
  int64_t spanning_grace_since_ms_ = 0;  // first grace-kind failure of the spanning batch
  int64_t recover_grace_since_ms_ = 0;
  std::atomic<int64_t> read_warn_after_ms_{0};  // LogReadFailure (any thread of Schedule)
  std::optional<std::string> fatal_;
  std::string last_error_;
  int64_t last_error_ms_ = 0;
  int last_error_attempts_ = 0;
  int64_t last_warning_ms_ = -1;   // of the rate-limited failure warning
  uint64_t stretch_failures_ = 0;  // failed attempts since the last success
  // Rejections: since the server started, and since the last info line about them.
  RejectSummary rejects_;
  RejectSummary rejects_unlogged_;
  uint64_t records_unlogged_ = 0;
  int64_t last_reject_log_ms_ = -1;
  // Redrives, oldest first; at most one active.
  std::vector<RedriveState> redrives_;
  bool redrive_in_flight_ = false;
  bool control_held_ = false;  // this process holds the control unit (always without a coordinator)
  bool redrive_turn_ = false;  // a spanning sink's next slot goes to the redrive
  bool commit_in_flight_ = false;  // a staged sink's commit
  int commit_failures_ = 0;
  int64_t commit_retry_after_ms_ = 0;
  int64_t commit_grace_since_ms_ = 0;
  int redrive_failures_ = 0;
  int64_t redrive_retry_after_ms_ = 0;
  int64_t redrive_grace_since_ms_ = 0;
  uint64_t rng_state_ = 0;
  std::mutex log_mu_;  // guards log_ only (taken inside mu_, never the other way)
  std::shared_ptr<DeliveryLog> log_;
  Coordinator* coordinator_ = nullptr;
  std::map<std::string, uint64_t> unit_epochs_;  // the epoch each unit was last seen held at
};

}  // namespace icestream::delivery
