// `icestream serve`: runs the server until SIGINT/SIGTERM.
#include <fmt/format.h>
#include <malloc.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include "common/logging.h"
#include "server/commands.h"
#include "server/config.h"
#include "server/delivery_wiring.h"
#include "server/server.h"

namespace icestream::server {
namespace {

// Connections and active segments each hold a descriptor; lift the soft limit to the
// hard one. Returns the soft limit in force.
// Request bodies (up to 16 MiB), record batches and Parquet buffers are large, short-lived
// allocations. glibc serves those above its mmap threshold with fresh mappings and trims
// freed heap tops eagerly, so every request paid page faults on memory it had just given
// back: on a 2-core VM that was over half the server's CPU for 1 MiB PutRecords over
// HTTP/2. Keep such blocks in the heap for reuse instead. An explicit value also turns
// off glibc's dynamic threshold; GLIBC_TUNABLES still override these.
// The flip side: a thread arena's heaps (64 MiB each) then keep what they ever held, and
// glibc makes up to 8 arenas per core as threads come and go (converter, upload and
// read-ahead threads of every batch). A 16-shard, 1 GB table backlog peaked at 8 arenas of
// ~60 MiB (peak RSS 511-640 MiB over ten runs of bench/table-delivery --only memory);
// with 2 per core it was 439-514 MiB over six.
void TuneAllocator() {
  if (!std::getenv("GLIBC_TUNABLES")) {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    mallopt(M_ARENA_MAX, static_cast<int>(std::max(2L, 2 * cores)));
  }
}

uint64_t RaiseFileLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(rl.rlim_cur);
}

std::string AbsolutePath(const std::string& p) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(p, ec);
  return ec ? p : abs.lexically_normal().string();
}

struct ServeFlags {
  std::string config_file;
  std::string data_dir;
  std::string listen;
  std::string log_level;
  std::string s3_endpoint;
  std::string tls_cert;
  std::string tls_key;
  std::string pg;
  bool aws_strict = false;
  bool no_fsync = false;
  bool access_log = false;
};

int RunServe(const ServeFlags& f) {
  Config c;
  if (!f.config_file.empty()) {
    auto loaded = LoadConfigFile(f.config_file, c);
    if (!loaded.ok()) {
      std::cerr << "icestream: " << loaded.status().message() << "\n";
      return 2;
    }
    c = *loaded;
  }
  if (!f.data_dir.empty()) c.data_dir = f.data_dir;
  if (!f.listen.empty()) c.listen = f.listen;
  if (!f.log_level.empty()) c.log_level = f.log_level;
  if (f.aws_strict) c.aws_strict = true;
  if (!f.s3_endpoint.empty()) c.s3_endpoint = f.s3_endpoint;
  if (!f.tls_cert.empty()) c.tls_cert = f.tls_cert;
  if (!f.tls_key.empty()) c.tls_key = f.tls_key;
  if (!f.pg.empty()) c.pg = f.pg;
  if (f.no_fsync) c.fsync = false;
  if (f.access_log) c.access_log = true;
  if (!ValidLogLevel(c.log_level)) {
    std::cerr << "icestream: log level '" << c.log_level
              << "' is not one of trace, debug, info, warn, error, off\n";
    return 2;
  }
  SetupLogging(c.log_level);
  uint64_t file_limit = RaiseFileLimit();
  TuneAllocator();

  // Block the stop signals in every thread; the main thread waits for them.
  sigset_t set = BlockStopSignals();

  auto server = IcestreamServer::Start(c);
  if (!server.ok()) {
    spdlog::error("cannot start: {}", server.status().ToString());
    return 1;
  }
  // The one line that says what this server is: what it serves, where its data lives,
  // and how it treats callers.
  std::string auth = c.credentials.empty()
                         ? "any signature accepted (no [[credentials]])"
                         : fmt::format("signatures verified ({} key{})", c.credentials.size(),
                                       c.credentials.size() == 1 ? "" : "s");
  std::string catalog = c.credentials.empty() && c.bearer_tokens.empty() ? "open"
                        : c.bearer_tokens.empty()                        ? "SigV4 (s3tables)"
                                                  : "SigV4 (s3tables) or bearer token";
  spdlog::info(
      "icestream {} listening on http://{}:{}{} | data dir {} | region {} account {} | auth: {} | "
      "iceberg catalog: {}{} | /metrics: {} | aws-strict {} | S3: {} | fsync {} | open files limit "
      "{}",
      ICESTREAM_VERSION, c.host(), (*server)->port(),
      c.tls_cert.empty() ? std::string() : " and https (" + c.tls_cert + ")",
      AbsolutePath(c.data_dir), c.region, c.account, auth, catalog,
      c.pg.empty() ? "" : " in PostgreSQL (scale-out pool)",
      (!c.credentials.empty() || !c.bearer_tokens.empty()) && !c.public_metrics ? "bearer token"
                                                                                : "open",
      c.aws_strict ? "on" : "off", c.s3_endpoint.empty() ? "local folders" : c.s3_endpoint,
      c.fsync ? "on" : "OFF (acknowledged data is not crash-safe)", file_limit);
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("received {}, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
  (*server)->Stop();
  spdlog::info("stopped cleanly");
  return 0;
}

}  // namespace

void AddServeCommand(CLI::App* app) {
  auto flags = std::make_shared<ServeFlags>();
  auto* cmd = app->add_subcommand("serve", "Run the server (Kinesis API, delivery, catalog)");
  cmd->add_option("--config", flags->config_file, "TOML configuration file");
  cmd->add_option("--data-dir", flags->data_dir, "Data directory (default ./icestream-data)");
  cmd->add_option("--listen", flags->listen, "HOST:PORT to listen on (default 127.0.0.1:4567)");
  cmd->add_option("--log-level", flags->log_level,
                  "trace|debug|info|warn|error|off (default info)");
  cmd->add_option("--s3-endpoint", flags->s3_endpoint,
                  "S3-compatible endpoint for delivery buckets (default: folders in the data dir)");
  cmd->add_option("--tls-cert", flags->tls_cert,
                  "PEM certificate chain: the port also serves HTTPS (ALPN h2, http/1.1)");
  cmd->add_option("--tls-key", flags->tls_key, "PEM private key of --tls-cert");
  cmd->add_option("--pg", flags->pg,
                  "PostgreSQL conninfo: channels, checkpoints, leases and the Iceberg catalog live "
                  "there, shared with `icestream worker` processes ([scaleout] pg)");
  cmd->add_flag("--aws-strict", flags->aws_strict,
                "Enforce every AWS limit exactly (e.g. DataFreshnessInSeconds >= 300)");
  cmd->add_flag("--access-log", flags->access_log,
                "Log one line per request at info ([server] access_log)");
  cmd->add_flag("--no-fsync", flags->no_fsync,
                "Do not fsync appends (benchmarks only: acknowledged data is NOT crash-safe)");
  cmd->callback([flags] { SetExitCode(RunServe(*flags)); });
}

}  // namespace icestream::server
