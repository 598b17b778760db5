// Registration of the CLI subcommands; each Add*Command lives in its own file.
#pragma once

namespace CLI {
class App;
}

namespace icestream::server {

void AddServeCommand(CLI::App* app);
void AddChannelsCommand(CLI::App* app);
void AddConvertCommand(CLI::App* app);
void AddParquetCommand(CLI::App* app);
void AddFsckCommand(CLI::App* app);
void AddWorkerCommand(CLI::App* app);
void AddPoolCommand(CLI::App* app);

// The process exit code chosen by the subcommand that ran (0 unless it failed).
int ExitCode();
void SetExitCode(int code);

}  // namespace icestream::server
