// RestCatalog against RestCatalogServer over loopback HTTP (a real http::Server and
// libcurl client): every Catalog operation round-trips with the same statuses as the
// SQLite catalog behind it, and Table commits through REST, from two writers at once.
#include "iceberg/rest/rest_catalog.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <thread>

#include "common/testing/status_assertions.h"
#include "http/server.h"
#include "iceberg/catalog_conformance.h"
#include "iceberg/rest/rest_server.h"
#include "iceberg/sqlite_catalog.h"
#include "iceberg/table.h"
#include "iceberg/table_files.h"
#include "iceberg/test_env.h"

namespace icestream::iceberg::rest {
namespace {

using iceberg::testing::CatalogConformance;

// The REST client against the REST server (over loopback HTTP), whose catalog is the
// SQLite metastore: two clients play two engines. REST cannot check a fence inside its
// commit, so fenced commits must be refused.
class RestHarness final : public iceberg::testing::CatalogHarness {
 public:
  explicit RestHarness(const std::string& root)
      : store_((std::filesystem::path(root) / "buckets").string()), io_(&store_, "wh") {
    db_ = std::move(Database::Open(root + "/meta.db")).value();
    SqliteCatalogOptions so;
    so.warehouse = "wh";
    backing_ = std::move(SqliteCatalog::Open(db_.get(), &io_, SystemClock::Default(), so)).value();
    Warehouses w;
    w.prefix_for = [](const std::string& name) -> Result<std::string> {
      if (name != "wh") return InvalidArgument("unknown warehouse " + name);
      return std::string("wh");
    };
    w.catalog = [this](const std::string& prefix) -> Result<Catalog*> {
      if (!prefix.empty() && prefix != "wh") return NotFound("no warehouse " + prefix);
      return static_cast<Catalog*>(backing_.get());
    };
    server_ = std::make_unique<RestCatalogServer>(RestServerOptions{}, w);
    http::ServerOptions ho;
    ho.port = 0;
    RestCatalogServer* rs = server_.get();
    http_ = std::move(http::Server::Start(ho, [rs](std::shared_ptr<http::Request> req,
                                                   http::Responder respond) {
              respond(rs->Handle(*req));
            })).value();
    RestCatalogOptions o;
    o.uri = "http://127.0.0.1:" + std::to_string(http_->port()) + "/iceberg/";
    o.warehouse = "wh";
    first_ = std::move(RestCatalog::Open(o)).value();
    second_ = std::move(RestCatalog::Open(o)).value();
  }
  ~RestHarness() override {
    first_.reset();
    second_.reset();
    http_->Stop();
  }
  Catalog* catalog() override { return first_.get(); }
  Catalog* second() override { return second_.get(); }
  const FileIO* io() override { return &io_; }
  std::unique_ptr<CommitFence> Fence(bool) override { return nullptr; }

 private:
  objectstore::LocalObjectStore store_;
  FileIO io_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<MetastoreCatalog> backing_;
  std::unique_ptr<RestCatalogServer> server_;
  std::unique_ptr<http::Server> http_;
  std::unique_ptr<RestCatalog> first_, second_;
};

INSTANTIATE_TEST_SUITE_P(
    Rest, CatalogConformance,
    ::testing::Values(iceberg::testing::CatalogImpl{
        "rest",
        [](const std::string& root) -> std::unique_ptr<iceberg::testing::CatalogHarness> {
          return std::make_unique<RestHarness>(root);
        }}),
    iceberg::testing::CatalogImplName);

class RestCatalogTest : public testing::CatalogEnv {
 protected:
  void SetUp() override {
    CatalogEnv::SetUp();
    Warehouses w;
    w.prefix_for = [](const std::string& name) -> Result<std::string> {
      if (name != "wh") return InvalidArgument("unknown warehouse " + name);
      return std::string("wh");
    };
    w.catalog = [this](const std::string& prefix) -> Result<Catalog*> {
      if (!prefix.empty() && prefix != "wh") return NotFound("no warehouse " + prefix);
      return static_cast<Catalog*>(catalog_.get());
    };
    server_impl_ = std::make_unique<RestCatalogServer>(RestServerOptions{}, w);
    http::ServerOptions ho;
    ho.port = 0;
    RestCatalogServer* rs = server_impl_.get();
    ASSERT_OK_AND_ASSIGN(auto s, http::Server::Start(ho, [rs](std::shared_ptr<http::Request> req,
                                                              http::Responder respond) {
                           respond(rs->Handle(*req));
                         }));
    http_ = std::move(s);
    RestCatalogOptions o;
    o.uri = "http://127.0.0.1:" + std::to_string(http_->port()) + "/iceberg/";
    o.warehouse = "wh";
    o.token = "secret";
    ASSERT_OK_AND_ASSIGN(rest_, RestCatalog::Open(o));
  }
  void TearDown() override {
    rest_.reset();
    if (http_) http_->Stop();
    http_.reset();
    CatalogEnv::TearDown();
  }

  CreateTableRequest Request(const std::string& name) {
    CreateTableRequest r;
    r.name = name;
    r.schema.fields = {{1, "id", true, Primitive(TypeId::kLong), ""},
                       {2, "kind", false, Primitive(TypeId::kString), ""}};
    PartitionSpec spec;
    spec.fields = {{2, 0, "kind", Transform::Identity()}};
    r.spec = spec;
    return r;
  }

  std::unique_ptr<RestCatalogServer> server_impl_;
  std::unique_ptr<http::Server> http_;
  std::unique_ptr<RestCatalog> rest_;
};

TEST_F(RestCatalogTest, CatalogOperationsRoundTrip) {
  EXPECT_EQ(rest_->prefix(), "wh");
  ASSERT_OK(rest_->CreateNamespace({"db"}, {{"owner", "me"}}));
  // Names follow S3 Tables' rules (lowercase letters, digits, '_'); the levels of a
  // nested namespace still travel %1F-joined in the path.
  EXPECT_STATUS(kInvalidArgument, rest_->CreateNamespace({"db", "sub space"}, {}));
  ASSERT_OK(rest_->CreateNamespace({"db", "sub_space"}, {}));
  EXPECT_STATUS(kAlreadyExists, rest_->CreateNamespace({"db"}, {}));
  EXPECT_EQ(*rest_->ListNamespaces({}), (std::vector<Namespace>{{"db"}}));
  EXPECT_EQ(*rest_->ListNamespaces({"db"}), (std::vector<Namespace>{{"db", "sub_space"}}));
  EXPECT_TRUE(IsNoSuchNamespace(rest_->ListNamespaces({"zz"}).status()));
  EXPECT_EQ(rest_->LoadNamespaceProperties({"db"})->at("owner"), "me");
  EXPECT_TRUE(*rest_->NamespaceExists({"db", "sub_space"}));
  EXPECT_FALSE(*rest_->NamespaceExists({"nope"}));
  ASSERT_OK_AND_ASSIGN(auto change,
                       rest_->UpdateNamespaceProperties({"db"}, {"owner"}, {{"a", "1"}}));
  EXPECT_EQ(change.removed, std::vector<std::string>{"owner"});
  EXPECT_STATUS(kInvalidArgument, rest_->UpdateNamespaceProperties({"db"}, {"a"}, {{"a", "2"}}));

  ASSERT_OK_AND_ASSIGN(auto t, rest_->CreateTable({"db"}, Request("t")));
  EXPECT_EQ(t.metadata, catalog_->LoadTable({{"db"}, "t"})->metadata);
  EXPECT_STATUS(kAlreadyExists, rest_->CreateTable({"db"}, Request("t")));
  EXPECT_TRUE(IsNoSuchNamespace(rest_->CreateTable({"zz"}, Request("t")).status()));
  EXPECT_TRUE(IsNoSuchTable(rest_->LoadTable({{"db"}, "none"}).status()));
  EXPECT_TRUE(*rest_->TableExists({{"db"}, "t"}));
  EXPECT_FALSE(*rest_->TableExists({{"db"}, "none"}));
  EXPECT_EQ(rest_->ListTables({"db"})->size(), 1u);

  TableIdentifier id{{"db"}, "t"};
  EXPECT_STATUS(kConflict, rest_
                               ->CommitTable(id, {requirement::AssertTableUuid{"x"}},
                                             {update::SetProperties{{{"a", "b"}}}})
                               .status());
  EXPECT_STATUS(kInvalidArgument, rest_->CommitTable(id, {}, {update::SetCurrentSchema{42}}));
  EXPECT_TRUE(IsNoSuchTable(
      rest_->CommitTable({{"db"}, "none"}, {}, {update::SetProperties{{{"a", "b"}}}}).status()));
  ASSERT_OK_AND_ASSIGN(auto committed,
                       rest_->CommitTable(id, {requirement::AssertTableUuid{t.metadata.table_uuid}},
                                          {update::SetProperties{{{"a", "b"}}}}));
  EXPECT_EQ(committed.metadata.properties.at("a"), "b");
  EXPECT_EQ(committed.metadata_location, catalog_->LoadTable(id)->metadata_location);

  std::vector<TableCommit> tx = {{id, {}, {update::SetProperties{{{"tx", "1"}}}}},
                                 {{{"db"}, "none"}, {}, {update::SetProperties{{{"tx", "1"}}}}}};
  EXPECT_TRUE(IsNoSuchTable(rest_->CommitTransaction(tx)));
  tx.pop_back();
  ASSERT_OK(rest_->CommitTransaction(tx));
  EXPECT_EQ(rest_->LoadTable(id)->metadata.properties.at("tx"), "1");

  ASSERT_OK(rest_->RegisterTable({{"db"}, "copy"}, committed.metadata_location, false));
  ASSERT_OK(rest_->RenameTable({{"db"}, "copy"}, {{"db", "sub_space"}, "moved"}));
  EXPECT_TRUE(IsNoSuchTable(rest_->RenameTable({{"db"}, "copy"}, {{"db"}, "x"})));
  EXPECT_STATUS(kFailedPrecondition, rest_->DropNamespace({"db", "sub_space"}));
  ASSERT_OK(rest_->DropTable({{"db", "sub_space"}, "moved"}, false));
  ASSERT_OK(rest_->DropNamespace({"db", "sub_space"}));
  ASSERT_OK(rest_->DropTable(id, true));
  EXPECT_TRUE(IsNoSuchTable(rest_->DropTable(id, false)));
}

TEST_F(RestCatalogTest, TablesCommitThroughRestFromTwoWriters) {
  ASSERT_OK(rest_->CreateNamespace({"db"}, {}));
  ASSERT_OK(rest_->CreateTable({"db"}, Request("events")));
  TableIdentifier id{{"db"}, "events"};
  constexpr int kCommits = 8;
  std::vector<Status> errors(2);
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      TableOptions o;
      o.max_attempts = 40;
      o.min_retry_wait_ms = 1;
      o.max_retry_wait_ms = 20;
      auto t = Table::Load(rest_.get(), io_.get(), id, SystemClock::Default(), o);
      if (!t.ok()) {
        errors[w] = t.status();
        return;
      }
      for (int i = 0; i < kCommits; ++i) {
        DataFile f;
        f.partition = {Literal::String(w ? "b" : "a")};
        f.file_path = (*t)->NewDataFileLocation(
            f.partition, "w" + std::to_string(w) + "-" + std::to_string(i) + ".parquet");
        f.record_count = 1;
        f.file_size_in_bytes = 1;
        if (Status st = (*t)->AppendFiles({f}).status(); !st.ok()) {
          errors[w] = st;
          return;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_OK(errors[0]);
  ASSERT_OK(errors[1]);
  ASSERT_OK_AND_ASSIGN(auto loaded, rest_->LoadTable(id));
  EXPECT_EQ(loaded.metadata.snapshots.size(), 2u * kCommits);
  ASSERT_OK_AND_ASSIGN(auto entries, LiveEntries(*io_, *loaded.metadata.CurrentSnapshot()));
  std::multiset<std::string> paths;
  for (const auto& e : entries) paths.insert(e.data_file.file_path);
  EXPECT_EQ(paths.size(), 2u * kCommits);
  EXPECT_EQ(std::set<std::string>(paths.begin(), paths.end()).size(), 2u * kCommits);
}

TEST_F(RestCatalogTest, UnreachableCatalogs) {
  RestCatalogOptions o;
  o.uri = "http://127.0.0.1:1/iceberg";
  o.read_attempts = 1;
  EXPECT_STATUS(kUnavailable, RestCatalog::Open(o));
  o.uri = "ftp://x";
  EXPECT_STATUS(kInvalidArgument, RestCatalog::Open(o));
  RestCatalogOptions bad;
  bad.uri = "http://127.0.0.1:" + std::to_string(http_->port()) + "/iceberg";
  bad.warehouse = "other";
  EXPECT_STATUS(kInvalidArgument, RestCatalog::Open(bad));
  // A commit whose answer never comes is an unknown outcome, not a failure.
  RestCatalogOptions ok;
  ok.uri = bad.uri;
  ASSERT_OK_AND_ASSIGN(auto c, RestCatalog::Open(ok));
  http_->Stop();
  auto st = c->CommitTable({{"db"}, "t"}, {}, {update::SetProperties{{{"a", "b"}}}}).status();
  EXPECT_STATUS(kUnknownOutcome, st);
  EXPECT_STATUS(kUnavailable, c->LoadTable({{"db"}, "t"}));
}

}  // namespace
}  // namespace icestream::iceberg::rest
