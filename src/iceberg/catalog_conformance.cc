// The catalog conformance cases (catalog_conformance.h).
#include "iceberg/catalog_conformance.h"

#include <unistd.h>

#include <filesystem>
#include <set>
#include <thread>

#include "common/clock.h"
#include "common/testing/status_assertions.h"
#include "iceberg/table.h"
#include "iceberg/table_files.h"
#include "iceberg/table_metadata_json.h"

namespace icestream::iceberg::testing {

void CatalogConformance::SetUp() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "-" + info->name();
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  root_ = (std::filesystem::temp_directory_path() /
           ("catalog-conformance-" + std::to_string(::getpid()) + "-" + name))
              .string();
  std::filesystem::remove_all(root_);
  std::filesystem::create_directories(root_);
  harness_ = GetParam().make(root_);
  ASSERT_NE(harness_, nullptr);
}

void CatalogConformance::TearDown() {
  harness_.reset();
  std::filesystem::remove_all(root_);
}

namespace {

CreateTableRequest Request(const std::string& name) {
  CreateTableRequest r;
  r.name = name;
  r.schema.fields = {{7, "id", true, Primitive(TypeId::kLong), ""},
                     {9, "ts", false, Primitive(TypeId::kTimestampTz), ""},
                     {8, "tags", false, List(12, true, Primitive(TypeId::kString)), ""}};
  PartitionSpec spec;
  spec.fields = {{9, 0, "ts_day", Transform::Day()}};
  r.spec = spec;
  r.properties = {{"owner", "test"}};
  return r;
}

DataFile File(Table& t, const std::string& name) {
  DataFile f;
  f.partition = {Literal::Int(19000)};
  f.file_path = t.NewDataFileLocation(f.partition, name + ".parquet");
  f.record_count = 1;
  f.file_size_in_bytes = 1;
  return f;
}

TEST_P(CatalogConformance, Namespaces) {
  Catalog* c = catalog();
  ASSERT_OK(c->CreateNamespace({"a"}, {{"k", "v"}}));
  ASSERT_OK(c->CreateNamespace({"a", "b"}, {}));
  ASSERT_OK(c->CreateNamespace({"x", "y", "z"}, {}));  // parents need not exist
  EXPECT_STATUS(kAlreadyExists, c->CreateNamespace({"a"}, {}));
  EXPECT_STATUS(kInvalidArgument, c->CreateNamespace({"bad/name"}, {}));
  EXPECT_EQ(*c->ListNamespaces({}), (std::vector<Namespace>{{"a"}, {"x"}}));
  EXPECT_EQ(*c->ListNamespaces({"a"}), (std::vector<Namespace>{{"a", "b"}}));
  EXPECT_EQ(*c->ListNamespaces({"x"}), (std::vector<Namespace>{{"x", "y"}}));
  EXPECT_TRUE(IsNoSuchNamespace(c->ListNamespaces({"nope"}).status()));
  EXPECT_EQ(c->LoadNamespaceProperties({"a"})->at("k"), "v");
  EXPECT_TRUE(IsNoSuchNamespace(c->LoadNamespaceProperties({"nope"}).status()));
  EXPECT_TRUE(*c->NamespaceExists({"a", "b"}));
  EXPECT_FALSE(*c->NamespaceExists({"x", "y"}));
  ASSERT_OK_AND_ASSIGN(auto change,
                       c->UpdateNamespaceProperties({"a"}, {"k", "missing"}, {{"n", "1"}}));
  EXPECT_EQ(change.removed, std::vector<std::string>{"k"});
  EXPECT_EQ(change.missing, std::vector<std::string>{"missing"});
  EXPECT_EQ(change.updated, std::vector<std::string>{"n"});
  ASSERT_OK_AND_ASSIGN(auto props, c->LoadNamespaceProperties({"a"}));
  EXPECT_EQ(props.at("n"), "1");
  EXPECT_EQ(props.count("k"), 0u);
  EXPECT_STATUS(kInvalidArgument, c->UpdateNamespaceProperties({"a"}, {"n"}, {{"n", "2"}}));
  // Seen from a second handle (another process).
  EXPECT_TRUE(*harness_->second()->NamespaceExists({"a", "b"}));
  EXPECT_STATUS(kFailedPrecondition, c->DropNamespace({"a"}));  // has a.b
  ASSERT_OK(c->DropNamespace({"a", "b"}));
  ASSERT_OK(c->DropNamespace({"a"}));
  EXPECT_TRUE(IsNoSuchNamespace(c->DropNamespace({"a"})));
}

TEST_P(CatalogConformance, CreateLoadCommitRenameDrop) {
  Catalog* c = catalog();
  ASSERT_OK(c->CreateNamespace({"db"}, {}));
  EXPECT_TRUE(IsNoSuchNamespace(c->CreateTable({"nope"}, Request("t")).status()));
  ASSERT_OK_AND_ASSIGN(auto t, c->CreateTable({"db"}, Request("t")));
  EXPECT_STATUS(kAlreadyExists, c->CreateTable({"db"}, Request("t")));
  // Fresh ids: 1, 2, 3 for the top-level fields, 4 for the list element.
  const Schema& s = *t.metadata.CurrentSchema();
  EXPECT_EQ(s.fields[0].id, 1);
  EXPECT_EQ(s.fields[2].type.element().id, 4);
  EXPECT_EQ(t.metadata.last_column_id, 4);
  EXPECT_EQ(t.metadata.DefaultSpec()->fields[0].source_id, 2);
  EXPECT_EQ(t.metadata.DefaultSpec()->fields[0].field_id, 1000);
  EXPECT_EQ(t.metadata.properties.at("owner"), "test");
  EXPECT_NE(t.metadata_location.find("/metadata/00000-"), std::string::npos);
  EXPECT_EQ(*c->ListTables({"db"}), (std::vector<TableIdentifier>{{{"db"}, "t"}}));
  EXPECT_TRUE(IsNoSuchTable(c->LoadTable({{"db"}, "none"}).status()));
  EXPECT_TRUE(*c->TableExists({{"db"}, "t"}));
  EXPECT_FALSE(*c->TableExists({{"db"}, "none"}));

  TableIdentifier id{{"db"}, "t"};
  // A commit whose requirement does not hold: a conflict, nothing written.
  EXPECT_STATUS(kConflict, c->CommitTable(id, {requirement::AssertRefSnapshotId{"main", 42}},
                                          {update::SetProperties{{{"a", "b"}}}})
                               .status());
  EXPECT_STATUS(kConflict, c->CommitTable(id, {requirement::AssertTableUuid{"other"}},
                                          {update::SetProperties{{{"a", "b"}}}})
                               .status());
  ASSERT_OK_AND_ASSIGN(auto ok,
                       c->CommitTable(id,
                                      {requirement::AssertTableUuid{t.metadata.table_uuid},
                                       requirement::AssertRefSnapshotId{"main", std::nullopt}},
                                      {update::SetProperties{{{"a", "b"}}}}));
  EXPECT_NE(ok.metadata_location.find("/metadata/00001-"), std::string::npos);
  EXPECT_EQ(ok.metadata.properties.at("a"), "b");
  ASSERT_EQ(ok.metadata.metadata_log.size(), 1u);
  EXPECT_EQ(ok.metadata.metadata_log[0].metadata_file, t.metadata_location);
  // The file in the bucket is what LoadTable returns, from either handle.
  ASSERT_OK_AND_ASSIGN(auto on_disk, TableMetadataFromJson(*io()->Read(ok.metadata_location)));
  EXPECT_EQ(on_disk, c->LoadTable(id)->metadata);
  EXPECT_EQ(harness_->second()->LoadTable(id)->metadata_location, ok.metadata_location);
  // Invalid updates are refused without a new pointer.
  EXPECT_STATUS(kInvalidArgument, c->CommitTable(id, {}, {update::SetCurrentSchema{9}}));
  EXPECT_EQ(c->LoadTable(id)->metadata_location, ok.metadata_location);
  EXPECT_TRUE(IsNoSuchTable(
      c->CommitTable({{"db"}, "zz"}, {}, {update::SetProperties{{{"a", "b"}}}}).status()));

  // Rename keeps the files; drop with purge removes them.
  ASSERT_OK(c->CreateNamespace({"db2"}, {}));
  ASSERT_OK(c->RenameTable(id, {{"db2"}, "t2"}));
  EXPECT_FALSE(*c->TableExists(id));
  EXPECT_TRUE(IsNoSuchTable(c->RenameTable(id, {{"db2"}, "t3"})));
  TableIdentifier id2{{"db2"}, "t2"};
  EXPECT_EQ(c->LoadTable(id2)->metadata.table_uuid, t.metadata.table_uuid);
  EXPECT_STATUS(kFailedPrecondition, c->DropNamespace({"db2"}));
  std::string current = c->LoadTable(id2)->metadata_location;
  ASSERT_OK(c->DropTable(id2, /*purge=*/true));
  EXPECT_FALSE(*c->TableExists(id2));
  EXPECT_STATUS(kNotFound, io()->Read(current));
  EXPECT_TRUE(IsNoSuchTable(c->DropTable(id2, false)));
}

TEST_P(CatalogConformance, StagedCreateAndRegister) {
  Catalog* c = catalog();
  ASSERT_OK(c->CreateNamespace({"db"}, {}));
  CreateTableRequest r = Request("staged");
  r.stage_create = true;
  ASSERT_OK_AND_ASSIGN(auto staged, c->CreateTable({"db"}, r));
  EXPECT_TRUE(staged.metadata_location.empty());
  EXPECT_FALSE(*c->TableExists({{"db"}, "staged"}));
  std::vector<TableRequirement> create = {requirement::AssertCreate{}};
  ASSERT_OK_AND_ASSIGN(
      auto created, c->CommitTable({{"db"}, "staged"}, create, CreationUpdates(staged.metadata)));
  EXPECT_EQ(created.metadata.table_uuid, staged.metadata.table_uuid);
  EXPECT_EQ(created.metadata.schemas, staged.metadata.schemas);
  // A second create loses: assert-create fails.
  EXPECT_STATUS(kConflict,
                c->CommitTable({{"db"}, "staged"}, create, CreationUpdates(staged.metadata)));

  // Register the table's metadata under a second name.
  ASSERT_OK_AND_ASSIGN(auto reg,
                       c->RegisterTable({{"db"}, "copy"}, created.metadata_location, false));
  EXPECT_EQ(reg.metadata.table_uuid, created.metadata.table_uuid);
  EXPECT_STATUS(kAlreadyExists,
                c->RegisterTable({{"db"}, "copy"}, created.metadata_location, false));
  EXPECT_OK(c->RegisterTable({{"db"}, "copy"}, created.metadata_location, true));
  EXPECT_STATUS(kInvalidArgument,
                c->RegisterTable({{"db"}, "x"}, io()->Location("nope.metadata.json"), false));
}

TEST_P(CatalogConformance, TransactionsAreAllOrNothing) {
  Catalog* c = catalog();
  ASSERT_OK(c->CreateNamespace({"db"}, {}));
  auto a = c->CreateTable({"db"}, Request("a"));
  auto b = c->CreateTable({"db"}, Request("b"));
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<TableCommit> tx = {{{{"db"}, "a"},
                                  {requirement::AssertTableUuid{a->metadata.table_uuid}},
                                  {update::SetProperties{{{"x", "1"}}}}},
                                 {{{"db"}, "b"},
                                  {requirement::AssertTableUuid{"wrong"}},
                                  {update::SetProperties{{{"x", "1"}}}}}};
  EXPECT_STATUS(kConflict, c->CommitTransaction(tx));
  EXPECT_EQ(c->LoadTable({{"db"}, "a"})->metadata.properties.count("x"), 0u);
  tx[1].requirements = {requirement::AssertTableUuid{b->metadata.table_uuid}};
  ASSERT_OK(c->CommitTransaction(tx));
  EXPECT_EQ(c->LoadTable({{"db"}, "a"})->metadata.properties.at("x"), "1");
  EXPECT_EQ(c->LoadTable({{"db"}, "b"})->metadata.properties.at("x"), "1");
}

// Two writers (two handles, as two processes would be) append to one table at once:
// every append lands once; the compare-and-swap loses nobody's snapshot.
TEST_P(CatalogConformance, ConcurrentWritersLoseNoCommit) {
  ASSERT_OK(catalog()->CreateNamespace({"db"}, {}));
  ASSERT_OK(catalog()->CreateTable({"db"}, Request("events")));
  TableIdentifier id{{"db"}, "events"};
  constexpr int kCommits = 10;
  Catalog* handles[2] = {catalog(), harness_->second()};
  std::vector<Status> errors(2);
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      TableOptions o;
      o.max_attempts = 60;
      o.min_retry_wait_ms = 1;
      o.max_retry_wait_ms = 20;
      auto t = Table::Load(handles[w], io(), id, SystemClock::Default(), o);
      if (!t.ok()) {
        errors[w] = t.status();
        return;
      }
      for (int i = 0; i < kCommits; ++i) {
        auto r = (*t)->AppendFiles({File(**t, "w" + std::to_string(w) + "-" + std::to_string(i))});
        if (!r.ok()) {
          errors[w] = r.status();
          return;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_OK(errors[0]);
  ASSERT_OK(errors[1]);
  ASSERT_OK_AND_ASSIGN(auto loaded, catalog()->LoadTable(id));
  EXPECT_EQ(loaded.metadata.snapshots.size(), 2u * kCommits);
  ASSERT_OK_AND_ASSIGN(auto entries, LiveEntries(*io(), *loaded.metadata.CurrentSnapshot()));
  std::set<std::string> paths;
  for (const auto& e : entries) paths.insert(e.data_file.file_path);
  EXPECT_EQ(paths.size(), 2u * kCommits);
  EXPECT_EQ(entries.size(), 2u * kCommits);
}

// A fence is checked with the pointer swap: a refused fence changes nothing and its
// status comes back; a holding one commits. Catalogs that cannot fence refuse the commit.
TEST_P(CatalogConformance, FenceGuardsThePointerSwap) {
  Catalog* c = catalog();
  ASSERT_OK(c->CreateNamespace({"db"}, {}));
  ASSERT_OK_AND_ASSIGN(auto t, c->CreateTable({"db"}, Request("t")));
  TableIdentifier id{{"db"}, "t"};
  auto holds = harness_->Fence(true);
  auto refuses = harness_->Fence(false);
  std::vector<TableRequirement> req = {requirement::AssertTableUuid{t.metadata.table_uuid}};
  if (!holds) {
    FixedFence any(true);
    auto r = c->CommitTableFenced(id, req, {update::SetProperties{{{"f", "1"}}}}, any);
    EXPECT_STATUS(kFailedPrecondition, r);
    EXPECT_EQ(c->LoadTable(id)->metadata_location, t.metadata_location);
    return;
  }
  auto refused = c->CommitTableFenced(id, req, {update::SetProperties{{{"f", "1"}}}}, *refuses);
  EXPECT_STATUS(kFailedPrecondition, refused);
  EXPECT_EQ(c->LoadTable(id)->metadata_location, t.metadata_location);
  ASSERT_OK_AND_ASSIGN(
      auto ok, c->CommitTableFenced(id, req, {update::SetProperties{{{"f", "2"}}}}, *holds));
  EXPECT_EQ(c->LoadTable(id)->metadata.properties.at("f"), "2");
  // Through a Table handle: appends, and a refused fence leaves the table as it was.
  ASSERT_OK_AND_ASSIGN(auto table, Table::Load(c, io(), id, SystemClock::Default()));
  table->SetFence(holds.get());
  ASSERT_OK(table->AppendFiles({File(*table, "fenced-ok")}));
  table->SetFence(refuses.get());
  std::string before = c->LoadTable(id)->metadata_location;
  auto lost = table->AppendFiles({File(*table, "fenced-out")});
  EXPECT_STATUS(kFailedPrecondition, lost);
  EXPECT_EQ(c->LoadTable(id)->metadata_location, before);
}

}  // namespace
}  // namespace icestream::iceberg::testing
