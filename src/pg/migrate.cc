// Schema migrations.
#include "pg/migrate.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace icestream::pg {

Status Migrate(PgPool* pool, const std::string& component, const std::vector<std::string>& steps) {
  // CREATE TABLE IF NOT EXISTS races with itself in PostgreSQL (two sessions can both
  // find the table missing): take the migration lock first.
  RETURN_IF_ERROR(pool->RunInTransaction([&](PgTx& tx) -> Status {
    RETURN_IF_ERROR(
        tx.Exec("SELECT pg_advisory_xact_lock(hashtext('icestream-migrate'))").status());
    return tx
        .Exec(
            "CREATE TABLE IF NOT EXISTS icestream_schema_version ("
            "component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
        .status();
  }));
  for (size_t i = 0; i < steps.size(); ++i) {
    const int64_t version = static_cast<int64_t>(i) + 1;
    bool applied = false;
    Status st = pool->RunInTransaction([&](PgTx& tx) -> Status {
      RETURN_IF_ERROR(
          tx.Exec("SELECT pg_advisory_xact_lock(hashtext('icestream-migrate'))").status());
      ASSIGN_OR_RETURN(PgResult cur, tx.Exec("SELECT version FROM icestream_schema_version WHERE "
                                             "component = $1",
                                             {component}));
      int64_t at = cur.rows() ? cur.integer(0, 0) : 0;
      if (at > static_cast<int64_t>(steps.size())) {
        return FailedPrecondition(fmt::format(
            "the PostgreSQL database holds {} schema version {}; this icestream knows up to {} "
            "(a newer icestream migrated it)",
            component, at, steps.size()));
      }
      if (at >= version) return Status::OK();
      RETURN_IF_ERROR(tx.ExecScript(steps[i]));
      RETURN_IF_ERROR(tx.Exec("INSERT INTO icestream_schema_version (component, version) VALUES "
                              "($1, $2) ON CONFLICT (component) DO UPDATE SET version = $2",
                              {component, std::to_string(version)})
                          .status());
      applied = true;
      return Status::OK();
    });
    if (!st.ok())
      return st.WithContext(fmt::format("migrating {} to version {}", component, version));
    if (applied) spdlog::info("PostgreSQL: {} schema at version {}", component, version);
  }
  return Status::OK();
}

}  // namespace icestream::pg
