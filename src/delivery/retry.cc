// Retrying writes.
#include "delivery/retry.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/crypto.h"

namespace icestream::delivery {

namespace {
constexpr int64_t kMaxRetryDelayMs = 30000;
}

bool IsPermanent(const Status& st) {
  return st.code() == StatusCode::kNotFound || st.code() == StatusCode::kInvalidArgument ||
         st.code() == StatusCode::kAlreadyExists;
}

bool SleepUnlessStopping(const std::function<bool()>& stopping, int64_t ms) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (stopping && stopping()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(50, ms)));
  }
  return !(stopping && stopping());
}

Status PutWithRetry(const SinkEnv& env, objectstore::ObjectStore* store, const std::string& bucket,
                    const std::string& key, std::string_view body, const objectstore::PutOptions& opts) {
  std::mt19937_64 rng(crypto::RandomU64());
  int64_t delay = 200;
  for (int attempt = 1;; ++attempt) {
    Status st = store->Put(bucket, key, body, opts);
    if (st.ok() || IsPermanent(st)) return st;
    spdlog::warn("upload of {}/{} failed (attempt {}): {}; retrying", bucket, key, attempt, st.ToString());
    if (env.log_event) {
      env.log_event({{"eventType", "DeliveryAttemptFailed"},
                     {"destination", bucket + "/" + key},
                     {"attempt", attempt},
                     {"errorMessage", st.message()}});
    }
    int64_t wait = static_cast<int64_t>(rng() % static_cast<uint64_t>(delay)) + delay / 2;
    if (!SleepUnlessStopping(env.stopping, wait)) return ShuttingDown("channel stopped while uploading");
    delay = std::min<int64_t>(delay * 2, kMaxRetryDelayMs);
  }
}

}  // namespace icestream::delivery
