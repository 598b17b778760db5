// `icestream serve`: runs the server until SIGINT/SIGTERM.
#include <CLI/CLI.hpp>

#include <iostream>

#include "server/commands.h"

namespace icestream::server {

void AddServeCommand(CLI::App* app) {
  auto* cmd = app->add_subcommand("serve", "Run the server");
  cmd->callback([] {
    std::cerr << "serve: not implemented yet\n";
    SetExitCode(1);
  });
}

}  // namespace icestream::server
