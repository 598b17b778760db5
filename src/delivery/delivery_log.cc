// Delivery log appends.
#include "delivery/delivery_log.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>

#include "common/fs.h"
#include "common/time_format.h"

namespace icestream::delivery {

void DeliveryLog::Write(nlohmann::json event, int64_t now_ms) {
  event["timestamp"] = FormatIso8601Ms(now_ms);
  event["logGroupName"] = group_;
  std::string line = event.dump() + "\n";
  std::lock_guard lock(mu_);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    spdlog::warn("delivery log {}: cannot open", path_);
    return;
  }
  // One write per line; O_APPEND keeps lines whole.
  if (::write(fd, line.data(), line.size()) < 0)
    spdlog::warn("delivery log {}: write failed", path_);
  ::close(fd);
}

}  // namespace icestream::delivery
