// spdlog configuration: one stderr sink, ISO timestamps, thread ids.
#include "common/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace icestream {

void SetupLogging(const std::string& level) {
  spdlog::drop("icestream");  // a second call (tests, a command run twice) replaces it
  auto logger = spdlog::stderr_color_mt("icestream");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%L%$ [%t] %v", spdlog::pattern_time_type::utc);
  spdlog::set_level(spdlog::level::from_str(level));
}

}  // namespace icestream
