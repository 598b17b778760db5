// The Iceberg JDBC catalog schema in PostgreSQL.
#include "scaleout/pg_catalog_store.h"

#include <fmt/format.h>

#include <set>

namespace icestream::scaleout {

namespace {

// Apache Iceberg's JdbcUtil statements, verbatim (V0 table, V1 column, namespace
// properties; the V1 commit and create), with libpq's $n placeholders for JDBC's '?'.
constexpr const char* kCreateTables =
    "CREATE TABLE iceberg_tables(catalog_name VARCHAR(255) NOT NULL,table_namespace "
    "VARCHAR(255) NOT NULL,table_name VARCHAR(255) NOT NULL,metadata_location VARCHAR(1000),"
    "previous_metadata_location VARCHAR(1000),PRIMARY KEY (catalog_name, table_namespace, "
    "table_name))";
constexpr const char* kAddTypeColumn =
    "ALTER TABLE iceberg_tables ADD COLUMN iceberg_type VARCHAR(5)";
constexpr const char* kCreateNamespaceProperties =
    "CREATE TABLE iceberg_namespace_properties(catalog_name VARCHAR(255) NOT NULL,namespace "
    "VARCHAR(255) NOT NULL,property_key VARCHAR(255),property_value VARCHAR(1000),PRIMARY KEY "
    "(catalog_name, namespace, property_key))";
constexpr const char* kCommit =
    "UPDATE iceberg_tables SET metadata_location = $1 , previous_metadata_location = $2 WHERE "
    "catalog_name = $3 AND table_namespace = $4 AND table_name = $5 AND metadata_location = $6 "
    "AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)";
constexpr const char* kCreate =
    "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, "
    "previous_metadata_location, iceberg_type)  VALUES ($1,$2,$3,$4,null,$5)";
constexpr const char* kTableFilter = "(iceberg_type = 'TABLE' OR iceberg_type IS NULL)";
// The property Java's JdbcCatalog writes for a namespace created without properties.
constexpr const char* kExistsKey = "exists";

iceberg::Namespace SplitNamespace(const std::string& s) {
  iceberg::Namespace ns;
  size_t start = 0;
  while (true) {
    size_t p = s.find('.', start);
    ns.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return ns;
}

}  // namespace

Result<std::string> JdbcNamespace(const iceberg::Namespace& ns) {
  std::string out;
  for (size_t i = 0; i < ns.size(); ++i) {
    if (ns[i].find('.') != std::string::npos) {
      return InvalidArgument("namespace level '" + ns[i] +
                             "' contains '.', which the JDBC catalog uses to join levels");
    }
    if (i) out += '.';
    out += ns[i];
  }
  return out;
}

Status PgCatalogStore::EnsureSchema(pg::PgPool* pool) {
  return pool->RunInTransaction([&](pg::PgTx& tx) -> Status {
    RETURN_IF_ERROR(
        tx.Exec("SELECT pg_advisory_xact_lock(hashtext('icestream-catalog-schema'))").status());
    ASSIGN_OR_RETURN(
        pg::PgResult elsewhere,
        tx.Exec("SELECT table_schema FROM information_schema.tables WHERE table_name = "
                "'iceberg_tables' AND table_schema <> current_schema()"));
    if (elsewhere.rows() > 0) {
      return FailedPrecondition(fmt::format(
          "the database holds another iceberg_tables (in schema {}); the catalog needs a "
          "database of its own, because JDBC engines look for the catalog's columns in every "
          "schema of the database",
          elsewhere.text(0, 0)));
    }
    ASSIGN_OR_RETURN(pg::PgResult have,
                     tx.Exec("SELECT to_regclass('iceberg_tables') IS NOT NULL, "
                             "to_regclass('iceberg_namespace_properties') IS NOT "
                             "NULL"));
    if (have.text(0, 0) != "t") {
      RETURN_IF_ERROR(tx.Exec(kCreateTables).status());
      RETURN_IF_ERROR(tx.Exec(kAddTypeColumn).status());
    } else {
      ASSIGN_OR_RETURN(pg::PgResult col,
                       tx.Exec("SELECT 1 FROM information_schema.columns WHERE table_schema = "
                               "current_schema() AND table_name = 'iceberg_tables' AND "
                               "column_name = 'iceberg_type'"));
      if (col.rows() == 0) RETURN_IF_ERROR(tx.Exec(kAddTypeColumn).status());
    }
    if (have.text(0, 1) != "t") RETURN_IF_ERROR(tx.Exec(kCreateNamespaceProperties).status());
    return Status::OK();
  });
}

Status PgCatalogStore::RunInTransaction(const std::function<Status(Tx&)>& body) {
  return pool_->RunInTransaction([&](pg::PgTx& tx) -> Status {
    PgCatalogTx t(tx, catalog_);
    return body(t);
  });
}

using Tx = PgCatalogStore::PgCatalogTx;

Result<std::vector<iceberg::Namespace>> Tx::ListNamespaces() {
  ASSIGN_OR_RETURN(pg::PgResult r,
                   tx_.Exec("SELECT namespace FROM iceberg_namespace_properties WHERE catalog_name "
                            "= $1 UNION SELECT table_namespace FROM iceberg_tables WHERE "
                            "catalog_name = $1",
                            {catalog_}));
  std::set<iceberg::Namespace> all;
  for (size_t i = 0; i < r.rows(); ++i) all.insert(SplitNamespace(r.text(i, 0)));
  return std::vector<iceberg::Namespace>(all.begin(), all.end());
}

Result<std::optional<iceberg::Properties>> Tx::LoadNamespace(const iceberg::Namespace& ns) {
  ASSIGN_OR_RETURN(std::string key, JdbcNamespace(ns));
  ASSIGN_OR_RETURN(pg::PgResult r,
                   tx_.Exec("SELECT property_key, property_value FROM iceberg_namespace_properties "
                            "WHERE catalog_name = $1 AND namespace = $2",
                            {catalog_, key}));
  if (r.rows() == 0) {
    ASSIGN_OR_RETURN(pg::PgResult t, tx_.Exec(std::string("SELECT 1 FROM iceberg_tables WHERE "
                                                          "catalog_name = $1 AND table_namespace = "
                                                          "$2 LIMIT 1"),
                                              {catalog_, key}));
    if (t.rows() == 0) return std::optional<iceberg::Properties>();
    return std::optional<iceberg::Properties>(iceberg::Properties{});
  }
  iceberg::Properties p;
  for (size_t i = 0; i < r.rows(); ++i) {
    if (r.text(i, 0) == kExistsKey) continue;
    p[r.text(i, 0)] = r.text(i, 1);
  }
  return std::optional<iceberg::Properties>(std::move(p));
}

Status Tx::InsertNamespace(const iceberg::Namespace& ns, const iceberg::Properties& properties) {
  ASSIGN_OR_RETURN(std::string key, JdbcNamespace(ns));
  iceberg::Properties rows = properties;
  if (rows.empty()) rows[kExistsKey] = "true";
  for (const auto& [k, v] : rows) {
    RETURN_IF_ERROR(tx_.Exec("INSERT INTO iceberg_namespace_properties (catalog_name, namespace, "
                             "property_key, property_value) VALUES ($1, $2, $3, $4)",
                             {catalog_, key, k, v})
                        .status());
  }
  return Status::OK();
}

Status Tx::SetNamespaceProperties(const iceberg::Namespace& ns,
                                  const iceberg::Properties& properties) {
  ASSIGN_OR_RETURN(std::string key, JdbcNamespace(ns));
  RETURN_IF_ERROR(tx_.Exec("DELETE FROM iceberg_namespace_properties WHERE catalog_name = $1 AND "
                           "namespace = $2",
                           {catalog_, key})
                      .status());
  return InsertNamespace(ns, properties);
}

Status Tx::DeleteNamespace(const iceberg::Namespace& ns) {
  ASSIGN_OR_RETURN(std::string key, JdbcNamespace(ns));
  return tx_
      .Exec("DELETE FROM iceberg_namespace_properties WHERE catalog_name = $1 AND namespace = $2",
            {catalog_, key})
      .status();
}

Result<std::vector<std::string>> Tx::ListTables(const iceberg::Namespace& ns) {
  ASSIGN_OR_RETURN(std::string key, JdbcNamespace(ns));
  ASSIGN_OR_RETURN(pg::PgResult r,
                   tx_.Exec(std::string("SELECT table_name FROM iceberg_tables WHERE "
                                        "catalog_name = $1 AND table_namespace = $2 "
                                        "AND ") +
                                kTableFilter + " ORDER BY table_name",
                            {catalog_, key}));
  std::vector<std::string> out;
  for (size_t i = 0; i < r.rows(); ++i) out.push_back(r.text(i, 0));
  return out;
}

Result<std::optional<std::string>> Tx::MetadataLocation(const iceberg::TableIdentifier& id) {
  ASSIGN_OR_RETURN(std::string key, JdbcNamespace(id.ns));
  ASSIGN_OR_RETURN(pg::PgResult r,
                   tx_.Exec(std::string("SELECT metadata_location FROM iceberg_tables "
                                        "WHERE catalog_name = $1 AND table_namespace "
                                        "= $2 AND table_name = $3 AND ") +
                                kTableFilter,
                            {catalog_, key, id.name}));
  if (r.rows() == 0) return std::optional<std::string>();
  return std::optional<std::string>(r.text(0, 0));
}

Status Tx::InsertTable(const iceberg::TableIdentifier& id, const std::string& location) {
  ASSIGN_OR_RETURN(std::string key, JdbcNamespace(id.ns));
  return tx_.Exec(kCreate, {catalog_, key, id.name, location, std::string("TABLE")}).status();
}

Result<bool> Tx::SwapMetadataLocation(const iceberg::TableIdentifier& id,
                                      const std::string& expected, const std::string& next) {
  ASSIGN_OR_RETURN(std::string key, JdbcNamespace(id.ns));
  ASSIGN_OR_RETURN(pg::PgResult r,
                   tx_.Exec(kCommit, {next, expected, catalog_, key, id.name, expected}));
  return r.affected() == 1;
}

Status Tx::SetMetadataLocation(const iceberg::TableIdentifier& id, const std::string& location,
                               const std::string& previous) {
  ASSIGN_OR_RETURN(std::string key, JdbcNamespace(id.ns));
  return tx_
      .Exec(std::string("UPDATE iceberg_tables SET metadata_location = $1, "
                        "previous_metadata_location = $2 WHERE catalog_name = $3 AND "
                        "table_namespace = $4 AND table_name = $5 AND ") +
                kTableFilter,
            {location, previous, catalog_, key, id.name})
      .status();
}

Status Tx::DeleteTable(const iceberg::TableIdentifier& id) {
  ASSIGN_OR_RETURN(std::string key, JdbcNamespace(id.ns));
  return tx_
      .Exec(std::string("DELETE FROM iceberg_tables WHERE catalog_name = $1 AND "
                        "table_namespace = $2 AND table_name = $3 AND ") +
                kTableFilter,
            {catalog_, key, id.name})
      .status();
}

Status Tx::RenameTable(const iceberg::TableIdentifier& from, const iceberg::TableIdentifier& to) {
  ASSIGN_OR_RETURN(std::string from_key, JdbcNamespace(from.ns));
  ASSIGN_OR_RETURN(std::string to_key, JdbcNamespace(to.ns));
  return tx_
      .Exec(std::string("UPDATE iceberg_tables SET table_namespace = $1, table_name = $2 "
                        "WHERE catalog_name = $3 AND table_namespace = $4 AND table_name = "
                        "$5 AND ") +
                kTableFilter,
            {to_key, to.name, catalog_, from_key, from.name})
      .status();
}

}  // namespace icestream::scaleout
