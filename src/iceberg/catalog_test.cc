// SqliteCatalog: namespaces, table lifecycle, commits with requirements, staged
// creation, register, rename, purge, multi-table transactions.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/testing/status_assertions.h"
#include "iceberg/table_metadata_json.h"
#include "iceberg/table_update_json.h"
#include "iceberg/test_env.h"

namespace icestream::iceberg {
namespace {

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

TEST_F(CatalogTest, Namespaces) {
  ASSERT_OK(catalog_->CreateNamespace({"a"}, {{"k", "v"}}));
  ASSERT_OK(catalog_->CreateNamespace({"a", "b"}, {}));
  ASSERT_OK(catalog_->CreateNamespace({"x", "y", "z"}, {}));  // parents need not exist
  EXPECT_STATUS(kAlreadyExists, catalog_->CreateNamespace({"a"}, {}));
  EXPECT_STATUS(kInvalidArgument, catalog_->CreateNamespace({"bad/name"}, {}));
  EXPECT_EQ(*catalog_->ListNamespaces({}), (std::vector<Namespace>{{"a"}, {"x"}}));
  EXPECT_EQ(*catalog_->ListNamespaces({"a"}), (std::vector<Namespace>{{"a", "b"}}));
  EXPECT_EQ(*catalog_->ListNamespaces({"x"}), (std::vector<Namespace>{{"x", "y"}}));
  EXPECT_TRUE(IsNoSuchNamespace(catalog_->ListNamespaces({"nope"}).status()));
  EXPECT_EQ(catalog_->LoadNamespaceProperties({"a"})->at("k"), "v");
  EXPECT_TRUE(*catalog_->NamespaceExists({"a", "b"}));
  EXPECT_FALSE(*catalog_->NamespaceExists({"x", "y"}));
  ASSERT_OK_AND_ASSIGN(auto change,
                       catalog_->UpdateNamespaceProperties({"a"}, {"k", "missing"}, {{"n", "1"}}));
  EXPECT_EQ(change.removed, std::vector<std::string>{"k"});
  EXPECT_EQ(change.missing, std::vector<std::string>{"missing"});
  EXPECT_EQ(change.updated, std::vector<std::string>{"n"});
  EXPECT_EQ(*catalog_->LoadNamespaceProperties({"a"}), (Properties{{"n", "1"}}));
  EXPECT_STATUS(kInvalidArgument, catalog_->UpdateNamespaceProperties({"a"}, {"n"}, {{"n", "2"}}));
  EXPECT_STATUS(kFailedPrecondition, catalog_->DropNamespace({"a"}));  // has a.b
  ASSERT_OK(catalog_->DropNamespace({"a", "b"}));
  ASSERT_OK(catalog_->DropNamespace({"a"}));
  EXPECT_TRUE(IsNoSuchNamespace(catalog_->DropNamespace({"a"})));
}

TEST_F(CatalogTest, CreateLoadCommitDrop) {
  ASSERT_OK(catalog_->CreateNamespace({"db"}, {}));
  EXPECT_TRUE(IsNoSuchNamespace(catalog_->CreateTable({"nope"}, Request("t")).status()));
  ASSERT_OK_AND_ASSIGN(auto t, catalog_->CreateTable({"db"}, Request("t")));
  EXPECT_STATUS(kAlreadyExists, catalog_->CreateTable({"db"}, Request("t")));
  // Fresh ids: 1, 2, 3 for the top-level fields, 4 for the list element.
  const Schema& s = *t.metadata.CurrentSchema();
  EXPECT_EQ(s.fields[0].id, 1);
  EXPECT_EQ(s.fields[2].id, 3);
  EXPECT_EQ(s.fields[2].type.element().id, 4);
  EXPECT_EQ(t.metadata.last_column_id, 4);
  EXPECT_EQ(t.metadata.DefaultSpec()->fields[0].source_id, 2);
  EXPECT_EQ(t.metadata.DefaultSpec()->fields[0].field_id, 1000);
  EXPECT_EQ(t.metadata.last_partition_id, 1000);
  EXPECT_EQ(t.metadata.properties.at("owner"), "test");
  EXPECT_NE(t.metadata_location.find("/metadata/00000-"), std::string::npos);
  EXPECT_EQ(t.metadata.location.rfind(io_->root() + "/db/t-", 0), 0u);
  EXPECT_EQ(*catalog_->ListTables({"db"}), (std::vector<TableIdentifier>{{{"db"}, "t"}}));

  TableIdentifier id{{"db"}, "t"};
  // A commit whose requirement does not hold: 409-style conflict, nothing written.
  auto stale = catalog_->CommitTable(id, {requirement::AssertRefSnapshotId{"main", 42}},
                                     {update::SetProperties{{{"a", "b"}}}});
  EXPECT_STATUS(kConflict, stale);
  EXPECT_STATUS(kConflict, catalog_
                               ->CommitTable(id, {requirement::AssertTableUuid{"other"}},
                                             {update::SetProperties{{{"a", "b"}}}})
                               .status());
  ASSERT_OK_AND_ASSIGN(
      auto ok, catalog_->CommitTable(id,
                                     {requirement::AssertTableUuid{t.metadata.table_uuid},
                                      requirement::AssertRefSnapshotId{"main", std::nullopt}},
                                     {update::SetProperties{{{"a", "b"}}}}));
  EXPECT_NE(ok.metadata_location.find("/metadata/00001-"), std::string::npos);
  EXPECT_EQ(ok.metadata.properties.at("a"), "b");
  ASSERT_EQ(ok.metadata.metadata_log.size(), 1u);
  EXPECT_EQ(ok.metadata.metadata_log[0].metadata_file, t.metadata_location);
  // The file on disk is what LoadTable returns.
  ASSERT_OK_AND_ASSIGN(auto on_disk, TableMetadataFromJson(*io_->Read(ok.metadata_location)));
  EXPECT_EQ(on_disk, catalog_->LoadTable(id)->metadata);
  // Invalid updates are refused without a new file.
  EXPECT_STATUS(kInvalidArgument, catalog_->CommitTable(id, {}, {update::SetCurrentSchema{9}}));
  EXPECT_EQ(catalog_->LoadTable(id)->metadata_location, ok.metadata_location);
  EXPECT_TRUE(IsNoSuchTable(catalog_->CommitTable({{"db"}, "zz"}, {}, {update::SetProperties{{{"a", "b"}}}}).status()));

  // Rename keeps the files; drop with purge removes them.
  ASSERT_OK(catalog_->CreateNamespace({"db2"}, {}));
  ASSERT_OK(catalog_->RenameTable(id, {{"db2"}, "t2"}));
  EXPECT_FALSE(*catalog_->TableExists(id));
  EXPECT_TRUE(IsNoSuchTable(catalog_->RenameTable(id, {{"db2"}, "t3"})));
  TableIdentifier id2{{"db2"}, "t2"};
  EXPECT_EQ(catalog_->LoadTable(id2)->metadata.table_uuid, t.metadata.table_uuid);
  EXPECT_STATUS(kFailedPrecondition, catalog_->DropNamespace({"db2"}));
  std::string current = catalog_->LoadTable(id2)->metadata_location;
  ASSERT_OK(catalog_->DropTable(id2, /*purge=*/true));
  EXPECT_FALSE(*catalog_->TableExists(id2));
  EXPECT_STATUS(kNotFound, io_->Read(current));
  EXPECT_TRUE(IsNoSuchTable(catalog_->DropTable(id2, false)));
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
  EXPECT_LE(catalog_->cached_metadata_count(), SqliteCatalogOptions().metadata_cache_entries);
  EXPECT_EQ(catalog_->LoadTable(id)->metadata.properties.at("n"), "149");
}

TEST_F(CatalogTest, StagedCreateAndRegister) {
  ASSERT_OK(catalog_->CreateNamespace({"db"}, {}));
  CreateTableRequest r = Request("staged");
  r.stage_create = true;
  ASSERT_OK_AND_ASSIGN(auto staged, catalog_->CreateTable({"db"}, r));
  EXPECT_TRUE(staged.metadata_location.empty());
  EXPECT_FALSE(*catalog_->TableExists({{"db"}, "staged"}));
  std::vector<TableRequirement> create = {requirement::AssertCreate{}};
  ASSERT_OK_AND_ASSIGN(auto created, catalog_->CommitTable({{"db"}, "staged"}, create,
                                                           CreationUpdates(staged.metadata)));
  EXPECT_EQ(created.metadata.table_uuid, staged.metadata.table_uuid);
  EXPECT_EQ(created.metadata.schemas, staged.metadata.schemas);
  EXPECT_EQ(created.metadata.partition_specs, staged.metadata.partition_specs);
  // A second create loses: assert-create fails.
  EXPECT_STATUS(kConflict, catalog_->CommitTable({{"db"}, "staged"}, create,
                                                 CreationUpdates(staged.metadata)));

  // Register the table's metadata under a second name.
  ASSERT_OK_AND_ASSIGN(auto reg,
                       catalog_->RegisterTable({{"db"}, "copy"}, created.metadata_location, false));
  EXPECT_EQ(reg.metadata.table_uuid, created.metadata.table_uuid);
  EXPECT_STATUS(kAlreadyExists,
                catalog_->RegisterTable({{"db"}, "copy"}, created.metadata_location, false));
  EXPECT_OK(catalog_->RegisterTable({{"db"}, "copy"}, created.metadata_location, true));
  EXPECT_STATUS(kInvalidArgument,
                catalog_->RegisterTable({{"db"}, "x"}, io_->Location("nope.metadata.json"), false));
  EXPECT_STATUS(kInvalidArgument,
                catalog_->RegisterTable({{"db"}, "x"}, "s3://elsewhere/m.json", false));
}

TEST_F(CatalogTest, TransactionsAreAllOrNothing) {
  ASSERT_OK(catalog_->CreateNamespace({"db"}, {}));
  auto a = catalog_->CreateTable({"db"}, Request("a"));
  auto b = catalog_->CreateTable({"db"}, Request("b"));
  ASSERT_OK(a);
  ASSERT_OK(b);
  std::vector<TableCommit> tx = {
      {{{"db"}, "a"}, {requirement::AssertTableUuid{a->metadata.table_uuid}}, {update::SetProperties{{{"x", "1"}}}}},
      {{{"db"}, "b"}, {requirement::AssertTableUuid{"wrong"}}, {update::SetProperties{{{"x", "1"}}}}}};
  EXPECT_STATUS(kConflict, catalog_->CommitTransaction(tx));
  EXPECT_EQ(catalog_->LoadTable({{"db"}, "a"})->metadata.properties.count("x"), 0u);
  tx[1].requirements = {requirement::AssertTableUuid{b->metadata.table_uuid}};
  ASSERT_OK(catalog_->CommitTransaction(tx));
  EXPECT_EQ(catalog_->LoadTable({{"db"}, "a"})->metadata.properties.at("x"), "1");
  EXPECT_EQ(catalog_->LoadTable({{"db"}, "b"})->metadata.properties.at("x"), "1");
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
  auto r = TableRequirementFromJsonValue(json::parse(R"({"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null})"));
  ASSERT_OK(r);
  EXPECT_FALSE(std::get<requirement::AssertRefSnapshotId>(*r).snapshot_id.has_value());
  EXPECT_EQ(TableRequirementToJsonValue(*r)["snapshot-id"], nullptr);
}

}  // namespace
}  // namespace icestream::iceberg
