// Test fixture pieces for the iceberg tests: a temp folder with a local object store,
// a SQLite database and a catalog over one warehouse bucket.
#pragma once

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/sqlite.h"
#include "iceberg/file_io.h"
#include "iceberg/sqlite_catalog.h"
#include "objectstore/local_store.h"

namespace icestream::iceberg::testing {

class CatalogEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("iceberg-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
    store_ = std::make_unique<objectstore::LocalObjectStore>((root_ / "buckets").string());
    io_ = std::make_unique<FileIO>(store_.get(), "wh");
    auto db = Database::Open((root_ / "meta.db").string());
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    auto cat = SqliteCatalog::Open(db_.get(), io_.get(), SystemClock::Default());
    ASSERT_TRUE(cat.ok()) << cat.status().ToString();
    catalog_ = std::move(cat).value();
  }
  void TearDown() override {
    catalog_.reset();
    db_.reset();
    std::filesystem::remove_all(root_);
  }

  std::filesystem::path root_;
  std::unique_ptr<objectstore::LocalObjectStore> store_;
  std::unique_ptr<FileIO> io_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<MetastoreCatalog> catalog_;
};

}  // namespace icestream::iceberg::testing
