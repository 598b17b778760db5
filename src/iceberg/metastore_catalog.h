// MetastoreCatalog: an Iceberg catalog whose table pointers live in rows of a
// CatalogStore (SQLite's meta.db, or PostgreSQL in the JDBC-catalog schema) and whose
// metadata, manifest and data files live in the warehouse's bucket through FileIO.
//
// The Iceberg metastore rules live here, once, for every store (Iceberg spec "Metastore
// Tables"): names become path segments (no separators, no dot segments); a commit checks
// its requirements against the current metadata, applies the updates, writes a new
// metadata file `<location>/metadata/<NNNNN>-<uuid>.metadata.json` (never overwriting
// one) and swaps the pointer with SwapMetadataLocation(expected, next) in one store
// transaction, retrying (re-reading and re-checking) when another writer swapped first.
// A swap whose outcome the store cannot tell is kUnknownOutcome and its metadata file is
// kept. Parsed metadata files are cached (they are immutable).
//
// One instance per warehouse; commits to one table are serialized inside the process.
// Thread-safe.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "iceberg/catalog.h"
#include "iceberg/catalog_store.h"
#include "iceberg/file_io.h"

namespace icestream::iceberg {

struct MetastoreCatalogOptions {
  // Pointer swaps lost to another process are retried this often (requirements are
  // re-checked against the new metadata each time) before kConflict is returned.
  int cas_retries = 8;
  // Parsed metadata files kept in memory (they are immutable, keyed by location).
  size_t metadata_cache_entries = 64;
};

class MetastoreCatalog final : public Catalog {
 public:
  // `store`, `io` and `clock` must outlive the catalog.
  MetastoreCatalog(std::shared_ptr<CatalogStore> store, const FileIO* io, const Clock* clock,
                   MetastoreCatalogOptions options = {});

  Result<std::vector<Namespace>> ListNamespaces(const Namespace& parent) override;
  Status CreateNamespace(const Namespace& ns, const Properties& properties) override;
  Result<Properties> LoadNamespaceProperties(const Namespace& ns) override;
  Result<bool> NamespaceExists(const Namespace& ns) override;
  Result<NamespacePropertiesChange> UpdateNamespaceProperties(
      const Namespace& ns, const std::vector<std::string>& removals,
      const Properties& updates) override;
  Status DropNamespace(const Namespace& ns) override;
  Result<std::vector<TableIdentifier>> ListTables(const Namespace& ns) override;
  Result<LoadedTable> CreateTable(const Namespace& ns, const CreateTableRequest& request) override;
  Result<LoadedTable> LoadTable(const TableIdentifier& id) override;
  Result<bool> TableExists(const TableIdentifier& id) override;
  Result<LoadedTable> CommitTable(const TableIdentifier& id,
                                  const std::vector<TableRequirement>& requirements,
                                  const std::vector<TableUpdate>& updates) override;
  Result<LoadedTable> CommitTableFenced(const TableIdentifier& id,
                                        const std::vector<TableRequirement>& requirements,
                                        const std::vector<TableUpdate>& updates,
                                        const CommitFence& fence) override;
  Status CommitTransaction(const std::vector<TableCommit>& commits) override;
  Status DropTable(const TableIdentifier& id, bool purge) override;
  Status RenameTable(const TableIdentifier& from, const TableIdentifier& to) override;
  Result<LoadedTable> RegisterTable(const TableIdentifier& id, const std::string& metadata_location,
                                    bool overwrite) override;

  const FileIO& io() const { return *io_; }
  CatalogStore& store() { return *store_; }
  // Metadata files held in memory (bounded by options.metadata_cache_entries).
  size_t cached_metadata_count();

  struct Cached;

 private:
  Result<std::shared_ptr<const Cached>> ReadMetadata(const std::string& location);
  Result<std::optional<std::string>> CurrentLocation(const TableIdentifier& id);
  Result<LoadedTable> Loaded(const std::string& location);
  // Writes `next` as a new metadata file after `base_location` (empty for a new table).
  Result<std::string> WriteMetadata(const TableMetadata& next, const std::string& base_location);
  void CacheInsert(const std::string& location, std::shared_ptr<const Cached> cached);
  void CacheErase(const std::string& location);
  // Deletes a metadata file this catalog wrote but did not commit, with its cache entry.
  void DiscardMetadata(const std::string& location);
  // One commit prepared: the new metadata written to its file, not yet swapped in.
  struct Prepared {
    TableIdentifier id;
    std::string base_location;  // empty when the commit creates the table
    std::string new_location;
    std::shared_ptr<const Cached> next;
  };
  Result<Prepared> Prepare(const TableIdentifier& id,
                           const std::vector<TableRequirement>& requirements,
                           const std::vector<TableUpdate>& updates);
  // The swap of one prepared commit inside `tx`: false when another writer moved the
  // pointer (or created the table) first.
  Result<bool> Swap(CatalogStore::Tx& tx, const Prepared& p);
  Result<LoadedTable> Commit(const TableIdentifier& id,
                             const std::vector<TableRequirement>& requirements,
                             const std::vector<TableUpdate>& updates, const CommitFence* fence);
  std::mutex& TableLock(const TableIdentifier& id);

  std::shared_ptr<CatalogStore> store_;
  const FileIO* io_;
  const Clock* clock_;
  MetastoreCatalogOptions options_;
  std::mutex cache_mu_;
  std::map<std::string, std::shared_ptr<const Cached>> cache_;  // by location
  std::deque<std::string> cache_order_;
  std::mutex locks_mu_;
  std::map<TableIdentifier, std::unique_ptr<std::mutex>> table_locks_;
};

// Iceberg's name rules for namespaces and tables here: non-empty, no '/', no control
// characters, not "." or "..". kInvalidArgument with the reason.
Status CheckNamespaceName(const Namespace& ns);
Status CheckTableName(const TableIdentifier& id);

}  // namespace icestream::iceberg
