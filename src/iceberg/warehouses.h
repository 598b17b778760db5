// Warehouses: one Iceberg warehouse per table bucket (kds-delivery-spec's
// arn:aws:s3tables:<region>:<account>:bucket/<name>), each a FileIO over the bucket of
// the same name in the table-bucket ObjectStore (DATA_DIR/table-buckets/<name>/ in the
// embedded mode) and a catalog keyed by the bucket name: the Iceberg metastore rules over a
// row store from a factory (SQLite in meta.db by default; PostgreSQL's JDBC-catalog tables
// in a scale-out pool). Created on first use.
//
// Thread-safe. The returned pointers live as long as the Warehouses object.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/sqlite.h"
#include "iceberg/file_io.h"
#include "iceberg/sqlite_catalog.h"
#include "objectstore/object_store.h"

namespace icestream::iceberg {

class Warehouses {
 public:
  // A warehouse's row store, by bucket name.
  using StoreFactory = std::function<Result<std::shared_ptr<CatalogStore>>(const std::string&)>;

  // `db`, `store` and `clock` must outlive this object. Rows in `db` (SqliteCatalogStore).
  Warehouses(Database* db, objectstore::ObjectStore* store, const Clock* clock, std::string region,
             std::string account);
  // Rows where `stores` keeps them.
  Warehouses(StoreFactory stores, objectstore::ObjectStore* store, const Clock* clock,
             std::string region, std::string account);

  // The table bucket name of a name or table-bucket ARN. kInvalidArgument for a
  // malformed name (S3 Tables rules: 3-63 of [a-z0-9-], starting and ending with a
  // letter or digit) or an ARN of another region or account.
  Result<std::string> BucketName(std::string_view name_or_arn) const;
  std::string BucketArn(const std::string& bucket) const;

  // The warehouse's catalog. kNotFound when the bucket does not exist (S3; local folders
  // are created).
  Result<Catalog*> CatalogFor(const std::string& bucket);
  Result<const FileIO*> Io(const std::string& bucket);

 private:
  struct Warehouse {
    std::unique_ptr<FileIO> io;
    std::unique_ptr<MetastoreCatalog> catalog;
  };
  Result<Warehouse*> Get(const std::string& bucket);

  StoreFactory stores_;
  objectstore::ObjectStore* store_;
  const Clock* clock_;
  std::string region_;
  std::string account_;
  std::mutex mu_;
  std::map<std::string, Warehouse> warehouses_;
};

}  // namespace icestream::iceberg
