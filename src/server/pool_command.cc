// `icestream pool import --data-dir DIR --pg CONNINFO`: moves a single server's channels
// and Iceberg catalog into a scale-out pool (scaleout/import.h). Run it with the server
// stopped; then start `icestream serve --pg` on the same data directory (its streams and
// schema registry stay there) and any workers.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "common/fs.h"
#include "common/sqlite.h"
#include "scaleout/import.h"
#include "scaleout/pg_catalog_store.h"
#include "scaleout/schema.h"
#include "server/commands.h"
#include "server/data_dir_lock.h"

namespace icestream::server {
namespace {

struct PoolFlags {
  std::string data_dir = "./icestream-data";
  std::string pg;
};

int RunImport(const PoolFlags& f) {
  if (f.pg.empty()) {
    std::cerr << "icestream pool import: --pg (the pool's PostgreSQL conninfo) is required\n";
    return 2;
  }
  std::string meta_path = fs::Join(f.data_dir, "meta.db");
  if (!fs::Exists(meta_path)) {
    std::cerr << "icestream pool import: " << meta_path << " does not exist\n";
    return 2;
  }
  auto lock = DataDirLock::Acquire(f.data_dir);
  if (!lock.ok()) {
    std::cerr << "icestream pool import: " << lock.status().message()
              << " (stop the server first)\n";
    return 1;
  }
  auto db = Database::Open(meta_path);
  pg::PgPoolOptions po;
  po.conninfo = f.pg;
  auto pool = db.ok() ? pg::PgPool::Open(po) : Result<std::unique_ptr<pg::PgPool>>(db.status());
  Status st = pool.ok() ? scaleout::PgCatalogStore::EnsureSchema(pool->get()) : pool.status();
  if (st.ok()) st = scaleout::EnsureDeliverySchema(pool->get());
  if (!st.ok()) {
    std::cerr << "icestream pool import: " << st.ToString() << "\n";
    return 1;
  }
  auto report = scaleout::ImportSingleServer(db->get(), pool->get());
  if (!report.ok()) {
    std::cerr << "icestream pool import: " << report.status().ToString() << "\n";
    return 1;
  }
  std::cout << "imported " << report->channels << " channel(s), " << report->namespaces
            << " namespace(s) and " << report->tables << " table(s) into the pool; start "
            << "`icestream serve --pg` on " << f.data_dir << " to continue them\n";
  return 0;
}

}  // namespace

void AddPoolCommand(CLI::App* app) {
  auto* cmd = app->add_subcommand("pool", "Scale-out pool administration");
  cmd->require_subcommand(1);
  auto flags = std::make_shared<PoolFlags>();
  auto* imp = cmd->add_subcommand(
      "import", "Move a stopped server's channels and Iceberg catalog into a pool's PostgreSQL");
  imp->add_option("--data-dir", flags->data_dir, "The server's data directory (default ./icestream-data)");
  imp->add_option("--pg", flags->pg, "The pool's PostgreSQL conninfo")->required();
  imp->callback([flags] { SetExitCode(RunImport(*flags)); });
}

}  // namespace icestream::server
