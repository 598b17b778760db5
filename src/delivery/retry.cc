// The retry policy.
#include "delivery/retry.h"

#include <algorithm>

namespace icestream::delivery {

bool IsPermanent(const Status& st) {
  return st.code() == StatusCode::kNotFound || st.code() == StatusCode::kInvalidArgument ||
         st.code() == StatusCode::kAlreadyExists;
}

int64_t RetryDelayMs(int failures, int64_t min_ms, int64_t max_ms, uint64_t random) {
  int shift = std::clamp(failures - 1, 0, 20);
  int64_t base = std::min<int64_t>(max_ms, min_ms << shift);
  base = std::max<int64_t>(1, base);
  // [base/2, base*3/2), capped at max_ms.
  int64_t jittered = base / 2 + static_cast<int64_t>(random % static_cast<uint64_t>(base));
  return std::min<int64_t>(max_ms, std::max<int64_t>(1, jittered));
}

}  // namespace icestream::delivery
