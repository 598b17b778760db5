// One conformance suite for every Catalog implementation (Arrow's GenericFileSystemTest is
// the model): the same namespace, table, commit, staged-create, register, transaction,
// concurrency and fence cases run against the SQLite metastore catalog, the REST client
// talking to the REST server, and the PostgreSQL (JDBC-schema) catalog. Test-only: each
// test binary compiles catalog_conformance.cc and instantiates the suite with its
// implementations:
//
//   INSTANTIATE_TEST_SUITE_P(Sqlite, CatalogConformance,
//                            ::testing::Values(CatalogImpl{"sqlite", MakeSqliteHarness}),
//                            CatalogImplName);
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "iceberg/catalog.h"
#include "iceberg/catalog_store.h"
#include "iceberg/file_io.h"

namespace icestream::iceberg::testing {

// One implementation under test, over its own empty warehouse.
class CatalogHarness {
 public:
  virtual ~CatalogHarness() = default;
  virtual Catalog* catalog() = 0;
  // A second handle on the same catalog, as another process would have (its own caches
  // and connections); commits through both must never lose one another's changes.
  virtual Catalog* second() = 0;
  virtual const FileIO* io() = 0;
  // A fence for CommitTableFenced that holds (or refuses, with kFailedPrecondition);
  // nullptr when the catalog cannot check a fence in its commit (then the suite checks
  // that a fenced commit is refused and changes nothing).
  virtual std::unique_ptr<CommitFence> Fence(bool holds) = 0;
};

struct CatalogImpl {
  std::string name;
  // Makes a harness over an empty folder `root` (created, removed by the suite).
  std::function<std::unique_ptr<CatalogHarness>(const std::string& root)> make;
};

inline std::string CatalogImplName(const ::testing::TestParamInfo<CatalogImpl>& info) {
  return info.param.name;
}

// A fence that holds or not and touches nothing else (for stores whose transactions a
// test cannot look into).
class FixedFence final : public CommitFence {
 public:
  explicit FixedFence(bool holds) : holds_(holds) {}
  Status Check(CatalogStore::Tx&) const override {
    return holds_ ? Status::OK() : FailedPrecondition("fenced: the lease moved to another owner");
  }

 private:
  bool holds_;
};

class CatalogConformance : public ::testing::TestWithParam<CatalogImpl> {
 protected:
  void SetUp() override;
  void TearDown() override;
  Catalog* catalog() { return harness_->catalog(); }
  const FileIO* io() { return harness_->io(); }

  std::string root_;
  std::unique_ptr<CatalogHarness> harness_;
};

}  // namespace icestream::iceberg::testing
