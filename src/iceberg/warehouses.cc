// Table buckets as Iceberg warehouses.
#include "iceberg/warehouses.h"

#include "aws/arn.h"

namespace icestream::iceberg {

Warehouses::Warehouses(Database* db, objectstore::ObjectStore* store, const Clock* clock,
                       std::string region, std::string account)
    : Warehouses(
          [db](const std::string& bucket) -> Result<std::shared_ptr<CatalogStore>> {
            ASSIGN_OR_RETURN(auto s, SqliteCatalogStore::Open(db, bucket));
            return std::shared_ptr<CatalogStore>(std::move(s));
          },
          store, clock, std::move(region), std::move(account)) {}

Warehouses::Warehouses(StoreFactory stores, objectstore::ObjectStore* store, const Clock* clock,
                       std::string region, std::string account)
    : stores_(std::move(stores)),
      store_(store),
      clock_(clock),
      region_(std::move(region)),
      account_(std::move(account)) {}

Result<std::string> Warehouses::BucketName(std::string_view s) const {
  std::string name(s);
  if (s.starts_with("arn:")) {
    // arn:<partition>:s3tables:<region>:<account>:bucket/<name>, of this server's region and
    // account.
    auto arn = aws::ParseArn(s);
    if (!arn || !arn->Is("s3tables", "bucket")) {
      return InvalidArgument("not a table bucket ARN: " + std::string(s));
    }
    if (arn->region != region_ || arn->account != account_) {
      return InvalidArgument("table bucket ARN " + std::string(s) + " is not of region " + region_ +
                             " and account " + account_);
    }
    name = std::string(arn->ResourceId());
  }
  bool ok = name.size() >= 3 && name.size() <= 63;
  for (size_t i = 0; ok && i < name.size(); ++i) {
    char c = name[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    ok = alnum || (c == '-' && i > 0 && i + 1 < name.size());
  }
  if (!ok) {
    return InvalidArgument("invalid table bucket name '" + name +
                           "': 3-63 lower-case letters, digits and hyphens, starting and ending "
                           "with a letter or digit");
  }
  return name;
}

std::string Warehouses::BucketArn(const std::string& bucket) const {
  return aws::Arn{"aws", "s3tables", region_, account_, "bucket/" + bucket}.ToString();
}

Result<Warehouses::Warehouse*> Warehouses::Get(const std::string& bucket) {
  ASSIGN_OR_RETURN(std::string name, BucketName(bucket));
  std::lock_guard lock(mu_);
  auto it = warehouses_.find(name);
  if (it != warehouses_.end()) return &it->second;
  // Embedded: the folder appears now. S3: the bucket must exist already.
  if (Status st = store_->CheckBucket(name); !st.ok()) {
    if (st.code() == StatusCode::kNotFound)
      return NotFound("table bucket " + name + " does not exist");
    return st;
  }
  Warehouse w;
  w.io = std::make_unique<FileIO>(store_, name);
  ASSIGN_OR_RETURN(std::shared_ptr<CatalogStore> rows, stores_(name));
  w.catalog = std::make_unique<MetastoreCatalog>(std::move(rows), w.io.get(), clock_);
  return &warehouses_.emplace(name, std::move(w)).first->second;
}

Result<Catalog*> Warehouses::CatalogFor(const std::string& bucket) {
  ASSIGN_OR_RETURN(Warehouse * w, Get(bucket));
  return static_cast<Catalog*>(w->catalog.get());
}

Result<const FileIO*> Warehouses::Io(const std::string& bucket) {
  ASSIGN_OR_RETURN(Warehouse * w, Get(bucket));
  return static_cast<const FileIO*>(w->io.get());
}

}  // namespace icestream::iceberg
