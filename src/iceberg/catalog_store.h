// CatalogStore: the rows behind a metastore catalog — namespaces with their properties
// and one metadata-location pointer per table — and the transactions they change in.
// MetastoreCatalog (metastore_catalog.h) holds the Iceberg rules (names, metadata files,
// requirement checks, compare-and-swap retries) and talks to a store only through this
// interface, so the same rules run over SQLite (meta.db) and over PostgreSQL in Apache
// Iceberg's JDBC-catalog schema.
//
// A store serves one catalog (one warehouse): rows of others are invisible to it.
//
// Errors: kAlreadyExists from the inserts when the row is there; kUnavailable when the
// database cannot be reached (retry); kUnknownOutcome from RunInTransaction when the
// commit may or may not have happened (the caller must not clean up what the
// transaction would have referenced). A failing body rolls the transaction back and its
// status is returned as is.
//
// Thread-safety: implementations are safe to call from many threads; one Tx is used by
// the thread that RunInTransaction calls the body on, only during that call.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "iceberg/catalog.h"

namespace icestream::iceberg {

class CatalogStore {
 public:
  virtual ~CatalogStore() = default;

  // The operations one transaction may do. Reads see the transaction's own writes.
  class Tx {
   public:
    virtual ~Tx() = default;

    // Every namespace of the catalog (levels as given at creation).
    virtual Result<std::vector<Namespace>> ListNamespaces() = 0;
    // nullopt when the namespace does not exist.
    virtual Result<std::optional<Properties>> LoadNamespace(const Namespace& ns) = 0;
    virtual Status InsertNamespace(const Namespace& ns, const Properties& properties) = 0;
    // Replaces the namespace's properties with `properties`.
    virtual Status SetNamespaceProperties(const Namespace& ns, const Properties& properties) = 0;
    virtual Status DeleteNamespace(const Namespace& ns) = 0;

    // Table names of the namespace, sorted.
    virtual Result<std::vector<std::string>> ListTables(const Namespace& ns) = 0;
    // nullopt when the table does not exist.
    virtual Result<std::optional<std::string>> MetadataLocation(const TableIdentifier& id) = 0;
    virtual Status InsertTable(const TableIdentifier& id, const std::string& metadata_location) = 0;
    // The pointer swap: true when the table's location was `expected` and is now `next`
    // (the previous location recorded as `expected`); false when it had moved on.
    virtual Result<bool> SwapMetadataLocation(const TableIdentifier& id,
                                              const std::string& expected,
                                              const std::string& next) = 0;
    // Sets the location whatever it was (RegisterTable with overwrite).
    virtual Status SetMetadataLocation(const TableIdentifier& id, const std::string& location,
                                       const std::string& previous) = 0;
    virtual Status DeleteTable(const TableIdentifier& id) = 0;
    virtual Status RenameTable(const TableIdentifier& from, const TableIdentifier& to) = 0;
  };

  // Runs `body` in one transaction and commits it when the body succeeds.
  virtual Status RunInTransaction(const std::function<Status(Tx&)>& body) = 0;
};

// A condition checked inside the transaction that swaps a table's pointer, so that the
// swap and the check are one atomic step: a scale-out worker's lease (owner, epoch) on
// the table's committer role. A failed check rolls the commit back; the commit then
// returns the check's status, which should be kFailedPrecondition ("fenced"). Stores
// that cannot hold such a check in their transaction (a REST catalog) refuse commits
// that carry one.
class CommitFence {
 public:
  virtual ~CommitFence() = default;
  // `tx` is the transaction of the store the catalog runs on; a fence is written for
  // one kind of store and may downcast it. Also the place for bookkeeping that must
  // commit with the swap (e.g. which pending files the commit made visible).
  virtual Status Check(CatalogStore::Tx& tx) const = 0;
};

}  // namespace icestream::iceberg
