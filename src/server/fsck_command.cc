// `icestream fsck --data-dir D [--repair]`: checks every shard log of a stopped server
// and says what is wrong and what a repair would do — which offsets it would drop —
// before anything is changed; `--repair` then does it (log/repair.h). It takes the data
// directory's lock, so it refuses to run while a server uses the directory.
//
// Exit code: 0 when everything is clean (or was repaired), 1 when problems were found
// and not repaired (or cannot be), 2 when the check itself failed.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <memory>

#include "common/fs.h"
#include "common/sqlite.h"
#include "log/repair.h"
#include "server/commands.h"
#include "server/data_dir_lock.h"
#include "stream/model.h"

namespace icestream::server {
namespace {

struct FsckFlags {
  std::string data_dir = "./icestream-data";
  bool repair = false;
};

// Stream names by uid, from meta.db when there is one (read only; never created here).
std::map<std::string, std::string> StreamNames(const std::string& data_dir) {
  std::map<std::string, std::string> names;
  std::string path = fs::Join(data_dir, "meta.db");
  if (!fs::Exists(path)) return names;
  auto db = Database::Open(path);
  if (!db.ok()) return names;
  auto rows = (*db)->Query("SELECT uid, name FROM streams");
  if (!rows.ok()) return names;
  for (const auto& r : *rows) names[std::to_string(AsInt(r[0]))] = AsText(r[1]);
  return names;
}

int RunFsck(const FsckFlags& f) {
  if (!fs::Exists(f.data_dir)) {
    std::cerr << "icestream fsck: no data directory " << f.data_dir << "\n";
    return 2;
  }
  auto lock = DataDirLock::Acquire(f.data_dir);
  if (!lock.ok()) {
    std::cerr << "icestream fsck: " << lock.status().message() << "\n";
    return 2;
  }
  std::string streams_dir = fs::Join(f.data_dir, "streams");
  auto names = StreamNames(f.data_dir);
  auto uids = fs::ListDir(streams_dir);
  if (!uids.ok()) {
    std::cout << "no streams/ folder: nothing to check\n";
    return 0;
  }
  size_t shards = 0, problems = 0, unrepairable = 0;
  uint64_t dropped = 0;
  for (const auto& uid : *uids) {
    auto shard_dirs = fs::ListDir(fs::Join(streams_dir, uid));
    if (!shard_dirs.ok()) continue;
    auto name = names.find(uid);
    std::string stream = name != names.end() ? "stream " + name->second + " (uid " + uid + ")"
                                             : "stream uid " + uid + " (not in meta.db)";
    for (const auto& shard : *shard_dirs) {
      std::string dir = fs::Join(fs::Join(streams_dir, uid), shard);
      std::string label = stream + " shardId-" + shard;
      ++shards;
      auto check = log::CheckShardLog(dir, f.repair);
      if (!check.ok()) {
        std::cout << label << ": the check failed: " << check.status().ToString() << "\n";
        ++unrepairable;
        continue;
      }
      if (check->clean()) {
        std::cout << label << ": ok\n";
        for (const auto& line : check->notes) std::cout << "  note: " << line << "\n";
        continue;
      }
      ++problems;
      if (!check->repairable) ++unrepairable;
      dropped += check->dropped_records;
      std::cout << label << ":\n";
      for (const auto& line : check->notes) std::cout << "  note: " << line << "\n";
      for (const auto& line : check->findings) std::cout << "  found: " << line << "\n";
      for (const auto& line : check->actions) {
        std::cout << "  " << (f.repair ? "repaired: " : "a repair would: ") << line << "\n";
      }
    }
  }
  std::cout << fmt::format("{} shard(s) checked, {} with problems; {} record(s) {} dropped{}\n",
                           shards, problems, dropped, f.repair ? "were" : "would be",
                           f.repair || problems == 0 ? "" : " (run again with --repair to repair)");
  if (unrepairable > 0) return 1;
  return problems == 0 || f.repair ? 0 : 1;
}

}  // namespace

void AddFsckCommand(CLI::App* app) {
  auto flags = std::make_shared<FsckFlags>();
  auto* cmd = app->add_subcommand(
      "fsck", "Check the shard logs of a stopped server; --repair salvages what can be read");
  cmd->add_option("--data-dir", flags->data_dir, "Data directory (default ./icestream-data)");
  cmd->add_flag("--repair", flags->repair,
                "Carry out the repair: cut torn tails, move intact records after damage into new "
                "segments, drop only the damaged records, rebuild indexes");
  cmd->callback([flags] { SetExitCode(RunFsck(*flags)); });
}

}  // namespace icestream::server
