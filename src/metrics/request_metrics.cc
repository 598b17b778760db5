// Request counts, latencies and recent errors.
#include "metrics/request_metrics.h"

#include <tuple>

#include "metrics/prometheus.h"

namespace icestream::metrics {

RequestMetrics::Series& RequestMetrics::Get(std::string_view service, std::string_view operation,
                                            std::string_view error_code) {
  Key key{std::string(service), std::string(operation),
          error_code.empty() ? std::string("none") : std::string(error_code)};
  {
    std::shared_lock lock(mu_);
    auto it = series_.find(key);
    if (it != series_.end()) return *it->second;
  }
  std::unique_lock lock(mu_);
  auto& s = series_[key];
  if (!s) s = std::make_unique<Series>();
  return *s;
}

void RequestMetrics::Observe(std::string_view service, std::string_view operation,
                             std::string_view error_code, int http_status, std::string_view message,
                             int64_t latency_ns, int64_t now_ms) {
  Series& s = Get(service, operation, error_code);
  s.count.fetch_add(1, std::memory_order_relaxed);
  s.latency.ObserveNanos(latency_ns);
  if (error_code.empty()) return;
  ApiError e{now_ms,
             std::string(service),
             std::string(operation),
             std::string(error_code),
             http_status,
             std::string(message.substr(0, 300))};
  std::lock_guard lock(errors_mu_);
  errors_.push_front(std::move(e));
  if (errors_.size() > kRecentErrors) errors_.pop_back();
}

std::string RequestMetrics::PrometheusText() const {
  PrometheusWriter w;
  std::shared_lock lock(mu_);
  w.Family("icestream_api_requests_total", "counter",
           "API calls answered, by service, operation and error code (\"none\": success).");
  for (const auto& [k, s] : series_) {
    w.Sample("icestream_api_requests_total",
             {{"service", k.service}, {"operation", k.operation}, {"error_code", k.error_code}},
             static_cast<double>(s->count.load(std::memory_order_relaxed)));
  }
  w.Family("icestream_api_request_duration_seconds", "histogram",
           "Time from a call's dispatch to its answer (for event streams: to the answer's "
           "headers), by service, operation and error code.");
  for (const auto& [k, s] : series_) {
    w.HistogramSamples(
        "icestream_api_request_duration_seconds",
        {{"service", k.service}, {"operation", k.operation}, {"error_code", k.error_code}},
        s->latency.Read());
  }
  return w.Take();
}

std::vector<ApiError> RequestMetrics::RecentErrors() const {
  std::lock_guard lock(errors_mu_);
  return {errors_.begin(), errors_.end()};
}

}  // namespace icestream::metrics
