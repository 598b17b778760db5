// The one retry policy of delivery (ShardRunner is the only retry loop above the
// clients): which failures are retried, which are retried only for a grace period, which
// fail a channel at once, and how long a batch waits before its next attempt.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace icestream::delivery {

enum class FailureKind {
  // Retried for as long as it lasts: the destination or source is unavailable, slow or
  // throttling, a commit race was lost, an I/O error.
  kRetry,
  // Retried for the grace period (RunnerOptions::destination_grace_ms), then the channel
  // goes FAILED: something is missing (kNotFound: a bucket, a table bucket, the table)
  // or access is refused (kFailedPrecondition). Both are often a moment of an
  // environment coming up (a bucket created just after the store starts, credentials
  // that arrive late); past the grace they are taken as lasting. (A scale-out write
  // fenced off by another process's lease, StoreError::kFenced, is kRetry: nothing is
  // wrong there.)
  kGrace,
  // The channel goes FAILED at once: the request is refused as such (kInvalidArgument),
  // or the destination belongs to someone else (kAlreadyExists).
  kPermanent,
};

FailureKind ClassifyFailure(const Status& st);

// True for kPermanent failures.
bool IsPermanent(const Status& st);

// The wait before attempt `failures` + 1: min_ms doubling per failure up to max_ms, with
// a jitter of ±50 % drawn from `random` (so channels that failed together spread out).
int64_t RetryDelayMs(int failures, int64_t min_ms, int64_t max_ms, uint64_t random);

}  // namespace icestream::delivery
