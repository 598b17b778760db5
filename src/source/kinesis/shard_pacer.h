// ShardPacer: one process's calls on one shard, kept within AWS's per-shard read limits
// (aws-api.md §C.4; Kinesis GetRecords / GetShardIterator pages):
//
//   GetRecords        at most `calls_per_second` call starts a second, one call at a time,
//                     and — when bytes are paced — only while the shard's read budget
//                     (`bytes_per_second`, at most one second's worth banked) is above zero:
//                     an answer of N bytes spends N, so after a 10 MiB answer at 2 MiB/s the
//                     next call waits 4 s (a server admits a read while its budget is > 0
//                     and charges the answer afterwards, as AWS and `serve --aws-strict` do);
//   GetShardIterator  at most `calls_per_second` call starts a second.
//
// Every per-shard read of the Kinesis source goes through the shard's pacer — the shard's
// reader, a replay read directly (DirectRangeReader), a describe's one-record look
// (Behind) — so together they stay within the limits (one pacer per stream and shard for
// a whole process: several channels on one stream share it). A throttling answer
// (ProvisionedThroughputExceededException: someone else spends the shard's budget) holds
// every call of that kind back for `throttle_backoff_ms`.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace icestream::source {

struct ShardPacerOptions {
  int calls_per_second = 5;               // AWS: 5 GetRecords and 5 GetShardIterator a second
  bool pace_bytes = false;                // AWS's 2 MiB/s per shard
  double bytes_per_second = 2 * 1048576;  // (the budget also holds one second's worth)
  int64_t throttle_backoff_ms = 1000;
};

class ShardPacer {
 public:
  enum class Call { kGetRecords, kGetShardIterator };

  explicit ShardPacer(ShardPacerOptions options);

  // Waits for this call's turn; false (nothing acquired) when `cancel` turned true first.
  // Every true is followed by one Release of the same kind.
  bool Acquire(Call kind, const std::atomic<bool>* cancel = nullptr);
  // The acquired call ended: its answer carried `bytes` (records' data plus partition keys;
  // 0 for a failure), or it was throttled.
  void Release(Call kind, size_t bytes, bool throttled);

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  // When a call of `kind` may start (mu_ held); TimePoint::max() while one is in flight.
  TimePoint ReadyAt(Call kind, TimePoint now);
  void Refill(TimePoint now);

  const ShardPacerOptions options_;
  const std::chrono::milliseconds gap_;
  std::mutex mu_;
  std::condition_variable cv_;
  TimePoint next_records_{};
  TimePoint next_iterator_{};
  bool records_in_flight_ = false;
  double budget_;  // bytes; below zero after a large answer
  TimePoint budget_at_;
};

// The pacers of one process, one per (stream, shard), made on first use.
class ShardPacers {
 public:
  explicit ShardPacers(ShardPacerOptions options) : options_(options) {}
  std::shared_ptr<ShardPacer> For(const std::string& stream, const std::string& shard);

 private:
  const ShardPacerOptions options_;
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<ShardPacer>> pacers_;
};

}  // namespace icestream::source
