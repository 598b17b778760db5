// Per-shard pacing of the Kinesis source's read calls.
#include "source/kinesis/shard_pacer.h"

#include <algorithm>
#include <cmath>

namespace icestream::source {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

ShardPacer::ShardPacer(ShardPacerOptions options)
    : options_(options),
      gap_(milliseconds(1000 / std::max(1, options.calls_per_second))),
      budget_(options.bytes_per_second),
      budget_at_(steady_clock::now()) {}

void ShardPacer::Refill(TimePoint now) {
  if (now <= budget_at_) return;
  const double seconds = std::chrono::duration<double>(now - budget_at_).count();
  budget_ = std::min(options_.bytes_per_second, budget_ + seconds * options_.bytes_per_second);
  budget_at_ = now;
}

ShardPacer::TimePoint ShardPacer::ReadyAt(Call kind, TimePoint now) {
  if (kind == Call::kGetShardIterator) return next_iterator_;
  if (records_in_flight_) return TimePoint::max();
  TimePoint at = next_records_;
  if (options_.pace_bytes) {
    Refill(now);
    if (budget_ <= 0) {
      // Above zero a little after the debt is paid back (the server may refill on a
      // coarser clock than this one).
      const double ms = -budget_ / options_.bytes_per_second * 1000.0 + 1.0;
      at = std::max(at, now + milliseconds(static_cast<int64_t>(std::ceil(ms))));
    }
  }
  return at;
}

bool ShardPacer::Acquire(Call kind, const std::atomic<bool>* cancel) {
  std::unique_lock lock(mu_);
  while (true) {
    if (cancel != nullptr && cancel->load()) return false;
    const TimePoint now = steady_clock::now();
    const TimePoint at = ReadyAt(kind, now);
    if (at <= now) break;
    // Wakes for a Release, and at least every 100 ms to look at `cancel`.
    cv_.wait_until(lock, std::min(at, now + milliseconds(100)));
  }
  const TimePoint now = steady_clock::now();
  if (kind == Call::kGetShardIterator) {
    next_iterator_ = now + gap_;
  } else {
    next_records_ = now + gap_;
    records_in_flight_ = true;
  }
  return true;
}

void ShardPacer::Release(Call kind, size_t bytes, bool throttled) {
  {
    std::lock_guard lock(mu_);
    const TimePoint now = steady_clock::now();
    TimePoint& next = kind == Call::kGetShardIterator ? next_iterator_ : next_records_;
    if (throttled) next = std::max(next, now + milliseconds(options_.throttle_backoff_ms));
    if (kind == Call::kGetRecords) {
      records_in_flight_ = false;
      if (options_.pace_bytes) {
        Refill(now);
        budget_ -= static_cast<double>(bytes);
      }
    }
  }
  cv_.notify_all();
}

std::shared_ptr<ShardPacer> ShardPacers::For(const std::string& stream, const std::string& shard) {
  std::lock_guard lock(mu_);
  auto& p = pacers_[{stream, shard}];
  if (!p) p = std::make_shared<ShardPacer>(options_);
  return p;
}

}  // namespace icestream::source
