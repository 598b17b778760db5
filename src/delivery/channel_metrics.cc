// Channel metrics and their Prometheus text.
#include "delivery/channel_metrics.h"

#include <fmt/format.h>

#include <functional>
#include <map>

namespace icestream::delivery {

void ChannelMetrics::Add(const DeliveryCounts& c) {
  bytes_in += c.bytes_in;
  bytes_processed += c.bytes_processed;
  bytes_out += c.bytes_out;
  record_count += c.records_in;
  successful_record_count += c.delivered;
  failed_record_count += c.failed;
  delivery_success += c.deliveries;
  dlq_delivery_success += c.dlq_records;
}

namespace {

struct Def {
  const char* s3_name;
  const char* table_name;
  const char* type;
  const char* help;
  std::function<double(const ChannelMetrics&)> get;
};

const std::vector<Def>& Defs() {
  static const std::vector<Def> kDefs = {
      {"DataFreshness", "DataFreshness", "gauge",
       "Age in seconds of the oldest record not yet delivered.",
       [](const ChannelMetrics& m) { return m.data_freshness_ms.load() / 1000.0; }},
      {"BytesIn", "BytesIn", "counter", "Bytes read from the stream into the channel.",
       [](const ChannelMetrics& m) { return double(m.bytes_in.load()); }},
      {"BytesProcessed", "BytesProcessed", "counter", "Bytes of the valid records delivered.",
       [](const ChannelMetrics& m) { return double(m.bytes_processed.load()); }},
      {"BytesOut", "BytesOut", "counter",
       "Bytes written to the destination (objects or data files).",
       [](const ChannelMetrics& m) { return double(m.bytes_out.load()); }},
      {"RecordCount", "TotalRowCount", "counter", "Records read from the stream.",
       [](const ChannelMetrics& m) { return double(m.record_count.load()); }},
      {"SuccessfulRecordCount", "SuccessfulRowCount", "counter",
       "Records delivered to the destination.",
       [](const ChannelMetrics& m) { return double(m.successful_record_count.load()); }},
      {"FailedRecordCount", "FailedRowCount", "counter",
       "Records that failed validation (sent to the DLQ).",
       [](const ChannelMetrics& m) { return double(m.failed_record_count.load()); }},
      {"DeliverySuccess", "CommitSuccess", "counter",
       "Successful delivery operations (S3: objects written; tables: Iceberg commits).",
       [](const ChannelMetrics& m) { return double(m.delivery_success.load()); }},
      {"DLQDeliverySuccess", "DLQDeliverySuccess", "counter",
       "Records written to the dead-letter queue.",
       [](const ChannelMetrics& m) { return double(m.dlq_delivery_success.load()); }},
  };
  return kDefs;
}

std::string Escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '\\' || c == '"') o.push_back('\\');
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o.push_back(c);
  }
  return o;
}

}  // namespace

std::string PrometheusText(const std::vector<MetricsRow>& rows) {
  std::string out;
  for (DestinationType type : {DestinationType::kS3, DestinationType::kS3Tables}) {
    for (const auto& d : Defs()) {
      std::string name = type == DestinationType::kS3
                             ? std::string("DeliveryToS3_") + d.s3_name
                             : std::string("DeliveryToIceberg_") + d.table_name;
      out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, d.help, name, d.type);
      for (const auto& r : rows) {
        if (r.destination != type) continue;
        out += fmt::format("{}{{channel_name=\"{}\",channel_id=\"{}\",stream_name=\"{}\"}} {}\n",
                           name, Escape(r.channel_name), Escape(r.channel_id),
                           Escape(r.stream_name), d.get(*r.metrics));
      }
    }
  }
  // icestream's figures of every channel, whatever its destination.
  struct Own {
    const char* name;
    const char* type;
    const char* help;
    std::function<double(const MetricsRow&)> get;
  };
  static const std::vector<Own> kOwn = {
      {"channel_delivery_failures_total", "counter",
       "Delivery attempts that failed and were retried later (the destination or source was "
       "unavailable).",
       [](const MetricsRow& r) { return double(r.metrics->retryable_failures.load()); }},
      {"channel_failing_since_seconds", "gauge",
       "Epoch seconds since which the channel's delivery attempts have been failing; 0 while "
       "they succeed.",
       [](const MetricsRow& r) { return r.metrics->failing_since_ms.load() / 1000.0; }},
      {"channel_records_expired_total", "counter",
       "Records that expired from the stream before the channel could deliver them.",
       [](const MetricsRow& r) { return double(r.metrics->records_expired.load()); }},
  };
  for (const auto& o : kOwn) {
    out += fmt::format("# HELP icestream_{} {}\n# TYPE icestream_{} {}\n", o.name, o.help, o.name,
                       o.type);
    for (const auto& r : rows) {
      out += fmt::format(
          "icestream_{}{{channel_name=\"{}\",channel_id=\"{}\",stream_name=\"{}\"}} {}\n", o.name,
          Escape(r.channel_name), Escape(r.channel_id), Escape(r.stream_name), o.get(r));
    }
  }
  out +=
      "# HELP icestream_channel_state The channel's state (1 for the state it is in).\n"
      "# TYPE icestream_channel_state gauge\n";
  for (const auto& r : rows) {
    if (r.state.empty()) continue;
    out += fmt::format(
        "icestream_channel_state{{channel_name=\"{}\",channel_id=\"{}\",stream_name=\"{}\","
        "state=\"{}\"}} 1\n",
        Escape(r.channel_name), Escape(r.channel_id), Escape(r.stream_name), r.state);
  }
  // The sinks' own figures, one family per name.
  std::map<std::string, std::pair<const SinkMetric*, std::string>> families;
  for (const auto& r : rows) {
    for (const auto& m : r.extra) {
      auto& f = families[m.name];
      if (f.first == nullptr) f.first = &m;
      f.second += fmt::format(
          "icestream_{}{{channel_name=\"{}\",channel_id=\"{}\",stream_name=\"{}\"}} {}\n", m.name,
          Escape(r.channel_name), Escape(r.channel_id), Escape(r.stream_name), m.value);
    }
  }
  for (const auto& [name, f] : families) {
    out += fmt::format("# HELP icestream_{} {}\n# TYPE icestream_{} {}\n", name, f.first->help,
                       name, f.first->type);
    out += f.second;
  }
  return out;
}

}  // namespace icestream::delivery
