// RestCatalog: the Catalog interface over any Iceberg REST catalog (REST OpenAPI; Java
// client behaviour from formats.md §C.12) — icestream's own /iceberg endpoint or an
// external one — so that writers (Table) can commit to a catalog they do not host.
//
// Open() calls GET /v1/config (with the warehouse, when given) and uses the `prefix`
// the server returns. Errors: the server's error model mapped back onto Catalog
// statuses (rest_json.h StatusFromError); a transport failure or 5xx on a commit is
// kUnknownOutcome — the commit may have happened, so its files must not be cleaned up.
//
// Thread-safe (the HTTP client is).
#pragma once

#include <memory>
#include <string>

#include "http/client.h"
#include "iceberg/catalog.h"

namespace icestream::iceberg::rest {

struct RestCatalogOptions {
  // Base URI, e.g. "http://127.0.0.1:4567/iceberg" (requests go to <uri>/v1/...).
  std::string uri;
  // Warehouse sent to /v1/config (a table bucket name or ARN); empty: server default.
  std::string warehouse;
  // Bearer token; empty: no Authorization header.
  std::string token;
  int timeout_ms = 60000;
  // Retries of idempotent calls (loads, lists, HEADs) on 503 and transport errors.
  int read_attempts = 3;
};

class RestCatalog final : public Catalog {
 public:
  // `client` may be null (the catalog then owns one); otherwise it must outlive this.
  static Result<std::unique_ptr<RestCatalog>> Open(RestCatalogOptions options, http::HttpClient* client = nullptr);
  ~RestCatalog() override;

  // The path prefix the server configured ("" when none).
  const std::string& prefix() const { return prefix_; }
  // The merged configuration the server returned (defaults, then overrides).
  const Properties& config() const { return config_; }

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

 private:
  RestCatalog(RestCatalogOptions options, http::HttpClient* client, std::unique_ptr<http::HttpClient> owned);

  struct Reply {
    int status = 0;
    std::string body;
  };
  enum class Kind { kRead, kWrite, kCommit };
  // Sends one request; non-2xx become statuses (see class comment). `ns`/`id` name what
  // a 404 is about.
  Result<Reply> Call(const std::string& method, const std::string& path, const std::string& body, Kind kind,
                     const Namespace& ns = {}, const TableIdentifier& id = {});
  std::string Path(const std::string& rest) const;

  RestCatalogOptions options_;
  http::HttpClient* client_;
  std::unique_ptr<http::HttpClient> owned_;
  std::string prefix_;
  Properties config_;
};

}  // namespace icestream::iceberg::rest
