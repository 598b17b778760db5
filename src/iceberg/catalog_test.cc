// The SQLite metastore catalog: the catalog conformance suite (catalog_conformance.h) on
// SqliteCatalogStore, and what only the metastore catalog has (its metadata cache).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/testing/status_assertions.h"
#include "iceberg/catalog_conformance.h"
#include "iceberg/sqlite_catalog.h"
#include "iceberg/table_metadata_json.h"
#include "iceberg/table_update_json.h"
#include "iceberg/test_env.h"

namespace icestream::iceberg {
namespace {

using testing::CatalogConformance;
using testing::CatalogEnv;

Schema SimpleSchema() {
  Schema s;
  s.fields = {{7, "id", true, Primitive(TypeId::kLong), ""},
              {9, "ts", false, Primitive(TypeId::kTimestampTz), ""},
              {8, "tags", false, List(12, true, Primitive(TypeId::kString)), ""}};
  return s;
}

CreateTableRequest Request(const std::string& name) {
  CreateTableRequest r;
  r.name = name;
  r.schema = SimpleSchema();
  PartitionSpec spec;
  spec.fields = {{9, 0, "ts_day", Transform::Day()}};
  r.spec = spec;
  r.properties = {{"owner", "test"}};
  return r;
}

class CatalogTest : public CatalogEnv {};

// The SQLite store: two catalogs on one meta.db play two processes (own caches, own
// per-table locks), so only the store's compare-and-swap keeps them apart.
class SqliteHarness final : public testing::CatalogHarness {
 public:
  explicit SqliteHarness(const std::string& root)
      : store_((std::filesystem::path(root) / "buckets").string()), io_(&store_, "wh") {
    db_ = std::move(Database::Open(root + "/meta.db")).value();
    SqliteCatalogOptions o;
    o.warehouse = "wh";
    first_ = std::move(SqliteCatalog::Open(db_.get(), &io_, SystemClock::Default(), o)).value();
    second_ = std::move(SqliteCatalog::Open(db_.get(), &io_, SystemClock::Default(), o)).value();
  }
  Catalog* catalog() override { return first_.get(); }
  Catalog* second() override { return second_.get(); }
  const FileIO* io() override { return &io_; }
  std::unique_ptr<CommitFence> Fence(bool holds) override {
    return std::make_unique<testing::FixedFence>(holds);
  }

 private:
  objectstore::LocalObjectStore store_;
  FileIO io_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<MetastoreCatalog> first_, second_;
};

INSTANTIATE_TEST_SUITE_P(
    Sqlite, CatalogConformance,
    ::testing::Values(testing::CatalogImpl{
        "sqlite",
        [](const std::string& root) -> std::unique_ptr<testing::CatalogHarness> {
          return std::make_unique<SqliteHarness>(root);
        }}),
    testing::CatalogImplName);

// The REST error types come from the status's subcode, not from its text: context added
// on the way up keeps the kind, and a message that merely reads the same is not one.
TEST(CatalogErrorTest, KindsAreSubcodesNotText) {
  Status table = NoSuchTableError({{"db"}, "t"});
  EXPECT_EQ(table.message(), "Table does not exist: db.t");
  EXPECT_TRUE(IsNoSuchTable(table.WithContext("loading")));
  EXPECT_FALSE(IsNoSuchNamespace(table));
  EXPECT_FALSE(IsNoSuchTable(NotFound("Table does not exist: db.t")));
  EXPECT_TRUE(IsNoSuchNamespace(NoSuchNamespaceError({"a", "b"})));
  Status not_empty = NamespaceNotEmptyError({"db"});
  EXPECT_STATUS(kFailedPrecondition, not_empty);
  EXPECT_TRUE(IsNamespaceNotEmpty(not_empty));
  EXPECT_FALSE(IsNamespaceNotEmpty(FailedPrecondition("Namespace is not empty: db")));
}

TEST_F(CatalogTest, MetadataCacheStaysBoundedUnderManyCommits) {
  // A single writer reads back only what it wrote (never a cache miss); the cache must
  // still stay within its bound.
  ASSERT_OK(catalog_->CreateNamespace({"db"}, {}));
  ASSERT_OK(catalog_->CreateTable({"db"}, Request("t")));
  TableIdentifier id{{"db"}, "t"};
  for (int i = 0; i < 150; ++i) {
    ASSERT_OK(catalog_->CommitTable(id, {}, {update::SetProperties{{{"n", std::to_string(i)}}}}));
    ASSERT_OK(catalog_->LoadTable(id));
  }
  EXPECT_LE(catalog_->cached_metadata_count(), MetastoreCatalogOptions().metadata_cache_entries);
  EXPECT_EQ(catalog_->LoadTable(id)->metadata.properties.at("n"), "149");
}

TEST(TableUpdateJsonTest, RoundTripsAndRejectsUnknown) {
  using nlohmann::json;
  const char* updates[] = {
      R"({"action":"assign-uuid","uuid":"u"})",
      R"({"action":"upgrade-format-version","format-version":2})",
      R"({"action":"add-schema","schema":{"type":"struct","schema-id":1,"fields":[{"id":1,"name":"a","required":true,"type":"int"}]},"last-column-id":1})",
      R"({"action":"set-current-schema","schema-id":-1})",
      R"({"action":"add-spec","spec":{"spec-id":1,"fields":[{"name":"a","transform":"identity","source-id":1,"field-id":1000}]}})",
      R"({"action":"set-default-spec","spec-id":-1})",
      R"({"action":"add-sort-order","sort-order":{"order-id":1,"fields":[{"transform":"identity","source-id":1,"direction":"asc","null-order":"nulls-first"}]}})",
      R"({"action":"set-default-sort-order","sort-order-id":-1})",
      R"({"action":"add-snapshot","snapshot":{"snapshot-id":5,"timestamp-ms":1,"sequence-number":1,"manifest-list":"m","summary":{"operation":"append"}}})",
      R"({"action":"set-snapshot-ref","ref-name":"main","snapshot-id":5,"type":"branch"})",
      R"({"action":"remove-snapshots","snapshot-ids":[1,2]})",
      R"({"action":"remove-snapshot-ref","ref-name":"t"})",
      R"({"action":"set-location","location":"s3://b/t"})",
      R"({"action":"set-properties","updates":{"a":"b"}})",
      R"({"action":"remove-properties","removals":["a"]})",
      R"({"action":"remove-statistics","snapshot-id":5})",
      R"({"action":"remove-partition-specs","spec-ids":[3]})",
      R"({"action":"remove-schemas","schema-ids":[3]})"};
  for (const char* text : updates) {
    auto u = TableUpdateFromJsonValue(json::parse(text));
    ASSERT_OK(u) << text << ": ";
    EXPECT_EQ(TableUpdateToJsonValue(*u), json::parse(text)) << text;
  }
  EXPECT_STATUS(kInvalidArgument,
                TableUpdateFromJsonValue(json::parse(R"({"action":"add-view-version"})")));
  EXPECT_STATUS(kInvalidArgument,
                TableUpdateFromJsonValue(json::parse(R"({"action":"set-properties"})")));
  EXPECT_STATUS(kInvalidArgument,
                TableRequirementFromJsonValue(json::parse(R"({"type":"assert-nothing"})")));
  auto r = TableRequirementFromJsonValue(
      json::parse(R"({"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null})"));
  ASSERT_OK(r);
  EXPECT_FALSE(std::get<requirement::AssertRefSnapshotId>(*r).snapshot_id.has_value());
  EXPECT_EQ(TableRequirementToJsonValue(*r)["snapshot-id"], nullptr);
}

}  // namespace
}  // namespace icestream::iceberg
