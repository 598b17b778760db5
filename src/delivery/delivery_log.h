// DeliveryLog: the per-channel JSON-lines delivery log that stands in for CloudWatch Logs
// (kds-delivery-spec.md §5.2) when LoggingConfiguration.CloudWatchLogs.Enabled is true.
// One file per channel: DATA_DIR/delivery-logs/<channel-id>/<LogStreamName>.jsonl; every
// event names the log group. Thread-safe (appends are serialized).
#pragma once

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace icestream::delivery {

class DeliveryLog {
 public:
  DeliveryLog(std::string path, std::string log_group)
      : path_(std::move(path)), group_(std::move(log_group)) {}
  // Appends one event (adds "timestamp" and "logGroupName").
  void Write(nlohmann::json event, int64_t now_ms);
  const std::string& path() const { return path_; }

 private:
  std::mutex mu_;
  std::string path_;
  std::string group_;
};

}  // namespace icestream::delivery
