// Iceberg REST catalog handlers (REST OpenAPI paths; formats.md §C.12).
#include "iceberg/rest/rest_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <nlohmann/json.hpp>
#include <set>

#include "common/crypto.h"
#include "common/json_depth.h"
#include "iceberg/json_util.h"
#include "iceberg/rest/rest_json.h"
#include "iceberg/rest/table_locations.h"
#include "iceberg/table_metadata_json.h"

namespace icestream::iceberg::rest {

using nlohmann::json;
namespace ju = json_util;

namespace {

enum class Route { kOther, kCommit, kNamespaceProperties, kConfig };

http::Response JsonResponse(int status, std::string body) {
  http::Response r;
  r.status = status;
  r.body = std::move(body);
  r.SetHeader("Content-Type", "application/json");
  return r;
}

http::Response NoContent() {
  http::Response r;
  r.status = 204;
  return r;
}

ErrorModel ErrorFor(const Status& st, Route route) {
  const std::string& m = st.message();
  switch (st.code()) {
    case StatusCode::kInvalidArgument:
      if (route == Route::kNamespaceProperties) return {422, "UnprocessableEntityException", m};
      return {400, "BadRequestException", m};
    case StatusCode::kNotFound:
      if (IsNoSuchNamespace(st)) return {404, "NoSuchNamespaceException", m};
      if (IsNoSuchTable(st)) return {404, "NoSuchTableException", m};
      if (route == Route::kConfig) return {404, "NoSuchWarehouseException", m};
      return {404, "NotFoundException", m};
    case StatusCode::kAlreadyExists:
      return {409, "AlreadyExistsException", m};
    case StatusCode::kFailedPrecondition:
      if (IsNamespaceNotEmpty(st)) return {409, "NamespaceNotEmptyException", m};
      return {400, "BadRequestException", m};
    case StatusCode::kConflict:
      return {409, "CommitFailedException", m};
    case StatusCode::kUnimplemented:
      return {406, "UnsupportedOperationException", m};
    case StatusCode::kUnavailable:
    case StatusCode::kThrottled:
    case StatusCode::kShuttingDown:
      if (route == Route::kCommit) return {503, "CommitStateUnknownException", m};
      return {503, "ServiceUnavailableException", m};
    case StatusCode::kUnknownOutcome:
      return {500, "CommitStateUnknownException", m};
    default:
      if (route == Route::kCommit) return {500, "CommitStateUnknownException", m};
      return {500, "InternalServerError", m.empty() ? "internal error" : m};
  }
}

http::Response ErrorResponse(const ErrorModel& e, const http::Request& req) {
  if (e.code >= 500) {
    // The full text to the log; the client's copy names no file of this machine.
    spdlog::warn("iceberg {} {} answered {} {}: {}", req.method, req.path, e.code, e.type,
                 e.message);
    ErrorModel redacted = e;
    redacted.message = RedactPaths(e.message);
    return JsonResponse(e.code, req.method == "HEAD" ? "" : ErrorBody(redacted));
  }
  return JsonResponse(e.code, req.method == "HEAD" ? "" : ErrorBody(e));
}

http::Response Fail(const Status& st, Route route, const http::Request& req) {
  return ErrorResponse(ErrorFor(st, route), req);
}

Result<std::map<std::string, std::string>> ParseQuery(std::string_view q) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start < q.size()) {
    size_t amp = q.find('&', start);
    std::string_view pair =
        q.substr(start, amp == std::string_view::npos ? std::string_view::npos : amp - start);
    size_t eq = pair.find('=');
    ASSIGN_OR_RETURN(std::string k, PercentDecode(pair.substr(0, eq), true));
    std::string v;
    if (eq != std::string_view::npos) {
      ASSIGN_OR_RETURN(v, PercentDecode(pair.substr(eq + 1), true));
    }
    if (!k.empty()) out[k] = v;
    if (amp == std::string_view::npos) break;
    start = amp + 1;
  }
  return out;
}

// Deep enough for any real schema (each type level is three JSON levels); deeper input
// is an attack on the recursion of the walkers of what it parses to.
constexpr size_t kMaxBodyNesting = 512;

Result<json> Body(const http::Request& req) {
  if (JsonNestingDepth(req.body, kMaxBodyNesting) > kMaxBodyNesting) {
    return InvalidArgument("Malformed request: the body nests JSON more than " +
                           std::to_string(kMaxBodyNesting) + " levels deep");
  }
  json j = json::parse(req.body, nullptr, false);
  if (j.is_discarded()) return InvalidArgument("Malformed request: the body is not valid JSON");
  if (!j.is_object()) return InvalidArgument("Malformed request: the body must be a JSON object");
  return j;
}

// Pagination (REST OpenAPI "PageToken"): without pageToken everything comes back in one
// response; with it, pages of pageSize (default 100) and an opaque offset token.
template <typename T>
Result<std::pair<std::vector<T>, std::optional<std::string>>> Page(
    std::vector<T> all, const std::map<std::string, std::string>& query) {
  size_t offset = 0, size = 100;
  // pageSize is checked whenever it is given (an integer >= 1), even without a pageToken.
  if (auto ps = query.find("pageSize"); ps != query.end()) {
    auto [p, ec] = std::from_chars(ps->second.data(), ps->second.data() + ps->second.size(), size);
    if (ec != std::errc() || p != ps->second.data() + ps->second.size() || size == 0) {
      return InvalidArgument("pageSize must be a positive integer");
    }
  }
  auto token = query.find("pageToken");
  if (token == query.end()) return std::make_pair(std::move(all), std::optional<std::string>());
  if (!token->second.empty()) {
    auto [p, ec] =
        std::from_chars(token->second.data(), token->second.data() + token->second.size(), offset);
    if (ec != std::errc() || p != token->second.data() + token->second.size()) {
      return InvalidArgument("invalid pageToken");
    }
  }
  std::vector<T> page;
  for (size_t i = offset; i < all.size() && page.size() < size; ++i)
    page.push_back(std::move(all[i]));
  std::optional<std::string> next;
  if (offset + page.size() < all.size()) next = std::to_string(offset + page.size());
  return std::make_pair(std::move(page), next);
}

void PutPageToken(json* j, const std::map<std::string, std::string>& query,
                  const std::optional<std::string>& next) {
  if (query.count("pageToken")) (*j)["next-page-token"] = next ? json(*next) : json(nullptr);
}

// One tag per metadata version and representation: a LoadTable with snapshots=refs leaves
// snapshots out, so it must not share the tag of the full metadata (REST OpenAPI, etag).
std::string ETagOf(const std::string& metadata_location, std::string_view snapshots = "all") {
  std::string key = metadata_location;
  if (snapshots != "all") key += "#snapshots=" + std::string(snapshots);
  return "\"" + crypto::Hex(crypto::Sha256(key)).substr(0, 40) + "\"";
}

const std::vector<std::string>& Endpoints() {
  static const std::vector<std::string> kEndpoints = {
      "GET /v1/{prefix}/namespaces",
      "POST /v1/{prefix}/namespaces",
      "GET /v1/{prefix}/namespaces/{namespace}",
      "HEAD /v1/{prefix}/namespaces/{namespace}",
      "DELETE /v1/{prefix}/namespaces/{namespace}",
      "POST /v1/{prefix}/namespaces/{namespace}/properties",
      "GET /v1/{prefix}/namespaces/{namespace}/tables",
      "POST /v1/{prefix}/namespaces/{namespace}/tables",
      "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
      "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
      "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
      "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
      "POST /v1/{prefix}/namespaces/{namespace}/register",
      "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
      "POST /v1/{prefix}/tables/rename",
      "POST /v1/{prefix}/transactions/commit",
  };
  return kEndpoints;
}

// S3 Tables' naming rules, for what a client creates: namespace levels and table names
// are 1-255 characters of a-z, 0-9 and '_', starting and ending with a letter or digit;
// a namespace must not start with "aws". Namespaces nest at most kMaxNamespaceLevels
// (S3 Tables itself has one level) so that table paths stay well within PATH_MAX.
constexpr size_t kMaxNameLength = 255;
constexpr size_t kMaxNamespaceLevels = 8;

std::string Shown(const std::string& name) {
  return name.size() <= 64
             ? name
             : name.substr(0, 64) + "... (" + std::to_string(name.size()) + " characters)";
}

Status CheckName(std::string_view what, const std::string& name) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  bool ok =
      !name.empty() && name.size() <= kMaxNameLength && alnum(name.front()) && alnum(name.back());
  for (char c : name) ok &= alnum(c) || c == '_';
  if (!ok) {
    return InvalidArgument(
        fmt::format("invalid {} name '{}': names are 1-{} characters of lowercase letters, digits "
                    "and '_', starting and "
                    "ending with a letter or digit",
                    what, Shown(name), kMaxNameLength));
  }
  return Status::OK();
}

Status CheckNewNamespace(const Namespace& ns) {
  if (ns.empty()) return InvalidArgument("a namespace needs at least one level");
  if (ns.size() > kMaxNamespaceLevels) {
    return InvalidArgument(
        fmt::format("a namespace has at most {} levels, got {}", kMaxNamespaceLevels, ns.size()));
  }
  for (const auto& level : ns) RETURN_IF_ERROR(CheckName("namespace", level));
  if (ns.front().rfind("aws", 0) == 0) {
    return InvalidArgument("invalid namespace name '" + Shown(ns.front()) +
                           "': the prefix 'aws' is reserved");
  }
  return Status::OK();
}

json NamespaceResponse(const Namespace& ns, const Properties& props) {
  return {{"namespace", ns}, {"properties", props}};
}

class Handler {
 public:
  // `root`: the warehouse's root location; empty: locations are not checked.
  Handler(const http::Request& req, Catalog* catalog, std::vector<std::string> segs,
          std::map<std::string, std::string> query, std::string root)
      : req_(req),
        catalog_(catalog),
        segs_(std::move(segs)),
        query_(std::move(query)),
        root_(std::move(root)) {}

  http::Response Run() {
    const std::string& m = req_.method;
    if (segs_[0] == "namespaces") {
      if (segs_.size() == 1) {
        if (m == "GET") return ListNamespaces();
        if (m == "POST") return CreateNamespace();
        return MethodNotAllowed();
      }
      Namespace ns = SplitNamespace(segs_[1]);
      if (segs_.size() == 2) {
        if (m == "GET") return LoadNamespace(ns);
        if (m == "HEAD") return NamespaceExists(ns);
        if (m == "DELETE") return Done(catalog_->DropNamespace(ns), Route::kOther);
        return MethodNotAllowed();
      }
      const std::string& what = segs_[2];
      if (segs_.size() == 3 && what == "properties")
        return m == "POST" ? UpdateProperties(ns) : MethodNotAllowed();
      if (segs_.size() == 3 && what == "register")
        return m == "POST" ? RegisterTable(ns) : MethodNotAllowed();
      if (segs_.size() == 3 && what == "tables") {
        if (m == "GET") return ListTables(ns);
        if (m == "POST") return CreateTable(ns);
        return MethodNotAllowed();
      }
      if (what == "tables" && segs_.size() >= 4) {
        TableIdentifier id{ns, segs_[3]};
        if (segs_.size() == 4) {
          if (m == "GET") return LoadTable(id);
          if (m == "HEAD") return TableExists(id);
          if (m == "POST") return CommitTable(id);
          if (m == "DELETE") return DropTable(id);
          return MethodNotAllowed();
        }
        if (segs_.size() == 5 && segs_[4] == "metrics")
          return m == "POST" ? ReportMetrics(id) : MethodNotAllowed();
      }
      if (what == "views")
        return Fail(Unimplemented("views are not supported by this catalog"), Route::kOther, req_);
    }
    if (segs_.size() == 2 && segs_[0] == "tables" && segs_[1] == "rename") {
      return m == "POST" ? RenameTable() : MethodNotAllowed();
    }
    if (segs_.size() == 2 && segs_[0] == "transactions" && segs_[1] == "commit") {
      return m == "POST" ? CommitTransaction() : MethodNotAllowed();
    }
    if (segs_[0] == "views")
      return Fail(Unimplemented("views are not supported by this catalog"), Route::kOther, req_);
    return ErrorResponse(
        {404, "NotFoundException", "no such Iceberg REST route: " + req_.method + " " + req_.path},
        req_);
  }

 private:
  http::Response MethodNotAllowed() {
    return ErrorResponse({405, "MethodNotAllowedException",
                          "method " + req_.method + " is not allowed on " + req_.path},
                         req_);
  }
  http::Response Done(const Status& st, Route route) {
    return st.ok() ? NoContent() : Fail(st, route, req_);
  }

  // A commit's set-location must follow the same rules as a new table's location.
  Status CheckMoves(const TableCommit& commit, const TableIdentifier& id) {
    if (root_.empty()) return Status::OK();
    for (const auto& u : commit.updates) {
      if (const auto* move = std::get_if<update::SetLocation>(&u)) {
        RETURN_IF_ERROR(CheckTableLocation(catalog_, root_, move->location, &id));
      }
    }
    return Status::OK();
  }

  http::Response ListNamespaces() {
    Namespace parent;
    if (auto it = query_.find("parent"); it != query_.end() && !it->second.empty())
      parent = SplitNamespace(it->second);
    auto list = catalog_->ListNamespaces(parent);
    if (!list.ok()) return Fail(list.status(), Route::kOther, req_);
    auto page = Page(std::move(list).value(), query_);
    if (!page.ok()) return Fail(page.status(), Route::kOther, req_);
    json j = {{"namespaces", page->first}};
    PutPageToken(&j, query_, page->second);
    return JsonResponse(200, j.dump());
  }

  http::Response CreateNamespace() {
    auto body = Body(req_);
    if (!body.ok()) return Fail(body.status(), Route::kOther, req_);
    const json* ns = ju::Find(*body, "namespace");
    if (ns == nullptr)
      return Fail(InvalidArgument("CreateNamespaceRequest: missing \"namespace\""), Route::kOther,
                  req_);
    auto parts = ju::StringList(*body, "namespace", "CreateNamespaceRequest");
    auto props = ju::StringMap(*body, "properties", "CreateNamespaceRequest");
    if (!parts.ok()) return Fail(parts.status(), Route::kOther, req_);
    if (!props.ok()) return Fail(props.status(), Route::kOther, req_);
    if (Status named = CheckNewNamespace(*parts); !named.ok())
      return Fail(named, Route::kOther, req_);
    Status st = catalog_->CreateNamespace(*parts, *props);
    if (!st.ok()) return Fail(st, Route::kOther, req_);
    return JsonResponse(200, NamespaceResponse(*parts, *props).dump());
  }

  http::Response LoadNamespace(const Namespace& ns) {
    auto props = catalog_->LoadNamespaceProperties(ns);
    if (!props.ok()) return Fail(props.status(), Route::kOther, req_);
    return JsonResponse(200, NamespaceResponse(ns, *props).dump());
  }

  http::Response NamespaceExists(const Namespace& ns) {
    auto exists = catalog_->NamespaceExists(ns);
    if (!exists.ok()) return Fail(exists.status(), Route::kOther, req_);
    if (!*exists) return Fail(NoSuchNamespaceError(ns), Route::kOther, req_);
    return NoContent();
  }

  http::Response UpdateProperties(const Namespace& ns) {
    auto body = Body(req_);
    if (!body.ok()) return Fail(body.status(), Route::kOther, req_);
    auto removals = ju::StringList(*body, "removals", "UpdateNamespacePropertiesRequest");
    auto updates = ju::StringMap(*body, "updates", "UpdateNamespacePropertiesRequest");
    if (!removals.ok()) return Fail(removals.status(), Route::kOther, req_);
    if (!updates.ok()) return Fail(updates.status(), Route::kOther, req_);
    auto change = catalog_->UpdateNamespaceProperties(ns, *removals, *updates);
    if (!change.ok()) return Fail(change.status(), Route::kNamespaceProperties, req_);
    json j = {
        {"updated", change->updated}, {"removed", change->removed}, {"missing", change->missing}};
    return JsonResponse(200, j.dump());
  }

  http::Response ListTables(const Namespace& ns) {
    auto tables = catalog_->ListTables(ns);
    if (!tables.ok()) return Fail(tables.status(), Route::kOther, req_);
    auto page = Page(std::move(tables).value(), query_);
    if (!page.ok()) return Fail(page.status(), Route::kOther, req_);
    json ids = json::array();
    for (const auto& id : page->first) ids.push_back(TableIdentifierToJson(id));
    json j = {{"identifiers", ids}};
    PutPageToken(&j, query_, page->second);
    return JsonResponse(200, j.dump());
  }

  http::Response Loaded(const LoadedTable& t, std::string_view snapshots = "all") {
    http::Response r = JsonResponse(200, LoadTableResultToJson(t));
    if (!t.metadata_location.empty()) r.SetHeader("ETag", ETagOf(t.metadata_location, snapshots));
    return r;
  }

  http::Response CreateTable(const Namespace& ns) {
    auto body = Body(req_);
    if (!body.ok()) return Fail(body.status(), Route::kOther, req_);
    auto request = CreateTableRequestFromJson(*body);
    if (!request.ok()) return Fail(request.status(), Route::kOther, req_);
    if (Status named = CheckName("table", request->name); !named.ok())
      return Fail(named, Route::kOther, req_);
    if (!root_.empty()) {
      // A namespace's "location" property places its tables; made explicit here so that the
      // location rules see where the table would go.
      if (!request->location || request->location->empty()) {
        auto props = catalog_->LoadNamespaceProperties(ns);
        if (props.ok()) {
          if (auto it = props->find("location"); it != props->end() && !it->second.empty()) {
            std::string base = it->second;
            while (base.size() > 1 && base.back() == '/') base.pop_back();
            request->location = base + "/" + request->name;
          }
        }
      }
      if (request->location && !request->location->empty()) {
        Status where = CheckTableLocation(catalog_, root_, *request->location, nullptr);
        if (!where.ok()) return Fail(where, Route::kOther, req_);
      }
    }
    auto t = catalog_->CreateTable(ns, *request);
    if (!t.ok()) return Fail(t.status(), Route::kOther, req_);
    return Loaded(*t);
  }

  http::Response RegisterTable(const Namespace& ns) {
    auto body = Body(req_);
    if (!body.ok()) return Fail(body.status(), Route::kOther, req_);
    auto name = ju::String(*body, "name", "RegisterTableRequest");
    auto location = ju::String(*body, "metadata-location", "RegisterTableRequest");
    auto overwrite = ju::OptBool(*body, "overwrite", "RegisterTableRequest");
    if (!name.ok()) return Fail(name.status(), Route::kOther, req_);
    if (!location.ok()) return Fail(location.status(), Route::kOther, req_);
    if (!overwrite.ok()) return Fail(overwrite.status(), Route::kOther, req_);
    if (Status named = CheckName("table", *name); !named.ok())
      return Fail(named, Route::kOther, req_);
    TableIdentifier id{ns, *name};
    auto t = catalog_->RegisterTable(id, *location, overwrite->value_or(false));
    if (!t.ok()) return Fail(t.status(), Route::kOther, req_);
    if (!root_.empty()) {
      // The metadata names the table's location: a registration onto a live table's files
      // is undone (the catalog entry only; no file is touched).
      Status where = CheckTableLocation(catalog_, root_, t->metadata.location, &id, false);
      if (!where.ok()) {
        (void)catalog_->DropTable(id, /*purge=*/false);
        return Fail(where, Route::kOther, req_);
      }
    }
    return Loaded(*t);
  }

  http::Response LoadTable(const TableIdentifier& id) {
    auto t = catalog_->LoadTable(id);
    if (!t.ok()) return Fail(t.status(), Route::kOther, req_);
    std::string snapshots = "all";
    if (auto it = query_.find("snapshots"); it != query_.end()) {
      if (it->second != "all" && it->second != "refs") {
        return Fail(InvalidArgument("snapshots must be 'all' or 'refs'"), Route::kOther, req_);
      }
      snapshots = it->second;
    }
    std::string etag = ETagOf(t->metadata_location, snapshots);
    if (req_.GetHeader("if-none-match") == etag) {
      http::Response r;
      r.status = 304;
      r.SetHeader("ETag", etag);
      return r;
    }
    if (snapshots == "refs") {
      std::set<int64_t> referenced;
      for (const auto& [name, ref] : t->metadata.refs) referenced.insert(ref.snapshot_id);
      std::erase_if(t->metadata.snapshots,
                    [&](const Snapshot& s) { return !referenced.count(s.snapshot_id); });
      t->metadata_json.reset();
    }
    return Loaded(*t, snapshots);
  }

  http::Response TableExists(const TableIdentifier& id) {
    auto exists = catalog_->TableExists(id);
    if (!exists.ok()) return Fail(exists.status(), Route::kOther, req_);
    if (!*exists) return Fail(NoSuchTableError(id), Route::kOther, req_);
    return NoContent();
  }

  http::Response CommitTable(const TableIdentifier& id) {
    auto body = Body(req_);
    if (!body.ok()) return Fail(body.status(), Route::kOther, req_);
    auto commit = CommitTableRequestFromJson(*body, false);
    if (!commit.ok()) return Fail(commit.status(), Route::kOther, req_);
    if (!commit->id.name.empty() && !(commit->id == id)) {
      return Fail(InvalidArgument("the identifier in the body does not match the path"),
                  Route::kOther, req_);
    }
    if (Status where = CheckMoves(*commit, id); !where.ok())
      return Fail(where, Route::kOther, req_);
    auto t = catalog_->CommitTable(id, commit->requirements, commit->updates);
    if (!t.ok()) return Fail(t.status(), Route::kCommit, req_);
    http::Response r = JsonResponse(200, json{{"metadata-location", t->metadata_location}}.dump());
    // {"metadata-location": …, "metadata": …} without re-serializing the metadata.
    r.body.pop_back();
    r.body += ",\"metadata\":";
    r.body += t->metadata_json ? *t->metadata_json : TableMetadataToJson(t->metadata);
    r.body += "}";
    r.SetHeader("ETag", ETagOf(t->metadata_location));
    return r;
  }

  http::Response DropTable(const TableIdentifier& id) {
    bool purge = false;
    if (auto it = query_.find("purgeRequested"); it != query_.end()) {
      if (it->second != "true" && it->second != "false") {
        return Fail(InvalidArgument("purgeRequested must be true or false"), Route::kOther, req_);
      }
      purge = it->second == "true";
    }
    return Done(catalog_->DropTable(id, purge), Route::kOther);
  }

  http::Response ReportMetrics(const TableIdentifier& id) {
    // Accepted and dropped: this catalog keeps no scan or commit reports.
    auto exists = catalog_->TableExists(id);
    if (!exists.ok()) return Fail(exists.status(), Route::kOther, req_);
    if (!*exists) return Fail(NoSuchTableError(id), Route::kOther, req_);
    return NoContent();
  }

  http::Response RenameTable() {
    auto body = Body(req_);
    if (!body.ok()) return Fail(body.status(), Route::kOther, req_);
    const json* src = ju::Find(*body, "source");
    const json* dst = ju::Find(*body, "destination");
    if (src == nullptr || dst == nullptr) {
      return Fail(InvalidArgument("RenameTableRequest needs \"source\" and \"destination\""),
                  Route::kOther, req_);
    }
    auto from = TableIdentifierFromJson(*src);
    auto to = TableIdentifierFromJson(*dst);
    if (!from.ok()) return Fail(from.status(), Route::kOther, req_);
    if (!to.ok()) return Fail(to.status(), Route::kOther, req_);
    if (Status named = CheckName("table", to->name); !named.ok())
      return Fail(named, Route::kOther, req_);
    return Done(catalog_->RenameTable(*from, *to), Route::kOther);
  }

  http::Response CommitTransaction() {
    auto body = Body(req_);
    if (!body.ok()) return Fail(body.status(), Route::kOther, req_);
    const json* changes = ju::Find(*body, "table-changes");
    if (changes == nullptr || !changes->is_array()) {
      return Fail(InvalidArgument("CommitTransactionRequest: \"table-changes\" must be an array"),
                  Route::kOther, req_);
    }
    std::vector<TableCommit> commits;
    for (const auto& c : *changes) {
      auto commit = CommitTableRequestFromJson(c, true);
      if (!commit.ok()) return Fail(commit.status(), Route::kOther, req_);
      if (Status where = CheckMoves(*commit, commit->id); !where.ok()) {
        return Fail(where, Route::kOther, req_);
      }
      commits.push_back(std::move(commit).value());
    }
    return Done(catalog_->CommitTransaction(commits), Route::kCommit);
  }

  const http::Request& req_;
  Catalog* catalog_;
  std::vector<std::string> segs_;
  std::map<std::string, std::string> query_;
  std::string root_;
};

}  // namespace

RestCatalogServer::RestCatalogServer(RestServerOptions options, Warehouses warehouses)
    : options_(std::move(options)), warehouses_(std::move(warehouses)) {}

http::Response RestCatalogServer::Handle(const http::Request& req) const {
  std::string_view path = req.path;
  if (path.rfind(options_.base_path, 0) != 0) {
    return ErrorResponse({404, "NotFoundException", "not an Iceberg REST path: " + req.path}, req);
  }
  path.remove_prefix(options_.base_path.size());
  // Decoded segments; an empty segment (double slash) is not a route.
  std::vector<std::string> segs;
  size_t start = path.empty() || path[0] != '/' ? 0 : 1;
  while (start <= path.size() && !path.empty()) {
    size_t slash = path.find('/', start);
    std::string_view raw = path.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    auto seg = PercentDecode(raw);
    if (!seg.ok()) return Fail(seg.status(), Route::kOther, req);
    segs.push_back(std::move(seg).value());
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (!segs.empty() && segs.back().empty()) segs.pop_back();  // trailing slash
  auto query = ParseQuery(req.query);
  if (!query.ok()) return Fail(query.status(), Route::kOther, req);
  if (segs.empty() || segs[0] != "v1" || segs.size() < 2) {
    return ErrorResponse(
        {404, "NotFoundException", "Iceberg REST routes start with " + options_.base_path + "/v1/"},
        req);
  }
  if (segs[1] == "config") {
    if (req.method != "GET")
      return ErrorResponse({405, "MethodNotAllowedException", "config is GET only"}, req);
    json overrides = json::object();
    if (auto w = query->find("warehouse"); w != query->end() && !w->second.empty()) {
      auto prefix = warehouses_.prefix_for(w->second);
      if (!prefix.ok()) return Fail(prefix.status(), Route::kConfig, req);
      overrides["prefix"] = *prefix;
    }
    json j = {
        {"defaults", options_.defaults}, {"overrides", overrides}, {"endpoints", Endpoints()}};
    return JsonResponse(200, j.dump());
  }
  if (segs[1] == "oauth") {
    return Fail(Unimplemented("OAuth2 token exchange is not offered; send any bearer token"),
                Route::kOther, req);
  }
  // A warehouse prefix can be a word that also starts a route without prefix (a table
  // bucket named "tables" or "transactions"): the reading that makes a route wins;
  // when both do ("/v1/namespaces/namespaces"), the one without prefix.
  static const std::set<std::string> kRoots = {"namespaces", "tables", "transactions", "views"};
  auto routes = [&](size_t from) {
    size_t n = segs.size() - from;
    if (n == 0) return false;
    const std::string& root = segs[from];
    if (root == "namespaces" || root == "views") return n <= 6;
    if (root == "tables") return n == 2 && segs[from + 1] == "rename";
    if (root == "transactions") return n == 2 && segs[from + 1] == "commit";
    return false;
  };
  std::string prefix;
  size_t first = 1;
  if (!kRoots.count(segs[1]) || (!routes(1) && segs.size() > 2 && routes(2))) {
    prefix = segs[1];
    first = 2;
  }
  if (segs.size() <= first) {
    return ErrorResponse({404, "NotFoundException", "no such Iceberg REST route: " + req.path},
                         req);
  }
  auto catalog = warehouses_.catalog(prefix);
  if (!catalog.ok()) {
    return ErrorResponse({404, "NoSuchWarehouseException", catalog.status().message()}, req);
  }
  std::string root;
  if (warehouses_.root_location) {
    auto r = warehouses_.root_location(prefix);
    if (r.ok()) root = std::move(*r);
  }
  Handler h(req, *catalog,
            std::vector<std::string>(segs.begin() + static_cast<ptrdiff_t>(first), segs.end()),
            std::move(query).value(), std::move(root));
  return h.Run();
}

}  // namespace icestream::iceberg::rest
