// Wiring of the Iceberg REST catalog and the Glue schema registry.
#include "server/catalog_wiring.h"

#include <set>

#include "common/clock.h"
#include "common/fs.h"
#include "iceberg/rest/rest_json.h"
#include "iceberg/rest/rest_server.h"
#include "iceberg/warehouses.h"
#include "objectstore/local_store.h"
#include "registry/glue/api.h"
#include "registry/registry.h"

namespace icestream::server {

namespace {

// The REST catalog operation (the OpenAPI operationId) a request names, for the API call
// metrics: the path after /iceberg/v1/, with or without the warehouse prefix.
std::string_view RestOperation(std::string_view method, std::string_view path) {
  constexpr std::string_view kBase = "/iceberg/v1/";
  if (path.rfind(kBase, 0) != 0) return "unknown";
  std::vector<std::string_view> segs;
  for (std::string_view rest = path.substr(kBase.size()); !rest.empty();) {
    size_t slash = rest.find('/');
    segs.push_back(rest.substr(0, slash));
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  }
  if (segs.size() == 1 && segs[0] == "config") return method == "GET" ? "GetConfig" : "unknown";
  if (!segs.empty() && segs[0] != "namespaces" && segs[0] != "tables" &&
      segs[0] != "transactions") {
    segs.erase(segs.begin());  // the prefix
  }
  auto is = [&](std::initializer_list<std::string_view> shape) {
    if (segs.size() != shape.size()) return false;
    size_t i = 0;
    for (auto s : shape) {
      if (!s.empty() && segs[i] != s) return false;
      ++i;
    }
    return true;
  };
  struct Route {
    std::initializer_list<std::string_view> shape;  // "" = any segment
    std::string_view method, operation;
  };
  static const Route kRoutes[] = {
      {{"namespaces"}, "GET", "ListNamespaces"},
      {{"namespaces"}, "POST", "CreateNamespace"},
      {{"namespaces", ""}, "GET", "LoadNamespaceMetadata"},
      {{"namespaces", ""}, "HEAD", "NamespaceExists"},
      {{"namespaces", ""}, "DELETE", "DropNamespace"},
      {{"namespaces", "", "properties"}, "POST", "UpdateProperties"},
      {{"namespaces", "", "tables"}, "GET", "ListTables"},
      {{"namespaces", "", "tables"}, "POST", "CreateTable"},
      {{"namespaces", "", "register"}, "POST", "RegisterTable"},
      {{"namespaces", "", "tables", ""}, "GET", "LoadTable"},
      {{"namespaces", "", "tables", ""}, "HEAD", "TableExists"},
      {{"namespaces", "", "tables", ""}, "POST", "UpdateTable"},
      {{"namespaces", "", "tables", ""}, "DELETE", "DropTable"},
      {{"namespaces", "", "tables", "", "metrics"}, "POST", "ReportMetrics"},
      {{"tables", "rename"}, "POST", "RenameTable"},
      {{"transactions", "commit"}, "POST", "CommitTransaction"},
  };
  for (const auto& r : kRoutes) {
    if (r.method == method && is(r.shape)) return r.operation;
  }
  return "unknown";
}

// The error type of a catalog answer ({"error": {"type": ...}}), "" for success.
std::string RestErrorType(const http::Response& r, std::string* message) {
  if (r.status < 400) return "";
  auto parsed = iceberg::rest::ParseErrorBody(r.body);
  if (parsed.ok() && !parsed->type.empty()) {
    *message = parsed->message;
    return parsed->type;
  }
  return "HTTP" + std::to_string(r.status);
}

}  // namespace

struct CatalogServices::Impl {
  Database* db = nullptr;
  std::string default_warehouse;
  std::shared_ptr<objectstore::ObjectStore> table_buckets;
  std::unique_ptr<iceberg::Warehouses> warehouses;
  std::unique_ptr<iceberg::rest::RestCatalogServer> rest;
  std::unique_ptr<registry::SchemaRegistry> registry;
  std::unique_ptr<registry::glue::GlueApi> glue;
};

CatalogServices::CatalogServices(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CatalogServices::~CatalogServices() = default;

iceberg::Warehouses* CatalogServices::warehouses() const { return impl_->warehouses.get(); }
registry::SchemaRegistry* CatalogServices::registry() const { return impl_->registry.get(); }

std::vector<std::string> CatalogServices::KnownWarehouses() const {
  std::set<std::string> names = {impl_->default_warehouse};
  // The SQLite catalog's own tables (iceberg/sqlite_catalog.cc) name every warehouse in use.
  auto rows = impl_->db->Query(
      "SELECT warehouse FROM iceberg_namespaces UNION SELECT warehouse FROM iceberg_tables");
  if (rows.ok()) {
    for (const auto& r : *rows) names.insert(AsText(r[0]));
  }
  return {names.begin(), names.end()};
}

Result<std::unique_ptr<CatalogServices>> CatalogServices::Start(
    const Config& config, Database* db, Router* router, const SurfaceAuth* auth,
    std::shared_ptr<objectstore::ObjectStore> s3_buckets,
    std::function<Result<std::shared_ptr<iceberg::CatalogStore>>(const std::string&)>
        catalog_rows) {
  auto impl = std::make_unique<Impl>();
  impl->db = db;
  impl->default_warehouse = config.iceberg_default_warehouse;
  if (s3_buckets) {
    impl->table_buckets = std::move(s3_buckets);
  } else {
    std::string root = fs::Join(config.data_dir, "table-buckets");
    RETURN_IF_ERROR(fs::MakeDirs(root));
    impl->table_buckets = std::make_shared<objectstore::LocalObjectStore>(root);
  }
  if (catalog_rows) {
    impl->warehouses = std::make_unique<iceberg::Warehouses>(
        std::move(catalog_rows), impl->table_buckets.get(), SystemClock::Default(), config.region,
        config.account);
  } else {
    impl->warehouses = std::make_unique<iceberg::Warehouses>(
        db, impl->table_buckets.get(), SystemClock::Default(), config.region, config.account);
  }
  iceberg::Warehouses* wh = impl->warehouses.get();
  std::string default_warehouse = config.iceberg_default_warehouse;
  RETURN_IF_ERROR(wh->BucketName(default_warehouse).status());
  iceberg::rest::Warehouses resolver;
  resolver.prefix_for = [wh](const std::string& w) -> Result<std::string> {
    ASSIGN_OR_RETURN(std::string name, wh->BucketName(w));
    RETURN_IF_ERROR(wh->CatalogFor(name).status());  // the bucket must exist
    return name;
  };
  resolver.catalog = [wh,
                      default_warehouse](const std::string& prefix) -> Result<iceberg::Catalog*> {
    return wh->CatalogFor(prefix.empty() ? default_warehouse : prefix);
  };
  resolver.root_location = [wh,
                            default_warehouse](const std::string& prefix) -> Result<std::string> {
    ASSIGN_OR_RETURN(const iceberg::FileIO* io,
                     wh->Io(prefix.empty() ? default_warehouse : prefix));
    std::string root = io->Location("");
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    return root;
  };
  iceberg::rest::RestServerOptions ro;
  ro.base_path = "/iceberg";
  impl->rest = std::make_unique<iceberg::rest::RestCatalogServer>(ro, std::move(resolver));
  iceberg::rest::RestCatalogServer* rest = impl->rest.get();
  router->AddPath(
      {"/iceberg/",
       [rest, auth, router](std::shared_ptr<http::Request> req, http::Responder respond) {
         // Counted and timed like the JSON calls (service "iceberg").
         respond = [router, start = MonotonicNanos(), op = RestOperation(req->method, req->path),
                    inner = std::move(respond)](http::Response r) {
           std::string message;
           std::string code = RestErrorType(r, &message);
           router->Observe({"iceberg", op, code, r.status, message, MonotonicNanos() - start});
           inner(std::move(r));
         };
         if (auto denied = auth->CheckCatalog(*req)) {
           http::Response r;
           r.status = denied->status;
           r.SetHeader("Content-Type", "application/json");
           if (req->method != "HEAD") {
             r.body = iceberg::rest::ErrorBody({denied->status, denied->type, denied->message});
           }
           return respond(std::move(r));
         }
         respond(rest->Handle(*req));
       }});

  registry::RegistryOptions rego;
  rego.region = config.region;
  rego.account = config.account;
  ASSIGN_OR_RETURN(impl->registry,
                   registry::SchemaRegistry::Open(db, SystemClock::Default(), rego));
  impl->glue = std::make_unique<registry::glue::GlueApi>(
      impl->registry.get(), registry::glue::GlueOptions{config.region, config.account});
  registry::glue::GlueApi* glue = impl->glue.get();
  router->AddService(
      {"AWSGlue.", "glue", aws::ErrorFlavor::kGlue,
       [glue](std::string_view op) { return glue->Knows(op); },
       [glue](std::string_view op, std::shared_ptr<http::Request> req, http::Responder respond) {
         glue->Handle(op, std::move(req), std::move(respond));
       }});
  return std::unique_ptr<CatalogServices>(new CatalogServices(std::move(impl)));
}

}  // namespace icestream::server
