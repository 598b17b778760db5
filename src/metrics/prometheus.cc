// Prometheus text exposition.
#include "metrics/prometheus.h"

#include <charconv>
#include <cmath>

namespace icestream::metrics {

std::string EscapeLabelValue(std::string_view value) {
  std::string o;
  o.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') {
      o.push_back('\\');
      o.push_back(c);
    } else if (c == '\n') {
      o += "\\n";
    } else {
      o.push_back(c);
    }
  }
  return o;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 9.007199254740992e15) {
    return std::to_string(static_cast<int64_t>(v));
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

void PrometheusWriter::Family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += help;
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PrometheusWriter::Name(std::string_view name, const Labels& labels, std::string_view le) {
  out_ += name;
  if (labels.empty() && le.empty()) return;
  out_ += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out_ += ',';
    first = false;
    out_ += k;
    out_ += "=\"";
    out_ += EscapeLabelValue(v);
    out_ += '"';
  }
  if (!le.empty()) {
    if (!first) out_ += ',';
    out_ += "le=\"";
    out_ += le;
    out_ += '"';
  }
  out_ += '}';
}

void PrometheusWriter::Sample(std::string_view name, const Labels& labels, double value) {
  Name(name, labels);
  out_ += ' ';
  out_ += FormatValue(value);
  out_ += '\n';
}

void PrometheusWriter::HistogramSamples(std::string_view name, const Labels& labels,
                                        const Histogram::Snapshot& h) {
  std::string bucket = std::string(name) + "_bucket";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < Histogram::kBounds.size(); ++i) {
    cumulative += h.counts[i];
    Name(bucket, labels, FormatValue(Histogram::kBounds[i]));
    out_ += ' ' + std::to_string(cumulative) + '\n';
  }
  Name(bucket, labels, "+Inf");
  out_ += ' ' + std::to_string(h.count) + '\n';
  Name(std::string(name) + "_sum", labels);
  out_ += ' ' + FormatValue(h.sum_seconds) + '\n';
  Name(std::string(name) + "_count", labels);
  out_ += ' ' + std::to_string(h.count) + '\n';
}

}  // namespace icestream::metrics
