// Process-wide logging setup (spdlog). Library code logs through spdlog's default
// logger; only main() calls SetupLogging.
#pragma once

#include <string>

namespace icestream {

// level: trace|debug|info|warn|error|off.
void SetupLogging(const std::string& level);

}  // namespace icestream
