// Process-wide logging setup (spdlog). Library code logs through spdlog's default
// logger; each command calls SetupLogging as it starts (logs go to stderr: stdout is
// left to a command's answer).
#pragma once

#include <string>

namespace icestream {

// level: trace|debug|info|warn|error|off.
void SetupLogging(const std::string& level);

}  // namespace icestream
