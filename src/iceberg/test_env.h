// Test fixture pieces for the iceberg tests: a temp folder with a local object store,
// a SQLite database and a catalog over one warehouse bucket.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/sqlite.h"
#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"
#include "iceberg/file_io.h"
#include "iceberg/sqlite_catalog.h"
#include "objectstore/local_store.h"

namespace icestream::iceberg::testing {

class CatalogEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_unique<objectstore::LocalObjectStore>((root_ / "buckets").string());
    io_ = std::make_unique<FileIO>(store_.get(), "wh");
    ASSERT_OK_AND_ASSIGN(db_, Database::Open((root_ / "meta.db").string()));
    ASSERT_OK_AND_ASSIGN(catalog_,
                         SqliteCatalog::Open(db_.get(), io_.get(), SystemClock::Default()));
  }
  void TearDown() override {
    catalog_.reset();
    db_.reset();
  }

  ::icestream::testing::TempDir tmp_;  // first: outlives the store, database and catalog
  std::filesystem::path root_ = tmp_.path();
  std::unique_ptr<objectstore::LocalObjectStore> store_;
  std::unique_ptr<FileIO> io_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<MetastoreCatalog> catalog_;
};

}  // namespace icestream::iceberg::testing
