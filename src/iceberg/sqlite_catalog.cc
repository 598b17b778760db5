// The SQLite rows of the built-in Iceberg catalog.
#include "iceberg/sqlite_catalog.h"

#include <nlohmann/json.hpp>

namespace icestream::iceberg {

namespace {

constexpr char kSep = '\x1f';

std::string NsKey(const Namespace& ns) {
  std::string k;
  for (size_t i = 0; i < ns.size(); ++i) {
    if (i) k += kSep;
    k += ns[i];
  }
  return k;
}

Namespace NsFromKey(const std::string& k) {
  Namespace ns;
  size_t start = 0;
  while (true) {
    size_t p = k.find(kSep, start);
    ns.push_back(k.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return ns;
}

std::string PropertiesJson(const Properties& p) { return nlohmann::json(p).dump(); }

Properties PropertiesFromJson(const std::string& text) {
  Properties p;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.value().is_string()) p[it.key()] = it.value().get<std::string>();
    }
  }
  return p;
}

}  // namespace

class SqliteCatalogStore::SqliteTx final : public CatalogStore::Tx {
 public:
  SqliteTx(Database::Tx& tx, const std::string& warehouse) : tx_(tx), wh_(warehouse) {}

  Result<std::vector<Namespace>> ListNamespaces() override {
    ASSIGN_OR_RETURN(auto rows, tx_.Query("SELECT namespace FROM iceberg_namespaces WHERE "
                                          "warehouse = ?1 ORDER BY namespace",
                                          {wh_}));
    std::vector<Namespace> out;
    for (const auto& r : rows) out.push_back(NsFromKey(AsText(r[0])));
    return out;
  }

  Result<std::optional<Properties>> LoadNamespace(const Namespace& ns) override {
    ASSIGN_OR_RETURN(auto rows, tx_.Query("SELECT properties FROM iceberg_namespaces WHERE "
                                          "warehouse = ?1 AND namespace = ?2",
                                          {wh_, NsKey(ns)}));
    if (rows.empty()) return std::optional<Properties>();
    return std::optional<Properties>(PropertiesFromJson(AsText(rows[0][0])));
  }

  Status InsertNamespace(const Namespace& ns, const Properties& properties) override {
    return tx_.Exec(
        "INSERT INTO iceberg_namespaces (warehouse, namespace, properties) VALUES (?1, ?2, ?3)",
        {wh_, NsKey(ns), PropertiesJson(properties)});
  }

  Status SetNamespaceProperties(const Namespace& ns, const Properties& properties) override {
    return tx_.Exec(
        "UPDATE iceberg_namespaces SET properties = ?3 WHERE warehouse = ?1 AND namespace = ?2",
        {wh_, NsKey(ns), PropertiesJson(properties)});
  }

  Status DeleteNamespace(const Namespace& ns) override {
    return tx_.Exec("DELETE FROM iceberg_namespaces WHERE warehouse = ?1 AND namespace = ?2",
                    {wh_, NsKey(ns)});
  }

  Result<std::vector<std::string>> ListTables(const Namespace& ns) override {
    ASSIGN_OR_RETURN(auto rows, tx_.Query("SELECT name FROM iceberg_tables WHERE warehouse = ?1 "
                                          "AND namespace = ?2 ORDER BY name",
                                          {wh_, NsKey(ns)}));
    std::vector<std::string> out;
    for (const auto& r : rows) out.push_back(AsText(r[0]));
    return out;
  }

  Result<std::optional<std::string>> MetadataLocation(const TableIdentifier& id) override {
    ASSIGN_OR_RETURN(auto rows, tx_.Query("SELECT metadata_location FROM iceberg_tables WHERE "
                                          "warehouse = ?1 AND namespace = ?2 AND name = ?3",
                                          {wh_, NsKey(id.ns), id.name}));
    if (rows.empty()) return std::optional<std::string>();
    return std::optional<std::string>(AsText(rows[0][0]));
  }

  Status InsertTable(const TableIdentifier& id, const std::string& location) override {
    return tx_.Exec(
        "INSERT INTO iceberg_tables (warehouse, namespace, name, metadata_location) "
        "VALUES (?1, ?2, ?3, ?4)",
        {wh_, NsKey(id.ns), id.name, location});
  }

  Result<bool> SwapMetadataLocation(const TableIdentifier& id, const std::string& expected,
                                    const std::string& next) override {
    RETURN_IF_ERROR(tx_.Exec(
        "UPDATE iceberg_tables SET metadata_location = ?5, previous_metadata_location = ?4 "
        "WHERE warehouse = ?1 AND namespace = ?2 AND name = ?3 AND metadata_location = ?4",
        {wh_, NsKey(id.ns), id.name, expected, next}));
    return tx_.changes() == 1;
  }

  Status SetMetadataLocation(const TableIdentifier& id, const std::string& location,
                             const std::string& previous) override {
    return tx_.Exec(
        "UPDATE iceberg_tables SET metadata_location = ?4, previous_metadata_location = ?5 WHERE "
        "warehouse = ?1 AND namespace = ?2 AND name = ?3",
        {wh_, NsKey(id.ns), id.name, location, previous});
  }

  Status DeleteTable(const TableIdentifier& id) override {
    return tx_.Exec(
        "DELETE FROM iceberg_tables WHERE warehouse = ?1 AND namespace = ?2 AND name = ?3",
        {wh_, NsKey(id.ns), id.name});
  }

  Status RenameTable(const TableIdentifier& from, const TableIdentifier& to) override {
    return tx_.Exec(
        "UPDATE iceberg_tables SET namespace = ?4, name = ?5 WHERE warehouse = ?1 AND "
        "namespace = ?2 AND name = ?3",
        {wh_, NsKey(from.ns), from.name, NsKey(to.ns), to.name});
  }

 private:
  Database::Tx& tx_;
  const std::string& wh_;
};

Result<std::shared_ptr<SqliteCatalogStore>> SqliteCatalogStore::Open(Database* db,
                                                                     std::string warehouse) {
  RETURN_IF_ERROR(db->Exec(R"(
    CREATE TABLE IF NOT EXISTS iceberg_namespaces (
      warehouse TEXT NOT NULL, namespace TEXT NOT NULL, properties TEXT NOT NULL DEFAULT '{}',
      PRIMARY KEY (warehouse, namespace));
    CREATE TABLE IF NOT EXISTS iceberg_tables (
      warehouse TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
      metadata_location TEXT NOT NULL, previous_metadata_location TEXT,
      PRIMARY KEY (warehouse, namespace, name));
  )"));
  return std::shared_ptr<SqliteCatalogStore>(new SqliteCatalogStore(db, std::move(warehouse)));
}

Status SqliteCatalogStore::RunInTransaction(const std::function<Status(Tx&)>& body) {
  return db_->Transaction([&](Database::Tx& tx) -> Status {
    SqliteTx t(tx, warehouse_);
    return body(t);
  });
}

Result<std::unique_ptr<MetastoreCatalog>> SqliteCatalog::Open(Database* db, const FileIO* io,
                                                              const Clock* clock,
                                                              SqliteCatalogOptions options) {
  ASSIGN_OR_RETURN(auto store, SqliteCatalogStore::Open(db, options.warehouse));
  return std::make_unique<MetastoreCatalog>(std::move(store), io, clock, options.catalog);
}

}  // namespace icestream::iceberg
