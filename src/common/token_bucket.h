// TokenBucket: a rate limit of `rate` units per second that holds at most one second's
// worth. Not thread-safe; the owner locks. Used for AWS's documented rates under
// --aws-strict (kinesis control plane, stream::ShardLimiter).
#pragma once

#include <algorithm>
#include <cstdint>

namespace icestream {

struct TokenBucket {
  double rate = 0;    // units per second, and the capacity
  double tokens = 0;  // may go below zero: debt left by a cost larger than what was there
  int64_t last_ms = 0;

  static TokenBucket Full(double rate, int64_t now_ms) { return {rate, rate, now_ms}; }

  void Refill(int64_t now_ms) {
    if (now_ms > last_ms) {
      tokens = std::min(rate, tokens + static_cast<double>(now_ms - last_ms) * rate / 1000.0);
    }
    // A wall clock stepped back restarts the count from now instead of pausing refills
    // until it catches up.
    last_ms = now_ms;
  }
  // Takes one unit when a whole one is there.
  bool TakeOne(int64_t now_ms) {
    Refill(now_ms);
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  }
};

}  // namespace icestream
