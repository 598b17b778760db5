// SqliteCatalog: namespaces, table lifecycle, commits with requirements, staged
// creation, register, rename, purge, multi-table transactions.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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
  ASSERT_TRUE(catalog_->CreateNamespace({"a"}, {{"k", "v"}}).ok());
  ASSERT_TRUE(catalog_->CreateNamespace({"a", "b"}, {}).ok());
  ASSERT_TRUE(catalog_->CreateNamespace({"x", "y", "z"}, {}).ok());  // parents need not exist
  EXPECT_EQ(catalog_->CreateNamespace({"a"}, {}).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(catalog_->CreateNamespace({"bad/name"}, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*catalog_->ListNamespaces({}), (std::vector<Namespace>{{"a"}, {"x"}}));
  EXPECT_EQ(*catalog_->ListNamespaces({"a"}), (std::vector<Namespace>{{"a", "b"}}));
  EXPECT_EQ(*catalog_->ListNamespaces({"x"}), (std::vector<Namespace>{{"x", "y"}}));
  EXPECT_TRUE(IsNoSuchNamespace(catalog_->ListNamespaces({"nope"}).status()));
  EXPECT_EQ(catalog_->LoadNamespaceProperties({"a"})->at("k"), "v");
  EXPECT_TRUE(*catalog_->NamespaceExists({"a", "b"}));
  EXPECT_FALSE(*catalog_->NamespaceExists({"x", "y"}));
  auto change = catalog_->UpdateNamespaceProperties({"a"}, {"k", "missing"}, {{"n", "1"}});
  ASSERT_TRUE(change.ok());
  EXPECT_EQ(change->removed, std::vector<std::string>{"k"});
  EXPECT_EQ(change->missing, std::vector<std::string>{"missing"});
  EXPECT_EQ(change->updated, std::vector<std::string>{"n"});
  EXPECT_EQ(*catalog_->LoadNamespaceProperties({"a"}), (Properties{{"n", "1"}}));
  EXPECT_EQ(catalog_->UpdateNamespaceProperties({"a"}, {"n"}, {{"n", "2"}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog_->DropNamespace({"a"}).code(), StatusCode::kFailedPrecondition);  // has a.b
  ASSERT_TRUE(catalog_->DropNamespace({"a", "b"}).ok());
  ASSERT_TRUE(catalog_->DropNamespace({"a"}).ok());
  EXPECT_TRUE(IsNoSuchNamespace(catalog_->DropNamespace({"a"})));
}

TEST_F(CatalogTest, CreateLoadCommitDrop) {
  ASSERT_TRUE(catalog_->CreateNamespace({"db"}, {}).ok());
  EXPECT_TRUE(IsNoSuchNamespace(catalog_->CreateTable({"nope"}, Request("t")).status()));
  auto t = catalog_->CreateTable({"db"}, Request("t"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(catalog_->CreateTable({"db"}, Request("t")).status().code(), StatusCode::kAlreadyExists);
  // Fresh ids: 1, 2, 3 for the top-level fields, 4 for the list element.
  const Schema& s = *t->metadata.CurrentSchema();
  EXPECT_EQ(s.fields[0].id, 1);
  EXPECT_EQ(s.fields[2].id, 3);
  EXPECT_EQ(s.fields[2].type.element().id, 4);
  EXPECT_EQ(t->metadata.last_column_id, 4);
  EXPECT_EQ(t->metadata.DefaultSpec()->fields[0].source_id, 2);
  EXPECT_EQ(t->metadata.DefaultSpec()->fields[0].field_id, 1000);
  EXPECT_EQ(t->metadata.last_partition_id, 1000);
  EXPECT_EQ(t->metadata.properties.at("owner"), "test");
  EXPECT_NE(t->metadata_location.find("/metadata/00000-"), std::string::npos);
  EXPECT_EQ(t->metadata.location.rfind(io_->root() + "/db/t-", 0), 0u);
  EXPECT_EQ(*catalog_->ListTables({"db"}), (std::vector<TableIdentifier>{{{"db"}, "t"}}));

  TableIdentifier id{{"db"}, "t"};
  // A commit whose requirement does not hold: 409-style conflict, nothing written.
  auto stale = catalog_->CommitTable(id, {requirement::AssertRefSnapshotId{"main", 42}},
                                     {update::SetProperties{{{"a", "b"}}}});
  EXPECT_EQ(stale.status().code(), StatusCode::kConflict);
  EXPECT_EQ(catalog_->CommitTable(id, {requirement::AssertTableUuid{"other"}}, {update::SetProperties{{{"a", "b"}}}})
                .status()
                .code(),
            StatusCode::kConflict);
  auto ok = catalog_->CommitTable(id, {requirement::AssertTableUuid{t->metadata.table_uuid},
                                       requirement::AssertRefSnapshotId{"main", std::nullopt}},
                                  {update::SetProperties{{{"a", "b"}}}});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_NE(ok->metadata_location.find("/metadata/00001-"), std::string::npos);
  EXPECT_EQ(ok->metadata.properties.at("a"), "b");
  ASSERT_EQ(ok->metadata.metadata_log.size(), 1u);
  EXPECT_EQ(ok->metadata.metadata_log[0].metadata_file, t->metadata_location);
  // The file on disk is what LoadTable returns.
  auto on_disk = TableMetadataFromJson(*io_->Read(ok->metadata_location));
  ASSERT_TRUE(on_disk.ok());
  EXPECT_EQ(*on_disk, catalog_->LoadTable(id)->metadata);
  // Invalid updates are refused without a new file.
  EXPECT_EQ(catalog_->CommitTable(id, {}, {update::SetCurrentSchema{9}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog_->LoadTable(id)->metadata_location, ok->metadata_location);
  EXPECT_TRUE(IsNoSuchTable(catalog_->CommitTable({{"db"}, "zz"}, {}, {update::SetProperties{{{"a", "b"}}}}).status()));

  // Rename keeps the files; drop with purge removes them.
  ASSERT_TRUE(catalog_->CreateNamespace({"db2"}, {}).ok());
  ASSERT_TRUE(catalog_->RenameTable(id, {{"db2"}, "t2"}).ok());
  EXPECT_FALSE(*catalog_->TableExists(id));
  EXPECT_TRUE(IsNoSuchTable(catalog_->RenameTable(id, {{"db2"}, "t3"})));
  TableIdentifier id2{{"db2"}, "t2"};
  EXPECT_EQ(catalog_->LoadTable(id2)->metadata.table_uuid, t->metadata.table_uuid);
  EXPECT_EQ(catalog_->DropNamespace({"db2"}).code(), StatusCode::kFailedPrecondition);
  std::string current = catalog_->LoadTable(id2)->metadata_location;
  ASSERT_TRUE(catalog_->DropTable(id2, /*purge=*/true).ok());
  EXPECT_FALSE(*catalog_->TableExists(id2));
  EXPECT_EQ(io_->Read(current).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(IsNoSuchTable(catalog_->DropTable(id2, false)));
}

TEST_F(CatalogTest, MetadataCacheStaysBoundedUnderManyCommits) {
  // A single writer reads back only what it wrote (never a cache miss); the cache must
  // still stay within its bound.
  ASSERT_TRUE(catalog_->CreateNamespace({"db"}, {}).ok());
  ASSERT_TRUE(catalog_->CreateTable({"db"}, Request("t")).ok());
  TableIdentifier id{{"db"}, "t"};
  for (int i = 0; i < 150; ++i) {
    auto r = catalog_->CommitTable(id, {}, {update::SetProperties{{{"n", std::to_string(i)}}}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE(catalog_->LoadTable(id).ok());
  }
  EXPECT_LE(catalog_->cached_metadata_count(), SqliteCatalogOptions().metadata_cache_entries);
  EXPECT_EQ(catalog_->LoadTable(id)->metadata.properties.at("n"), "149");
}

TEST_F(CatalogTest, StagedCreateAndRegister) {
  ASSERT_TRUE(catalog_->CreateNamespace({"db"}, {}).ok());
  CreateTableRequest r = Request("staged");
  r.stage_create = true;
  auto staged = catalog_->CreateTable({"db"}, r);
  ASSERT_TRUE(staged.ok());
  EXPECT_TRUE(staged->metadata_location.empty());
  EXPECT_FALSE(*catalog_->TableExists({{"db"}, "staged"}));
  std::vector<TableRequirement> create = {requirement::AssertCreate{}};
  auto created = catalog_->CommitTable({{"db"}, "staged"}, create, CreationUpdates(staged->metadata));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->metadata.table_uuid, staged->metadata.table_uuid);
  EXPECT_EQ(created->metadata.schemas, staged->metadata.schemas);
  EXPECT_EQ(created->metadata.partition_specs, staged->metadata.partition_specs);
  // A second create loses: assert-create fails.
  EXPECT_EQ(catalog_->CommitTable({{"db"}, "staged"}, create, CreationUpdates(staged->metadata)).status().code(),
            StatusCode::kConflict);

  // Register the table's metadata under a second name.
  auto reg = catalog_->RegisterTable({{"db"}, "copy"}, created->metadata_location, false);
  ASSERT_TRUE(reg.ok()) << reg.status().ToString();
  EXPECT_EQ(reg->metadata.table_uuid, created->metadata.table_uuid);
  EXPECT_EQ(catalog_->RegisterTable({{"db"}, "copy"}, created->metadata_location, false).status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_TRUE(catalog_->RegisterTable({{"db"}, "copy"}, created->metadata_location, true).ok());
  EXPECT_EQ(catalog_->RegisterTable({{"db"}, "x"}, io_->Location("nope.metadata.json"), false).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog_->RegisterTable({{"db"}, "x"}, "s3://elsewhere/m.json", false).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(CatalogTest, TransactionsAreAllOrNothing) {
  ASSERT_TRUE(catalog_->CreateNamespace({"db"}, {}).ok());
  auto a = catalog_->CreateTable({"db"}, Request("a"));
  auto b = catalog_->CreateTable({"db"}, Request("b"));
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<TableCommit> tx = {
      {{{"db"}, "a"}, {requirement::AssertTableUuid{a->metadata.table_uuid}}, {update::SetProperties{{{"x", "1"}}}}},
      {{{"db"}, "b"}, {requirement::AssertTableUuid{"wrong"}}, {update::SetProperties{{{"x", "1"}}}}}};
  EXPECT_EQ(catalog_->CommitTransaction(tx).code(), StatusCode::kConflict);
  EXPECT_EQ(catalog_->LoadTable({{"db"}, "a"})->metadata.properties.count("x"), 0u);
  tx[1].requirements = {requirement::AssertTableUuid{b->metadata.table_uuid}};
  ASSERT_TRUE(catalog_->CommitTransaction(tx).ok());
  EXPECT_EQ(catalog_->LoadTable({{"db"}, "a"})->metadata.properties.at("x"), "1");
  EXPECT_EQ(catalog_->LoadTable({{"db"}, "b"})->metadata.properties.at("x"), "1");
}

TEST(TableUpdateJson, RoundTripsAndRejectsUnknown) {
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
    ASSERT_TRUE(u.ok()) << text << ": " << u.status().ToString();
    EXPECT_EQ(TableUpdateToJsonValue(*u), json::parse(text)) << text;
  }
  EXPECT_FALSE(TableUpdateFromJsonValue(json::parse(R"({"action":"add-view-version"})")).ok());
  EXPECT_FALSE(TableUpdateFromJsonValue(json::parse(R"({"action":"set-properties"})")).ok());
  EXPECT_FALSE(TableRequirementFromJsonValue(json::parse(R"({"type":"assert-nothing"})")).ok());
  auto r = TableRequirementFromJsonValue(json::parse(R"({"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null})"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(std::get<requirement::AssertRefSnapshotId>(*r).snapshot_id.has_value());
  EXPECT_EQ(TableRequirementToJsonValue(*r)["snapshot-id"], nullptr);
}

}  // namespace
}  // namespace icestream::iceberg
