// CatalogServices: the Iceberg REST catalog (/iceberg/v1/…, one warehouse per table
// bucket under DATA_DIR/table-buckets) and the Glue schema registry (AWSGlue.*), wired
// into the server's router. Kept apart from server.cc so each front end's wiring stays
// in its own file.
//
// Lifetime: create after the router and the metadata database, before serving;
// destroy after the HTTP server stopped. Thread-safe once started.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/sqlite.h"
#include "common/status.h"
#include "objectstore/object_store.h"
#include "server/config.h"
#include "server/router.h"
#include "server/surface_auth.h"

namespace icestream::iceberg {
class Warehouses;
class CatalogStore;
}
namespace icestream::registry {
class SchemaRegistry;
}

namespace icestream::server {

class CatalogServices {
 public:
  // `s3_buckets`: the S3 store when --s3-endpoint is configured (a table bucket is then
  // the S3 bucket of the same name); null in the embedded mode, where table buckets are
  // folders DATA_DIR/table-buckets/<name>/.
  // `auth` decides who may call the REST catalog; it must outlive this object.
  // `catalog_rows`: where the catalog's rows live (a scale-out pool's PostgreSQL); null:
  // meta.db. The schema registry stays in meta.db either way.
  static Result<std::unique_ptr<CatalogServices>> Start(
      const Config& config, Database* db, Router* router, const SurfaceAuth* auth,
      std::shared_ptr<objectstore::ObjectStore> s3_buckets,
      std::function<Result<std::shared_ptr<iceberg::CatalogStore>>(const std::string&)>
          catalog_rows = nullptr);
  ~CatalogServices();

  // The warehouses (one per table bucket) and the schema registry, for the streaming-table
  // destination of channels. Valid while this object lives.
  iceberg::Warehouses* warehouses() const;
  registry::SchemaRegistry* registry() const;

  struct Impl;

 private:
  explicit CatalogServices(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace icestream::server
