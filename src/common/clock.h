// Clock: the injectable source of wall time (milliseconds since the Unix epoch).
// Tests drive a ManualClock; the server uses SystemClock. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>

namespace icestream {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowMillis() const = 0;
  virtual int64_t NowMicros() const { return NowMillis() * 1000; }
};

class SystemClock final : public Clock {
 public:
  int64_t NowMillis() const override;
  int64_t NowMicros() const override;
  // A process-wide instance for code that is handed no clock (CLI tools, main).
  static const SystemClock* Default();
};

class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t now_ms) : now_ms_(now_ms) {}
  int64_t NowMillis() const override { return now_ms_.load(); }
  void Set(int64_t ms) { now_ms_.store(ms); }
  void Advance(int64_t ms) { now_ms_.fetch_add(ms); }

 private:
  std::atomic<int64_t> now_ms_;
};

// Monotonic nanoseconds, for measuring durations only.
int64_t MonotonicNanos();

}  // namespace icestream
