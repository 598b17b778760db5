// The built-in catalog's rows in SQLite (meta.db): SqliteCatalogStore, and
// SqliteCatalog::Open, which puts the Iceberg metastore rules (MetastoreCatalog) on top.
//
//   iceberg_namespaces (warehouse, namespace, properties JSON)      PK (warehouse, namespace)
//   iceberg_tables     (warehouse, namespace, name, metadata_location,
//                       previous_metadata_location)                 PK (warehouse, namespace, name)
//
// A namespace's levels are joined with U+001F (names cannot contain control characters).
// One store per warehouse (table bucket); several may share a Database. A transaction is
// SQLite's BEGIN IMMEDIATE … COMMIT; a COMMIT that fails leaves the outcome unknown
// (kUnknownOutcome). Thread-safe (the Database serializes).
#pragma once

#include <memory>
#include <string>

#include "common/clock.h"
#include "common/sqlite.h"
#include "iceberg/catalog_store.h"
#include "iceberg/file_io.h"
#include "iceberg/metastore_catalog.h"

namespace icestream::iceberg {

class SqliteCatalogStore final : public CatalogStore {
 public:
  // Creates the tables if needed. `db` must outlive the store.
  static Result<std::shared_ptr<SqliteCatalogStore>> Open(Database* db, std::string warehouse);

  Status RunInTransaction(const std::function<Status(Tx&)>& body) override;

 private:
  SqliteCatalogStore(Database* db, std::string warehouse)
      : db_(db), warehouse_(std::move(warehouse)) {}
  class SqliteTx;

  Database* db_;
  const std::string warehouse_;
};

struct SqliteCatalogOptions {
  // The warehouse's name (a table bucket name); rows of other warehouses are invisible.
  std::string warehouse = "default";
  MetastoreCatalogOptions catalog;
};

// The built-in catalog of one warehouse.
class SqliteCatalog {
 public:
  // `db`, `io` and `clock` must outlive the catalog.
  static Result<std::unique_ptr<MetastoreCatalog>> Open(Database* db, const FileIO* io,
                                                        const Clock* clock,
                                                        SqliteCatalogOptions options = {});
};

}  // namespace icestream::iceberg
