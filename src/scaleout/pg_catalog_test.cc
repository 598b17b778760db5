// The PostgreSQL catalog (JDBC-catalog schema) under the catalog conformance suite, on a
// real PostgreSQL 15 cluster (tests/lib/pg.py): two pools play two processes, and the
// fence is a statement inside the swap's own transaction.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "common/clock.h"
#include "common/testing/status_assertions.h"
#include "delivery/delivery_store.h"
#include "iceberg/catalog_conformance.h"
#include "iceberg/metastore_catalog.h"
#include "objectstore/local_store.h"
#include "scaleout/pg_catalog_store.h"

namespace icestream::scaleout {
namespace {

using iceberg::testing::CatalogConformance;

std::string Conninfo() {
  const char* c = std::getenv("ICESTREAM_PG");
  EXPECT_NE(c, nullptr) << "ICESTREAM_PG is not set: run this test through tests/lib/pg.py";
  return c ? c : "host=127.0.0.1 port=1";
}

std::unique_ptr<pg::PgPool> Pool() {
  pg::PgPoolOptions o;
  o.conninfo = Conninfo();
  auto p = pg::PgPool::Open(o);
  EXPECT_OK(p);
  return p.ok() ? std::move(*p) : nullptr;
}

// Holds when the fence row says so — read inside the swap's transaction, and a note
// written there (which must vanish when the swap is lost or refused).
class RowFence final : public iceberg::CommitFence {
 public:
  RowFence(std::string catalog, bool holds) : catalog_(std::move(catalog)), holds_(holds) {}
  Status Check(iceberg::CatalogStore::Tx& tx) const override {
    auto& pgtx = static_cast<PgCatalogStore::PgCatalogTx&>(tx).pg();
    ASSIGN_OR_RETURN(auto r, pgtx.Exec("SELECT 1 WHERE $1 = 'yes'", {holds_ ? "yes" : "no"}));
    if (r.rows() == 0) return delivery::Fenced("fenced: the lease moved to another owner");
    return pgtx.Exec("INSERT INTO fence_notes (catalog) VALUES ($1)", {catalog_}).status();
  }

 private:
  std::string catalog_;
  bool holds_;
};

class PgHarness final : public iceberg::testing::CatalogHarness {
 public:
  explicit PgHarness(const std::string& root)
      : store_((std::filesystem::path(root) / "buckets").string()), io_(&store_, "wh") {
    pool1_ = Pool();
    pool2_ = Pool();
    EXPECT_OK(PgCatalogStore::EnsureSchema(pool1_.get()));
    EXPECT_OK(pool1_->Exec("CREATE TABLE IF NOT EXISTS fence_notes (catalog TEXT)"));
    // Each test its own catalog name: the rows of other tests are invisible.
    catalog_ = std::filesystem::path(root).filename().string();
    first_ = std::make_unique<iceberg::MetastoreCatalog>(
        std::make_shared<PgCatalogStore>(pool1_.get(), catalog_), &io_, SystemClock::Default());
    second_ = std::make_unique<iceberg::MetastoreCatalog>(
        std::make_shared<PgCatalogStore>(pool2_.get(), catalog_), &io_, SystemClock::Default());
  }
  iceberg::Catalog* catalog() override { return first_.get(); }
  iceberg::Catalog* second() override { return second_.get(); }
  const iceberg::FileIO* io() override { return &io_; }
  std::unique_ptr<iceberg::CommitFence> Fence(bool holds) override {
    return std::make_unique<RowFence>(catalog_, holds);
  }

 private:
  objectstore::LocalObjectStore store_;
  iceberg::FileIO io_;
  std::unique_ptr<pg::PgPool> pool1_, pool2_;
  std::string catalog_;
  std::unique_ptr<iceberg::MetastoreCatalog> first_, second_;
};

INSTANTIATE_TEST_SUITE_P(
    Postgres, CatalogConformance,
    ::testing::Values(iceberg::testing::CatalogImpl{
        "postgres",
        [](const std::string& root) -> std::unique_ptr<iceberg::testing::CatalogHarness> {
          return std::make_unique<PgHarness>(root);
        }}),
    iceberg::testing::CatalogImplName);

// The rows are Java's: the V1 column exists, a table row is typed 'TABLE', and a
// replayed swap (JDBC's reconnect-and-rerun hazard) matches nothing.
TEST(PgCatalogSchemaTest, RowsAreTheJdbcCatalogsAndAReplayedSwapMatchesNothing) {
  auto pool = Pool();
  ASSERT_NE(pool, nullptr);
  ASSERT_OK(PgCatalogStore::EnsureSchema(pool.get()));
  ASSERT_OK(PgCatalogStore::EnsureSchema(pool.get()));  // idempotent
  PgCatalogStore store(pool.get(), "jdbc_rows");
  ASSERT_OK(store.RunInTransaction([](iceberg::CatalogStore::Tx& tx) -> Status {
    RETURN_IF_ERROR(tx.InsertNamespace({"a", "b"}, {}));
    return tx.InsertTable({{"a", "b"}, "t"}, "s3://wh/t/metadata/00000-x.metadata.json");
  }));
  ASSERT_OK_AND_ASSIGN(auto row, pool->Exec("SELECT table_namespace, iceberg_type, "
                                            "previous_metadata_location IS NULL FROM "
                                            "iceberg_tables WHERE catalog_name = 'jdbc_rows'"));
  ASSERT_EQ(row.rows(), 1u);
  EXPECT_EQ(row.text(0, 0), "a.b");
  EXPECT_EQ(row.text(0, 1), "TABLE");
  EXPECT_EQ(row.text(0, 2), "t");
  ASSERT_OK_AND_ASSIGN(auto ns, pool->Exec("SELECT property_key, property_value FROM "
                                           "iceberg_namespace_properties WHERE catalog_name = "
                                           "'jdbc_rows'"));
  ASSERT_EQ(ns.rows(), 1u);
  EXPECT_EQ(ns.text(0, 0), "exists");
  bool first = false, replay = true;
  ASSERT_OK(store.RunInTransaction([&](iceberg::CatalogStore::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(first, tx.SwapMetadataLocation({{"a", "b"}, "t"},
                                                    "s3://wh/t/metadata/00000-x.metadata.json",
                                                    "s3://wh/t/metadata/00001-y.metadata.json"));
    return Status::OK();
  }));
  ASSERT_OK(store.RunInTransaction([&](iceberg::CatalogStore::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(replay, tx.SwapMetadataLocation({{"a", "b"}, "t"},
                                                     "s3://wh/t/metadata/00000-x.metadata.json",
                                                     "s3://wh/t/metadata/00001-y.metadata.json"));
    return Status::OK();
  }));
  EXPECT_TRUE(first);
  EXPECT_FALSE(replay);
  // Levels joined with '.' cannot hold a '.'.
  EXPECT_STATUS(kInvalidArgument, JdbcNamespace({"a.b"}));
}

// A second iceberg_tables elsewhere in the database would make Java's V1 detection lie:
// refused with the reason.
TEST(PgCatalogSchemaTest, ADatabaseWithAnotherCatalogTableIsRefused) {
  auto pool = Pool();
  ASSERT_NE(pool, nullptr);
  ASSERT_OK(pool->Exec("CREATE SCHEMA IF NOT EXISTS other"));
  ASSERT_OK(pool->Exec("CREATE TABLE IF NOT EXISTS other.iceberg_tables (x INT)"));
  Status st = PgCatalogStore::EnsureSchema(pool.get());
  EXPECT_STATUS(kFailedPrecondition, st);
  EXPECT_NE(st.message().find("database of its own"), std::string::npos);
  ASSERT_OK(pool->Exec("DROP TABLE other.iceberg_tables"));
  EXPECT_OK(PgCatalogStore::EnsureSchema(pool.get()));
}

}  // namespace
}  // namespace icestream::scaleout
