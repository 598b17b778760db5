// PgCatalogStore: the Iceberg catalog's rows in PostgreSQL, in Apache Iceberg's JDBC
// catalog schema exactly as JdbcUtil creates it (V0 table + the V1 iceberg_type column,
// and iceberg_namespace_properties), so Spark, Trino, Flink and PyIceberg configured with
// a JDBC catalog on the same database read and commit the same tables
// (docs/scale-out.md, "The shared catalog").
//
//   iceberg_tables(catalog_name, table_namespace, table_name, metadata_location,
//                  previous_metadata_location, iceberg_type)   PK (catalog_name, namespace, name)
//   iceberg_namespace_properties(catalog_name, namespace, property_key, property_value)
//
// catalog_name is the warehouse (table bucket) name; a namespace's levels are joined with
// '.' as Java does (levels may therefore not contain '.'). A namespace exists when it has
// a property row (Java writes exists=true for one created without properties, which this
// store hides from its properties) or a table. The pointer swap is JdbcUtil's V1 statement:
//
//   UPDATE iceberg_tables SET metadata_location = ? , previous_metadata_location = ?
//    WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?
//      AND metadata_location = ? AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)
//
// The catalog needs a PostgreSQL database of its own: Java's JDBC catalog detects the V1
// column with DatabaseMetaData.getColumns over every schema of the database, so a second
// iceberg_tables in another schema would mislead it. Open refuses such a database.
//
// Thread-safety: as PgPool. A transaction of this store is a PgTx (a CommitFence written
// for this store may downcast CatalogStore::Tx to PgCatalogStore::PgCatalogTx).
#pragma once

#include <memory>
#include <string>

#include "iceberg/catalog_store.h"
#include "pg/client.h"

namespace icestream::scaleout {

class PgCatalogStore final : public iceberg::CatalogStore {
 public:
  // Creates the two tables (JdbcUtil's DDL verbatim) when they are missing, adds the V1
  // column to a V0 table, and checks the database holds no other iceberg_tables.
  static Status EnsureSchema(pg::PgPool* pool);
  // One warehouse's store; `pool` must outlive it. EnsureSchema must have run.
  PgCatalogStore(pg::PgPool* pool, std::string catalog_name)
      : pool_(pool), catalog_(std::move(catalog_name)) {}

  Status RunInTransaction(const std::function<Status(Tx&)>& body) override;

  class PgCatalogTx;

 private:
  pg::PgPool* pool_;
  const std::string catalog_;
};

class PgCatalogStore::PgCatalogTx final : public iceberg::CatalogStore::Tx {
 public:
  PgCatalogTx(pg::PgTx& tx, const std::string& catalog) : tx_(tx), catalog_(catalog) {}
  // The PostgreSQL transaction itself, for a fence's and the delivery bookkeeping's
  // statements (they commit or roll back with the pointer swap).
  pg::PgTx& pg() { return tx_; }

  Result<std::vector<iceberg::Namespace>> ListNamespaces() override;
  Result<std::optional<iceberg::Properties>> LoadNamespace(const iceberg::Namespace& ns) override;
  Status InsertNamespace(const iceberg::Namespace& ns,
                         const iceberg::Properties& properties) override;
  Status SetNamespaceProperties(const iceberg::Namespace& ns,
                                const iceberg::Properties& properties) override;
  Status DeleteNamespace(const iceberg::Namespace& ns) override;
  Result<std::vector<std::string>> ListTables(const iceberg::Namespace& ns) override;
  Result<std::optional<std::string>> MetadataLocation(const iceberg::TableIdentifier& id) override;
  Status InsertTable(const iceberg::TableIdentifier& id,
                     const std::string& metadata_location) override;
  Result<bool> SwapMetadataLocation(const iceberg::TableIdentifier& id, const std::string& expected,
                                    const std::string& next) override;
  Status SetMetadataLocation(const iceberg::TableIdentifier& id, const std::string& location,
                             const std::string& previous) override;
  Status DeleteTable(const iceberg::TableIdentifier& id) override;
  Status RenameTable(const iceberg::TableIdentifier& from,
                     const iceberg::TableIdentifier& to) override;

 private:
  pg::PgTx& tx_;
  const std::string& catalog_;
};

// "a.b" for {"a", "b"}; kInvalidArgument when a level contains '.'.
Result<std::string> JdbcNamespace(const iceberg::Namespace& ns);

}  // namespace icestream::scaleout
