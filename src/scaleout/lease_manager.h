// LeaseManager: this process's part of the channels a pool of processes shares, as rows of
// icestream_lease in PostgreSQL (schema.h). It implements delivery::Coordinator.
//
// One thread, every renew interval:
//   - heartbeat and renew in one statement: icestream_worker's heartbeat (the pool's live
//     workers: heartbeat within a lease) and one UPDATE … WHERE owner = me that sets
//     expires_at = clock_timestamp() + lease for every unit held (the database's clock,
//     never this machine's); units it does not return are lost and dropped at once;
//     — units of channels no longer offered here (forgotten) are given back by it;
//   - make the rows of units offered (ON CONFLICT DO NOTHING), and this process's
//     icestream_interest row of each channel offered (it can deliver the channel);
// and every take interval (and at once when new units are offered):
//   - take, FOR UPDATE SKIP LOCKED, units that nobody holds or whose lease expired, of the
//     channels this process offered only, up to its fair share of each (ceil(the channel's
//     units / the live workers interested in it)), bumping the epoch and writing
//     icestream_lease_history in the same statement; per channel, so that one channel's
//     shards spread over the pool instead of going to one process together (and every free
//     unit fits some interested worker's share). A process that cannot deliver a channel
//     (a pool's channel on another endpoint's stream) never offers it, so it neither takes
//     its units nor counts in its share;
//   - hand back, in one pass, what it holds over a channel's share (a process that joined
//     gets work without waiting for anyone to fail, and a pool converges at once): units
//     without a running batch at once, busy ones once their batch is done (they drain:
//     Draining tells the engine to start none), so a hand-over throws no work away.
// Every grant is a row of icestream_lease_history, and so is every hand-back (released,
// with the epoch it was held under): the history shows when each grant began and ended.
// A unit counts as held locally only until this process's last successful renewal plus
// the lease minus one renew interval: a process that cannot reach the database stops
// working before anyone else may take over. Safety does not depend on it — every write
// is fenced on (owner, epoch) in its own transaction — but it avoids wasted work.
//
// Owner ids are "<host>:<pid>:<uuid>", new at every start, so a restarted process never
// mistakes an old lease for its own, and a fence on (owner, epoch) holds even when a
// database failover lost the last epoch bump.
//
// Thread-safety: all public methods may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/watchers.h"
#include "delivery/coordinator.h"
#include "pg/client.h"

namespace icestream::scaleout {

struct LeaseOptions {
  int64_t lease_ms = 10000;
  int64_t renew_ms = 2000;
  int64_t take_ms = 3000;
  std::string listen;  // where this process serves /metrics and /health (for status)
};

class LeaseManager final : public delivery::Coordinator {
 public:
  // Registers this process and starts the lease thread. `pool` must outlive it.
  static Result<std::unique_ptr<LeaseManager>> Start(pg::PgPool* pool, LeaseOptions options);
  // A process that reads and writes the pool's channels but delivers nothing (`icestream
  // channels --pg`): not registered as a worker, no lease thread, never holds a unit (so
  // it counts in no one's fair share, and every fenced write of it matches nothing).
  static std::unique_ptr<LeaseManager> Observe(pg::PgPool* pool);
  ~LeaseManager() override;

  uint64_t HeldEpoch(const std::string& channel_id, const std::string& unit) const override;
  void Offer(const std::string& channel_id, const std::vector<std::string>& units) override;
  void Forget(const std::string& channel_id) override;
  std::string owner() const override { return owner_; }
  void SetBusy(const std::string& channel_id, const std::string& unit, bool busy) override;
  bool Draining(const std::string& channel_id, const std::string& unit) const override;
  Result<std::map<std::string, UnitOwner>> Owners(const std::string& channel_id) const override;
  std::shared_ptr<void> WatchTaken(std::function<void()> taken) override {
    return taken_watchers_.Add("", std::move(taken));
  }

  // The unit a shard's state is fenced by: the channel's own unit when it was offered
  // (a channel delivered as one unit), else the shard's.
  std::string UnitFor(const std::string& channel_id, const std::string& shard) const;
  // The unit of a channel's lifecycle: its own unit when it was offered, else "control".
  std::string ControlUnitFor(const std::string& channel_id) const;

  // Stops the thread. With `handoff`, the units are given back (owner cleared) so that
  // others take them at once instead of waiting for the leases to expire (SIGTERM). The
  // caller stops delivery first.
  void Stop(bool handoff);

  // Held units (channel id → unit → epoch), for status and tests.
  std::map<std::string, std::map<std::string, uint64_t>> Held() const;
  // Runs one renew/take cycle now (tests).
  void CycleForTest();

 private:
  LeaseManager(pg::PgPool* pool, LeaseOptions options, std::string owner);
  void Loop();
  void Cycle(bool take);
  Status Renew();
  Status InsertOffered();
  Status Take();
  std::vector<std::string> OfferedChannels() const;

  pg::PgPool* pool_;
  const LeaseOptions options_;
  const std::string owner_;

  std::mutex cycle_mu_;  // held through each Cycle
  mutable std::mutex mu_;
  struct Unit {
    uint64_t epoch = 0;
  };
  std::map<std::pair<std::string, std::string>, Unit> held_;
  std::map<std::string, std::set<std::string>> offered_;  // channel → units
  std::set<std::pair<std::string, std::string>> inserted_;
  std::set<std::string> interested_;  // channels whose icestream_interest row is written
  std::set<std::pair<std::string, std::string>> busy_;      // units with a batch running
  std::set<std::pair<std::string, std::string>> draining_;  // to be handed over when idle
  std::chrono::steady_clock::time_point valid_until_;       // of the held set (local clock)

  Watchers taken_watchers_;  // WatchTaken's

  std::mutex loop_mu_;
  std::condition_variable loop_cv_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> offered_new_{false};  // units offered since the last cycle
  std::thread thread_;
};

}  // namespace icestream::scaleout
