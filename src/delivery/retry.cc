// The retry policy.
#include "delivery/retry.h"

#include <algorithm>

#include "delivery/delivery_store.h"

namespace icestream::delivery {

FailureKind ClassifyFailure(const Status& st) {
  switch (st.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kAlreadyExists:
      return FailureKind::kPermanent;
    case StatusCode::kFailedPrecondition:
      // A scale-out write fenced off (this process lost the unit's lease): the unit is
      // another process's now, nothing about the destination is wrong.
      if (st.Is(StoreError::kFenced)) return FailureKind::kRetry;
      return FailureKind::kGrace;
    case StatusCode::kNotFound:
      return FailureKind::kGrace;
    default:
      return FailureKind::kRetry;
  }
}

bool IsPermanent(const Status& st) { return ClassifyFailure(st) == FailureKind::kPermanent; }

int64_t RetryDelayMs(int failures, int64_t min_ms, int64_t max_ms, uint64_t random) {
  int shift = std::clamp(failures - 1, 0, 20);
  int64_t base = std::min<int64_t>(max_ms, min_ms << shift);
  base = std::max<int64_t>(1, base);
  // [base/2, base*3/2), capped at max_ms, and never 0 (a cap of 0 in the configuration
  // must not turn the retry loop into a busy loop).
  int64_t jittered = base / 2 + static_cast<int64_t>(random % static_cast<uint64_t>(base));
  return std::max<int64_t>(1, std::min<int64_t>(max_ms, jittered));
}

}  // namespace icestream::delivery
