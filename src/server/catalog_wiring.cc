// Wiring of the Iceberg REST catalog and the Glue schema registry.
#include "server/catalog_wiring.h"

#include "common/clock.h"
#include "common/fs.h"
#include "iceberg/rest/rest_json.h"
#include "iceberg/rest/rest_server.h"
#include "iceberg/warehouses.h"
#include "objectstore/local_store.h"
#include "registry/glue/api.h"
#include "registry/registry.h"

namespace icestream::server {

struct CatalogServices::Impl {
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

Result<std::unique_ptr<CatalogServices>> CatalogServices::Start(
    const Config& config, Database* db, Router* router, const SurfaceAuth* auth,
    std::shared_ptr<objectstore::ObjectStore> s3_buckets,
    std::function<Result<std::shared_ptr<iceberg::CatalogStore>>(const std::string&)>
        catalog_rows) {
  auto impl = std::make_unique<Impl>();
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
      {"/iceberg/", [rest, auth](std::shared_ptr<http::Request> req, http::Responder respond) {
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
