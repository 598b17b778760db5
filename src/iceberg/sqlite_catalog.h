// SqliteCatalog: the built-in Iceberg catalog. Namespaces and table pointers (the
// current metadata location of each table) live in SQLite (meta.db); metadata, manifest
// and data files live in the warehouse's bucket through FileIO. A commit writes a new
// metadata file `<location>/metadata/<NNNNN>-<uuid>.metadata.json` (never overwriting)
// and then swaps the pointer with a compare-and-set in one SQLite transaction (Iceberg
// spec "Metastore Tables"), so concurrent committers — threads or processes — cannot
// lose each other's changes.
//
// One instance per warehouse (table bucket); several instances may share a Database.
// Thread-safe; commits to one table are serialized inside the process (a waiting
// commit re-checks its requirements against the metadata it then finds).
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "common/sqlite.h"
#include "iceberg/catalog.h"
#include "iceberg/file_io.h"

namespace icestream::iceberg {

struct SqliteCatalogOptions {
  // The warehouse's name (a table bucket name); rows of other warehouses are invisible.
  std::string warehouse = "default";
  // Pointer swaps lost to another process are retried this often (requirements are
  // re-checked against the new metadata each time) before kConflict is returned.
  int cas_retries = 8;
  // Parsed metadata files kept in memory (they are immutable, keyed by location).
  size_t metadata_cache_entries = 64;
};

class SqliteCatalog final : public Catalog {
 public:
  // Creates the tables if needed. `db`, `io` and `clock` must outlive the catalog.
  static Result<std::unique_ptr<SqliteCatalog>> Open(Database* db, const FileIO* io, const Clock* clock,
                                                     SqliteCatalogOptions options = {});

  Result<std::vector<Namespace>> ListNamespaces(const Namespace& parent) override;
  Status CreateNamespace(const Namespace& ns, const Properties& properties) override;
  Result<Properties> LoadNamespaceProperties(const Namespace& ns) override;
  Result<bool> NamespaceExists(const Namespace& ns) override;
  Result<NamespacePropertiesChange> UpdateNamespaceProperties(const Namespace& ns,
                                                             const std::vector<std::string>& removals,
                                                             const Properties& updates) override;
  Status DropNamespace(const Namespace& ns) override;
  Result<std::vector<TableIdentifier>> ListTables(const Namespace& ns) override;
  Result<LoadedTable> CreateTable(const Namespace& ns, const CreateTableRequest& request) override;
  Result<LoadedTable> LoadTable(const TableIdentifier& id) override;
  Result<bool> TableExists(const TableIdentifier& id) override;
  Result<LoadedTable> CommitTable(const TableIdentifier& id, const std::vector<TableRequirement>& requirements,
                                  const std::vector<TableUpdate>& updates) override;
  Status CommitTransaction(const std::vector<TableCommit>& commits) override;
  Status DropTable(const TableIdentifier& id, bool purge) override;
  Status RenameTable(const TableIdentifier& from, const TableIdentifier& to) override;
  Result<LoadedTable> RegisterTable(const TableIdentifier& id, const std::string& metadata_location,
                                    bool overwrite) override;

  const FileIO& io() const { return *io_; }
  const std::string& warehouse() const { return options_.warehouse; }
  // Metadata files held in memory (bounded by options.metadata_cache_entries).
  size_t cached_metadata_count() {
    std::lock_guard lock(cache_mu_);
    return cache_.size();
  }

  struct Cached;

 private:
  SqliteCatalog(Database* db, const FileIO* io, const Clock* clock, SqliteCatalogOptions options);
  Result<std::shared_ptr<const Cached>> ReadMetadata(const std::string& location);
  Result<std::optional<std::string>> CurrentLocation(const TableIdentifier& id);
  Result<LoadedTable> Loaded(const std::string& location);
  // Writes next as a new metadata file after `base_location` (empty for a new table)
  // and returns its location.
  Result<std::string> WriteMetadata(const TableMetadata& next, const std::string& base_location);
  // The metadata cache: at most options_.metadata_cache_entries, oldest out first.
  void CacheInsert(const std::string& location, std::shared_ptr<const Cached> cached);
  void CacheErase(const std::string& location);
  // Deletes a metadata file this catalog wrote but did not commit, with its cache entry.
  void DiscardMetadata(const std::string& location);
  // Prepares one commit: the new metadata written to its file, not yet swapped in.
  struct Prepared {
    TableIdentifier id;
    std::string base_location;  // empty when the commit creates the table
    std::string new_location;
    std::shared_ptr<const Cached> next;
  };
  Result<Prepared> Prepare(const TableIdentifier& id, const std::vector<TableRequirement>& requirements,
                           const std::vector<TableUpdate>& updates);
  std::mutex& TableLock(const TableIdentifier& id);

  Database* db_;
  const FileIO* io_;
  const Clock* clock_;
  SqliteCatalogOptions options_;
  std::mutex cache_mu_;
  std::map<std::string, std::shared_ptr<const Cached>> cache_;  // by location
  std::deque<std::string> cache_order_;
  std::mutex locks_mu_;
  std::map<TableIdentifier, std::unique_ptr<std::mutex>> table_locks_;
};

}  // namespace icestream::iceberg
