// Catalog: where tables are named and where a commit swaps a table's metadata pointer
// atomically (Iceberg spec "Metastore Tables"; REST catalog OpenAPI). Implementations:
// MetastoreCatalog (the Iceberg rules over a CatalogStore of rows: SQLite for the
// built-in catalog behind /iceberg/v1/…, PostgreSQL in the JDBC-catalog schema for
// scale-out) and RestCatalog (a client of any Iceberg REST catalog).
//
// Errors say what the caller does next: kNotFound (NoSuchNamespace / NoSuchTable —
// tell them apart with IsNoSuchNamespace), kAlreadyExists, kFailedPrecondition
// (namespace not empty), kConflict (a commit requirement failed: reload and retry),
// kUnknownOutcome (the commit may have happened: never clean up its files),
// kInvalidArgument (the request itself is wrong), kUnavailable (retry later).
// Thread-safety: implementations are safe to call from many threads.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "iceberg/table_metadata.h"
#include "iceberg/table_update.h"

namespace icestream::iceberg {

using Namespace = std::vector<std::string>;
using Properties = std::map<std::string, std::string>;

struct TableIdentifier {
  Namespace ns;
  std::string name;
  bool operator==(const TableIdentifier& other) const = default;
  bool operator<(const TableIdentifier& other) const {
    return ns != other.ns ? ns < other.ns : name < other.name;
  }
};

// "a.b" and "a.b.t", for messages.
std::string NamespaceName(const Namespace& ns);
std::string TableName(const TableIdentifier& id);

struct LoadedTable {
  std::string metadata_location;  // empty for a staged (not yet created) table
  TableMetadata metadata;
  // The metadata as JSON when the catalog has it at hand (saves re-serializing).
  std::shared_ptr<const std::string> metadata_json;
  Properties config;  // per-table client configuration (REST LoadTableResult.config)
};

struct CreateTableRequest {
  std::string name;
  Schema schema;
  std::optional<PartitionSpec> spec;
  std::optional<SortOrder> write_order;
  std::optional<std::string> location;
  Properties properties;
  // Return the metadata without creating the table; a later CommitTable with
  // assert-create and CreationUpdates creates it.
  bool stage_create = false;
};

struct NamespacePropertiesChange {
  std::vector<std::string> updated;
  std::vector<std::string> removed;
  std::vector<std::string> missing;
};

struct TableCommit {
  TableIdentifier id;
  std::vector<TableRequirement> requirements;
  std::vector<TableUpdate> updates;
};

class CommitFence;  // catalog_store.h

class Catalog {
 public:
  virtual ~Catalog() = default;

  // Direct children of `parent` (all top-level namespaces for an empty parent).
  virtual Result<std::vector<Namespace>> ListNamespaces(const Namespace& parent) = 0;
  virtual Status CreateNamespace(const Namespace& ns, const Properties& properties) = 0;
  virtual Result<Properties> LoadNamespaceProperties(const Namespace& ns) = 0;
  virtual Result<bool> NamespaceExists(const Namespace& ns) = 0;
  // kInvalidArgument when a key is both removed and updated (REST 422).
  virtual Result<NamespacePropertiesChange> UpdateNamespaceProperties(
      const Namespace& ns, const std::vector<std::string>& removals, const Properties& updates) = 0;
  // kFailedPrecondition when the namespace still holds tables or namespaces.
  virtual Status DropNamespace(const Namespace& ns) = 0;

  virtual Result<std::vector<TableIdentifier>> ListTables(const Namespace& ns) = 0;
  virtual Result<LoadedTable> CreateTable(const Namespace& ns,
                                          const CreateTableRequest& request) = 0;
  virtual Result<LoadedTable> LoadTable(const TableIdentifier& id) = 0;
  virtual Result<bool> TableExists(const TableIdentifier& id) = 0;
  // Checks the requirements against the current metadata, applies the updates, writes
  // the new metadata file and swaps the pointer. A missing table is created when the
  // requirements include assert-create.
  virtual Result<LoadedTable> CommitTable(const TableIdentifier& id,
                                          const std::vector<TableRequirement>& requirements,
                                          const std::vector<TableUpdate>& updates) = 0;
  // CommitTable with `fence` checked in the same transaction as the pointer swap (a
  // scale-out worker's lease epoch): the swap happens only if the fence holds, and the
  // fence's status is returned when it does not. Catalogs that cannot run a check
  // inside their commit (REST) answer kFailedPrecondition and change nothing.
  virtual Result<LoadedTable> CommitTableFenced(const TableIdentifier& id,
                                                const std::vector<TableRequirement>& requirements,
                                                const std::vector<TableUpdate>& updates,
                                                const CommitFence& fence);
  // Several tables at once, all or nothing (REST transactions/commit).
  virtual Status CommitTransaction(const std::vector<TableCommit>& commits) = 0;
  // `purge`: also delete the table's data and metadata files.
  virtual Status DropTable(const TableIdentifier& id, bool purge) = 0;
  virtual Status RenameTable(const TableIdentifier& from, const TableIdentifier& to) = 0;
  virtual Result<LoadedTable> RegisterTable(const TableIdentifier& id,
                                            const std::string& metadata_location,
                                            bool overwrite) = 0;
};

// The finer kinds of catalog errors that the REST layer and callers branch on (the subcode
// of the status, common/status.h; never read from the message).
enum class CatalogError { kNoSuchNamespace = 1, kNoSuchTable, kNamespaceNotEmpty };

// The statuses catalogs return for the REST error types: kNotFound or kFailedPrecondition
// with the CatalogError subcode and one spelling of the message.
Status NoSuchNamespaceError(const Namespace& ns);
Status NoSuchTableError(const TableIdentifier& id);
Status NamespaceNotEmptyError(const Namespace& ns);
bool IsNoSuchNamespace(const Status& status);
bool IsNoSuchTable(const Status& status);
bool IsNamespaceNotEmpty(const Status& status);

}  // namespace icestream::iceberg
