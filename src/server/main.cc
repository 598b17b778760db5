// icestream: one binary, several subcommands (serve, demo, convert, channels, ...).
// Each subcommand lives in its own *_command.cc and registers itself here.
#include <CLI/CLI.hpp>

#include "server/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"icestream: a Kinesis-compatible stream server that delivers to Iceberg and S3"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("icestream ") + ICESTREAM_VERSION);
  icestream::server::AddServeCommand(&app);
  icestream::server::AddConvertCommand(&app);
  icestream::server::AddParquetCommand(&app);
  icestream::server::AddChannelsCommand(&app);
  icestream::server::AddFsckCommand(&app);
  icestream::server::AddWorkerCommand(&app);
  icestream::server::AddPoolCommand(&app);
  CLI11_PARSE(app, argc, argv);
  return icestream::server::ExitCode();
}
