// Histogram: a fixed-bucket duration histogram for Prometheus (`_bucket`, `_sum`,
// `_count`), in seconds. Observe() is lock-free (relaxed atomics); Read() returns a
// snapshot that may mix an observation's bucket and sum, which Prometheus tolerates.
//
// Thread-safe. Not copyable (atomics).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace icestream::metrics {

class Histogram {
 public:
  // Upper bounds in seconds: from 0.5 ms (an in-memory call) to 10 s (a call held up
  // by a full disk or a slow fsync), roughly 2.5x apart.
  static constexpr std::array<double, 14> kBounds = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

  struct Snapshot {
    std::array<uint64_t, kBounds.size() + 1> counts{};  // per bucket, not cumulative; last: +Inf
    uint64_t count = 0;
    double sum_seconds = 0;
  };

  void ObserveNanos(int64_t nanos);
  Snapshot Read() const;

 private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> counts_{};
  std::atomic<uint64_t> sum_nanos_{0};
};

}  // namespace icestream::metrics
