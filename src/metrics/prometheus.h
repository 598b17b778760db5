// PrometheusWriter: builds the Prometheus text exposition format 0.0.4 (HELP and TYPE
// lines, then the family's samples), with label values escaped as the format requires
// (backslash, double quote, newline).
//
// Not thread-safe; one writer per exposition.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "metrics/histogram.h"

namespace icestream::metrics {

using Labels = std::vector<std::pair<std::string_view, std::string_view>>;

// `value` escaped for use between the double quotes of a label.
std::string EscapeLabelValue(std::string_view value);

class PrometheusWriter {
 public:
  // Starts a family: `type` is "counter", "gauge" or "histogram".
  void Family(std::string_view name, std::string_view type, std::string_view help);
  void Sample(std::string_view name, const Labels& labels, double value);
  // `name`_bucket (cumulative, le="..." and le="+Inf"), `name`_sum and `name`_count.
  void HistogramSamples(std::string_view name, const Labels& labels, const Histogram::Snapshot& h);

  const std::string& text() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void Name(std::string_view name, const Labels& labels, std::string_view le = {});
  std::string out_;
};

// A number as Prometheus writes it: integers without a fraction, others in the
// shortest form that reads back exactly.
std::string FormatValue(double v);

}  // namespace icestream::metrics
