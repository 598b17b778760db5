// Histogram buckets.
#include "metrics/histogram.h"

namespace icestream::metrics {

void Histogram::ObserveNanos(int64_t nanos) {
  if (nanos < 0) nanos = 0;
  double seconds = static_cast<double>(nanos) / 1e9;
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_nanos_.fetch_add(static_cast<uint64_t>(nanos), std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  for (size_t i = 0; i < counts_.size(); ++i) {
    s.counts[i] = counts_[i].load(std::memory_order_relaxed);
    s.count += s.counts[i];
  }
  s.sum_seconds = static_cast<double>(sum_nanos_.load(std::memory_order_relaxed)) / 1e9;
  return s;
}

}  // namespace icestream::metrics
