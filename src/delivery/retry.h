// The one retry policy of delivery (ShardRunner is the only retry loop above the
// clients): which errors fail a channel for good, and how long a batch waits before its
// next attempt.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace icestream::delivery {

// Errors after which delivering to this destination cannot succeed and the channel goes
// FAILED: the destination is gone (kNotFound), the request is refused as such
// (kInvalidArgument), or the destination belongs to someone else (kAlreadyExists).
// Everything else (unavailable, access denied, conflicts, I/O) is retried.
bool IsPermanent(const Status& st);

// The wait before attempt `failures` + 1: min_ms doubling per failure up to max_ms, with
// a jitter of ±50 % drawn from `random` (so channels that failed together spread out).
int64_t RetryDelayMs(int failures, int64_t min_ms, int64_t max_ms, uint64_t random);

}  // namespace icestream::delivery
