// The Iceberg REST catalog client (REST OpenAPI; formats.md §C.12).
#include "iceberg/rest/rest_catalog.h"

#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "iceberg/json_util.h"
#include "iceberg/rest/rest_json.h"

namespace icestream::iceberg::rest {

using nlohmann::json;
namespace ju = json_util;

namespace {

std::string NsPath(const Namespace& ns) { return "namespaces/" + EncodeNamespace(ns); }
std::string TablePath(const TableIdentifier& id) { return NsPath(id.ns) + "/tables/" + PercentEncode(id.name); }

Result<json> ParseBody(const std::string& body, const char* what) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Internal(fmt::format("REST catalog: {} response is not a JSON object", what));
  return j;
}

// Commit responses are {"metadata-location", "metadata"}: a LoadTableResult without config.
Result<LoadedTable> LoadedFrom(const std::string& body, const char* what) {
  ASSIGN_OR_RETURN(json j, ParseBody(body, what));
  auto t = LoadTableResultFromJson(j);
  if (!t.ok()) return Internal(fmt::format("REST catalog: {} response: {}", what, t.status().message()));
  return t;
}

}  // namespace

RestCatalog::RestCatalog(RestCatalogOptions options, http::HttpClient* client, std::unique_ptr<http::HttpClient> owned)
    : options_(std::move(options)), client_(client), owned_(std::move(owned)) {}

RestCatalog::~RestCatalog() = default;

Result<std::unique_ptr<RestCatalog>> RestCatalog::Open(RestCatalogOptions options, http::HttpClient* client) {
  while (!options.uri.empty() && options.uri.back() == '/') options.uri.pop_back();
  if (options.uri.rfind("http://", 0) != 0 && options.uri.rfind("https://", 0) != 0) {
    return InvalidArgument("REST catalog uri must be http:// or https://, got '" + options.uri + "'");
  }
  std::unique_ptr<http::HttpClient> owned;
  if (client == nullptr) {
    owned = std::make_unique<http::HttpClient>();
    client = owned.get();
  }
  std::unique_ptr<RestCatalog> c(new RestCatalog(std::move(options), client, std::move(owned)));
  std::string path = "/v1/config";
  if (!c->options_.warehouse.empty()) path += "?warehouse=" + PercentEncode(c->options_.warehouse);
  ASSIGN_OR_RETURN(Reply r, c->Call("GET", path, "", Kind::kRead));
  ASSIGN_OR_RETURN(json j, ParseBody(r.body, "config"));
  ASSIGN_OR_RETURN(Properties defaults, ju::StringMap(j, "defaults", "CatalogConfig"));
  ASSIGN_OR_RETURN(Properties overrides, ju::StringMap(j, "overrides", "CatalogConfig"));
  c->config_ = defaults;
  for (const auto& [k, v] : overrides) c->config_[k] = v;
  if (auto it = c->config_.find("prefix"); it != c->config_.end()) c->prefix_ = it->second;
  return c;
}

std::string RestCatalog::Path(const std::string& rest) const {
  return prefix_.empty() ? "/v1/" + rest : "/v1/" + PercentEncode(prefix_) + "/" + rest;
}

Result<RestCatalog::Reply> RestCatalog::Call(const std::string& method, const std::string& path,
                                             const std::string& body, Kind kind, const Namespace& ns,
                                             const TableIdentifier& id) {
  http::ClientRequest req;
  req.method = method;
  req.url = options_.uri + path;
  req.timeout_ms = options_.timeout_ms;
  if (!body.empty()) {
    req.headers.push_back({"Content-Type", "application/json"});
    req.body = body;
  }
  if (!options_.token.empty()) req.headers.push_back({"Authorization", "Bearer " + options_.token});
  const int attempts = kind == Kind::kRead ? std::max(1, options_.read_attempts) : 1;
  for (int attempt = 1;; ++attempt) {
    auto res = client_->Send(req);
    if (!res.ok()) {
      if (kind == Kind::kCommit) {
        return UnknownOutcome("REST commit: the request may or may not have reached the catalog: " + res.status().message());
      }
      if (attempt < attempts) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
        continue;
      }
      return res.status();
    }
    if (res->status >= 200 && res->status < 300) return Reply{res->status, std::move(res->body)};
    if (res->status == 503 && kind == Kind::kRead && attempt < attempts) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
      continue;
    }
    ErrorModel e;
    auto parsed = res->body.empty() ? Result<ErrorModel>(InvalidArgument("")) : ParseErrorBody(res->body);
    if (parsed.ok()) {
      e = *parsed;
    } else {
      e.type = res->status == 404 ? "" : "HTTPError";
      e.message = fmt::format("{} {} answered HTTP {}", method, path, res->status);
    }
    e.code = res->status;  // the status line is authoritative
    return StatusFromError(e, kind == Kind::kCommit, ns, id);
  }
}

Result<std::vector<Namespace>> RestCatalog::ListNamespaces(const Namespace& parent) {
  std::string path = Path("namespaces");
  if (!parent.empty()) path += "?parent=" + EncodeNamespace(parent);
  ASSIGN_OR_RETURN(Reply r, Call("GET", path, "", Kind::kRead, parent));
  ASSIGN_OR_RETURN(json j, ParseBody(r.body, "ListNamespaces"));
  std::vector<Namespace> out;
  const json* list = ju::Find(j, "namespaces");
  if (list == nullptr || !list->is_array()) return Internal("REST catalog: ListNamespaces without \"namespaces\"");
  for (const auto& ns : *list) {
    if (!ns.is_array()) return Internal("REST catalog: a namespace is not an array");
    Namespace n;
    for (const auto& part : ns) {
      if (!part.is_string()) return Internal("REST catalog: a namespace level is not a string");
      n.push_back(part.get<std::string>());
    }
    out.push_back(std::move(n));
  }
  return out;
}

Status RestCatalog::CreateNamespace(const Namespace& ns, const Properties& properties) {
  json body = {{"namespace", ns}, {"properties", properties}};
  return Call("POST", Path("namespaces"), body.dump(), Kind::kWrite, ns).status();
}

Result<Properties> RestCatalog::LoadNamespaceProperties(const Namespace& ns) {
  ASSIGN_OR_RETURN(Reply r, Call("GET", Path(NsPath(ns)), "", Kind::kRead, ns));
  ASSIGN_OR_RETURN(json j, ParseBody(r.body, "LoadNamespace"));
  return ju::StringMap(j, "properties", "GetNamespaceResponse");
}

Result<bool> RestCatalog::NamespaceExists(const Namespace& ns) {
  auto r = Call("HEAD", Path(NsPath(ns)), "", Kind::kRead, ns);
  if (r.ok()) return true;
  if (r.status().code() == StatusCode::kNotFound) return false;
  return r.status();
}

Result<NamespacePropertiesChange> RestCatalog::UpdateNamespaceProperties(const Namespace& ns,
                                                                        const std::vector<std::string>& removals,
                                                                        const Properties& updates) {
  json body = {{"removals", removals}, {"updates", updates}};
  ASSIGN_OR_RETURN(Reply r, Call("POST", Path(NsPath(ns) + "/properties"), body.dump(), Kind::kWrite, ns));
  ASSIGN_OR_RETURN(json j, ParseBody(r.body, "UpdateNamespaceProperties"));
  NamespacePropertiesChange c;
  ASSIGN_OR_RETURN(c.updated, ju::StringList(j, "updated", "UpdateNamespacePropertiesResponse"));
  ASSIGN_OR_RETURN(c.removed, ju::StringList(j, "removed", "UpdateNamespacePropertiesResponse"));
  ASSIGN_OR_RETURN(c.missing, ju::StringList(j, "missing", "UpdateNamespacePropertiesResponse"));
  return c;
}

Status RestCatalog::DropNamespace(const Namespace& ns) {
  return Call("DELETE", Path(NsPath(ns)), "", Kind::kWrite, ns).status();
}

Result<std::vector<TableIdentifier>> RestCatalog::ListTables(const Namespace& ns) {
  ASSIGN_OR_RETURN(Reply r, Call("GET", Path(NsPath(ns) + "/tables"), "", Kind::kRead, ns));
  ASSIGN_OR_RETURN(json j, ParseBody(r.body, "ListTables"));
  const json* ids = ju::Find(j, "identifiers");
  if (ids == nullptr || !ids->is_array()) return Internal("REST catalog: ListTables without \"identifiers\"");
  std::vector<TableIdentifier> out;
  for (const auto& id : *ids) {
    ASSIGN_OR_RETURN(TableIdentifier t, TableIdentifierFromJson(id));
    out.push_back(std::move(t));
  }
  return out;
}

Result<LoadedTable> RestCatalog::CreateTable(const Namespace& ns, const CreateTableRequest& request) {
  ASSIGN_OR_RETURN(Reply r, Call("POST", Path(NsPath(ns) + "/tables"), CreateTableRequestToJson(request).dump(),
                                 Kind::kWrite, ns, {ns, request.name}));
  return LoadedFrom(r.body, "CreateTable");
}

Result<LoadedTable> RestCatalog::LoadTable(const TableIdentifier& id) {
  ASSIGN_OR_RETURN(Reply r, Call("GET", Path(TablePath(id)), "", Kind::kRead, {}, id));
  return LoadedFrom(r.body, "LoadTable");
}

Result<bool> RestCatalog::TableExists(const TableIdentifier& id) {
  auto r = Call("HEAD", Path(TablePath(id)), "", Kind::kRead, {}, id);
  if (r.ok()) return true;
  if (r.status().code() == StatusCode::kNotFound) return false;
  return r.status();
}

Result<LoadedTable> RestCatalog::CommitTable(const TableIdentifier& id,
                                             const std::vector<TableRequirement>& requirements,
                                             const std::vector<TableUpdate>& updates) {
  std::string body = CommitTableRequestToJson({id, requirements, updates}, false).dump();
  ASSIGN_OR_RETURN(Reply r, Call("POST", Path(TablePath(id)), body, Kind::kCommit, {}, id));
  auto t = LoadedFrom(r.body, "CommitTable");
  // The commit happened; only its answer is unreadable.
  if (!t.ok()) return UnknownOutcome(t.status().message());
  return t;
}

Status RestCatalog::CommitTransaction(const std::vector<TableCommit>& commits) {
  json changes = json::array();
  for (const auto& c : commits) changes.push_back(CommitTableRequestToJson(c, true));
  return Call("POST", Path("transactions/commit"), json{{"table-changes", changes}}.dump(), Kind::kCommit).status();
}

Status RestCatalog::DropTable(const TableIdentifier& id, bool purge) {
  return Call("DELETE", Path(TablePath(id)) + (purge ? "?purgeRequested=true" : "?purgeRequested=false"), "",
              Kind::kWrite, {}, id)
      .status();
}

Status RestCatalog::RenameTable(const TableIdentifier& from, const TableIdentifier& to) {
  json body = {{"source", TableIdentifierToJson(from)}, {"destination", TableIdentifierToJson(to)}};
  return Call("POST", Path("tables/rename"), body.dump(), Kind::kWrite, to.ns, from).status();
}

Result<LoadedTable> RestCatalog::RegisterTable(const TableIdentifier& id, const std::string& metadata_location,
                                               bool overwrite) {
  json body = {{"name", id.name}, {"metadata-location", metadata_location}, {"overwrite", overwrite}};
  ASSIGN_OR_RETURN(Reply r, Call("POST", Path(NsPath(id.ns) + "/register"), body.dump(), Kind::kWrite, id.ns, id));
  return LoadedFrom(r.body, "RegisterTable");
}

}  // namespace icestream::iceberg::rest
