// RequestMetrics: every API call the router dispatched, counted and timed by service,
// operation and error code (icestream_api_requests_total and
// icestream_api_request_duration_seconds), and the last API errors for the console's
// overview.
//
// Labels stay bounded: `operation` is an operation the service knows, or "unknown";
// `error_code` is the AWS error type of the answer, or "none".
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/histogram.h"

namespace icestream::metrics {

struct ApiError {
  int64_t time_ms = 0;
  std::string service;
  std::string operation;
  std::string error_code;
  int http_status = 0;
  std::string message;
};

class RequestMetrics {
 public:
  static constexpr size_t kRecentErrors = 100;

  // One answered call. `error_code` empty: success. `message` (of errors) is kept in
  // the recent-errors list, cut to 300 bytes.
  void Observe(std::string_view service, std::string_view operation, std::string_view error_code,
               int http_status, std::string_view message, int64_t latency_ns, int64_t now_ms);

  std::string PrometheusText() const;
  // Newest first.
  std::vector<ApiError> RecentErrors() const;

 private:
  struct Key {
    std::string service, operation, error_code;
    bool operator<(const Key& o) const {
      return std::tie(service, operation, error_code) <
             std::tie(o.service, o.operation, o.error_code);
    }
  };
  struct Series {
    std::atomic<uint64_t> count{0};
    Histogram latency;
  };
  Series& Get(std::string_view service, std::string_view operation, std::string_view error_code);

  mutable std::shared_mutex mu_;
  std::map<Key, std::unique_ptr<Series>> series_;
  mutable std::mutex errors_mu_;
  std::deque<ApiError> errors_;
};

}  // namespace icestream::metrics
