// Per-channel delivery metrics (kds-delivery-spec.md §5.1) and their Prometheus
// exposition: S3 channels as DeliveryToS3_<Metric>, table channels as
// DeliveryToIceberg_<Metric> ('.' of the CloudWatch names written as '_'), each with the
// labels channel_name, channel_id and stream_name. Counters are atomics: updated by
// delivery workers, read by /metrics.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "delivery/channel.h"
#include "delivery/sink.h"

namespace icestream::delivery {

struct ChannelMetrics {
  std::atomic<uint64_t> bytes_in{0};
  std::atomic<uint64_t> bytes_processed{0};
  std::atomic<uint64_t> bytes_out{0};
  std::atomic<uint64_t> record_count{0};
  std::atomic<uint64_t> successful_record_count{0};
  std::atomic<uint64_t> failed_record_count{0};
  std::atomic<uint64_t> delivery_success{0};  // objects (S3) or commits (tables)
  std::atomic<uint64_t> dlq_delivery_success{0};
  std::atomic<int64_t> data_freshness_ms{0};
  // icestream's own: failed delivery attempts (each retried later), since when the
  // channel's attempts have been failing (0: the last one succeeded), and records that
  // expired from the source before they could be delivered.
  std::atomic<uint64_t> retryable_failures{0};
  std::atomic<int64_t> failing_since_ms{0};
  std::atomic<uint64_t> records_expired{0};

  void Add(const DeliveryCounts& c);
};

struct MetricsRow {
  DestinationType destination = DestinationType::kS3;
  std::string channel_name;
  std::string channel_id;
  std::string stream_name;
  const ChannelMetrics* metrics = nullptr;
  std::string state;              // "ACTIVE", "FAILED", ... (the channel state gauge)
  std::vector<SinkMetric> extra;  // the sink's own figures
};

// Every metric family of both destinations (HELP and TYPE lines even without channels).
std::string PrometheusText(const std::vector<MetricsRow>& rows);

}  // namespace icestream::delivery
