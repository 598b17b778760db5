// Retrying writes for sinks: jittered exponential backoff that a channel deletion or a
// server shutdown interrupts at once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "delivery/sink.h"
#include "objectstore/object_store.h"

namespace icestream::delivery {

// Puts with retries (200 ms doubling to 30 s, jittered) until success, an error that
// IsPermanent, or env.stopping() (then kShuttingDown). Each failed attempt is a
// "DeliveryAttemptFailed" event in the delivery log.
Status PutWithRetry(const SinkEnv& env, objectstore::ObjectStore* store, const std::string& bucket,
                    const std::string& key, std::string_view body, const objectstore::PutOptions& opts);

// Sleeps `ms` in short steps; false as soon as stopping() is true.
bool SleepUnlessStopping(const std::function<bool()>& stopping, int64_t ms);

}  // namespace icestream::delivery
