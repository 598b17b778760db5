// Process exit-code plumbing shared by the subcommands.
#include "server/commands.h"

#include <atomic>

namespace icestream::server {
namespace {
std::atomic<int> g_exit_code{0};
}

int ExitCode() { return g_exit_code.load(); }
void SetExitCode(int code) { g_exit_code.store(code); }

}  // namespace icestream::server
