// Table operations over the SQLite catalog and a local object store: appends with
// summaries and sequence numbers, manifest reuse and merging, replace, expiry,
// orphans, and two writers committing to one table at once.
#include "iceberg/table.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "common/testing/status_assertions.h"
#include "iceberg/table_files.h"
#include "iceberg/test_env.h"

namespace icestream::iceberg {
namespace {

using testing::CatalogEnv;

class TableTest : public CatalogEnv {
 protected:
  void SetUp() override {
    CatalogEnv::SetUp();
    ASSERT_OK(catalog_->CreateNamespace({"db"}, {}));
    CreateTableRequest r;
    r.name = "events";
    r.schema.fields = {{1, "id", true, Primitive(TypeId::kLong), ""},
                       {2, "ts", false, Primitive(TypeId::kTimestampTz), ""},
                       {3, "kind", false, Primitive(TypeId::kString), ""}};
    PartitionSpec spec;
    spec.fields = {{2, 0, "ts_day", Transform::Day()}, {3, 0, "kind", Transform::Identity()}};
    r.spec = spec;
    ASSERT_OK(catalog_->CreateTable({"db"}, r));
  }

  std::unique_ptr<Table> Open(TableOptions o = {}) {
    auto t = Table::Load(catalog_.get(), io_.get(), id_, SystemClock::Default(), o);
    EXPECT_OK(t);
    return std::move(t).value();
  }

  // A data file as a writer would describe it (the bytes are written too, so that
  // expiry and orphan listing see real objects).
  DataFile NewFile(Table& t, const std::string& name, int32_t day, const std::string& kind, int64_t rows) {
    DataFile f;
    f.partition = {Literal::Date(day), Literal::String(kind)};
    f.file_path = t.NewDataFileLocation(f.partition, name);
    f.record_count = rows;
    f.file_size_in_bytes = rows * 3;
    f.spec_id = t.metadata().default_spec_id;
    EXPECT_OK(io_->Write(f.file_path, std::string(static_cast<size_t>(f.file_size_in_bytes), 'x')));
    return f;
  }

  std::multiset<std::string> LivePaths(Table& t) {
    std::multiset<std::string> out;
    EXPECT_OK(t.Refresh());
    const Snapshot* s = t.metadata().CurrentSnapshot();
    if (s == nullptr) return out;
    auto entries = LiveEntries(*io_, *s);
    EXPECT_OK(entries);
    for (const auto& e : *entries) out.insert(e.data_file.file_path);
    return out;
  }

  TableIdentifier id_{{"db"}, "events"};
};

TEST_F(TableTest, AppendsBuildSnapshotsWithSummariesAndSequenceNumbers) {
  auto t = Open();
  EXPECT_NE(t->NewDataFileLocation({Literal::Date(19000), Literal::String("a b")}, "f.parquet")
                .find("/data/ts_day=2022-01-08/kind=a+b/f.parquet"),
            std::string::npos);
  ASSERT_OK_AND_ASSIGN(auto r1, t->AppendFiles({NewFile(*t, "a.parquet", 19000, "a", 10),
                                                NewFile(*t, "b.parquet", 19001, "a", 5)},
                                               {{"icestream.checkpoint", "shard-0:42"}}));
  EXPECT_EQ(r1.sequence_number, 1);
  ASSERT_OK_AND_ASSIGN(auto r2, t->AppendFiles({NewFile(*t, "c.parquet", 19001, "b", 7)}));
  EXPECT_EQ(r2.sequence_number, 2);
  EXPECT_EQ(r2.manifests_kept, 1);  // the first commit's manifest is reused, not rewritten

  const TableMetadata& m = t->metadata();
  ASSERT_EQ(m.snapshots.size(), 2u);
  EXPECT_EQ(m.last_sequence_number, 2);
  const Snapshot& s1 = m.snapshots[0];
  const Snapshot& s2 = *m.CurrentSnapshot();
  EXPECT_EQ(s2.parent_snapshot_id, s1.snapshot_id);
  EXPECT_EQ(s1.summary.at("operation"), "append");
  EXPECT_EQ(s1.summary.at("icestream.checkpoint"), "shard-0:42");
  EXPECT_EQ(s1.summary.at("added-data-files"), "2");
  EXPECT_EQ(s1.summary.at("added-records"), "15");
  EXPECT_EQ(s1.summary.at("changed-partition-count"), "2");
  EXPECT_EQ(s2.summary.at("total-data-files"), "3");
  EXPECT_EQ(s2.summary.at("total-records"), "22");
  EXPECT_EQ(s2.summary.at("total-files-size"), "66");
  EXPECT_EQ(s2.summary.at("total-delete-files"), "0");
  EXPECT_EQ(m.snapshot_log.size(), 2u);
  EXPECT_EQ(m.refs.at("main").snapshot_id, s2.snapshot_id);

  // Entries inherit the sequence number of the manifest that added them.
  ASSERT_OK_AND_ASSIGN(auto entries, LiveEntries(*io_, s2));
  ASSERT_EQ(entries.size(), 3u);
  std::map<std::string, int64_t> seq;
  for (const auto& e : entries)
    seq[e.data_file.file_path.substr(e.data_file.file_path.rfind('/') + 1)] = *e.sequence_number;
  EXPECT_EQ(seq["a.parquet"], 1);
  EXPECT_EQ(seq["b.parquet"], 1);
  EXPECT_EQ(seq["c.parquet"], 2);
  EXPECT_STATUS(kInvalidArgument, t->AppendFiles({}));
  DataFile dup = NewFile(*t, "d.parquet", 1, "a", 1);
  EXPECT_STATUS(kInvalidArgument, t->AppendFiles({dup, dup}));
}

// Forwards everything to a real catalog; tests override CommitTable to inject a race.
class ForwardingCatalog : public Catalog {
 public:
  explicit ForwardingCatalog(Catalog* real) : real_(real) {}
  Result<std::vector<Namespace>> ListNamespaces(const Namespace& p) override { return real_->ListNamespaces(p); }
  Status CreateNamespace(const Namespace& ns, const Properties& p) override { return real_->CreateNamespace(ns, p); }
  Result<Properties> LoadNamespaceProperties(const Namespace& ns) override { return real_->LoadNamespaceProperties(ns); }
  Result<bool> NamespaceExists(const Namespace& ns) override { return real_->NamespaceExists(ns); }
  Result<NamespacePropertiesChange> UpdateNamespaceProperties(const Namespace& ns, const std::vector<std::string>& r,
                                                              const Properties& u) override {
    return real_->UpdateNamespaceProperties(ns, r, u);
  }
  Status DropNamespace(const Namespace& ns) override { return real_->DropNamespace(ns); }
  Result<std::vector<TableIdentifier>> ListTables(const Namespace& ns) override { return real_->ListTables(ns); }
  Result<LoadedTable> CreateTable(const Namespace& ns, const CreateTableRequest& r) override {
    return real_->CreateTable(ns, r);
  }
  Result<LoadedTable> LoadTable(const TableIdentifier& id) override { return real_->LoadTable(id); }
  Result<bool> TableExists(const TableIdentifier& id) override { return real_->TableExists(id); }
  Result<LoadedTable> CommitTable(const TableIdentifier& id, const std::vector<TableRequirement>& req,
                                  const std::vector<TableUpdate>& upd) override {
    return real_->CommitTable(id, req, upd);
  }
  Status CommitTransaction(const std::vector<TableCommit>& c) override { return real_->CommitTransaction(c); }
  Status DropTable(const TableIdentifier& id, bool purge) override { return real_->DropTable(id, purge); }
  Status RenameTable(const TableIdentifier& a, const TableIdentifier& b) override { return real_->RenameTable(a, b); }
  Result<LoadedTable> RegisterTable(const TableIdentifier& id, const std::string& loc, bool ow) override {
    return real_->RegisterTable(id, loc, ow);
  }

 protected:
  Catalog* real_;
};

// Applies a commit but answers it with a conflict, as a retried request (the first
// delivery applied, the second refused) or a proxy can make a real catalog do.
class ApplyThenConflictCatalog : public ForwardingCatalog {
 public:
  using ForwardingCatalog::ForwardingCatalog;
  int lies_left = 1;
  Result<LoadedTable> CommitTable(const TableIdentifier& id, const std::vector<TableRequirement>& req,
                                  const std::vector<TableUpdate>& upd) override {
    auto r = real_->CommitTable(id, req, upd);
    if (r.ok() && lies_left > 0) {
      --lies_left;
      return Conflict("Requirement failed: branch main has changed");
    }
    return r;
  }
};

// Just before the first snapshot removal reaches the catalog, another writer rolls the
// main branch back to `rollback_to`.
class RollbackDuringExpiryCatalog : public ForwardingCatalog {
 public:
  using ForwardingCatalog::ForwardingCatalog;
  int64_t rollback_to = 0;
  bool done = false;
  Result<LoadedTable> CommitTable(const TableIdentifier& id, const std::vector<TableRequirement>& req,
                                  const std::vector<TableUpdate>& upd) override {
    bool removes = false;
    for (const auto& u : upd) removes = removes || std::holds_alternative<update::RemoveSnapshots>(u);
    if (removes && !done) {
      done = true;
      auto rb = real_->CommitTable(id, {}, {update::SetSnapshotRef{"main", SnapshotRef{rollback_to, RefType::kBranch, {}, {}, {}}}});
      if (!rb.ok()) return rb.status();
    }
    return real_->CommitTable(id, req, upd);
  }
};

TEST_F(TableTest, ACommitThatLandedButWasAnsweredWithAConflictKeepsItsFiles) {
  ApplyThenConflictCatalog lying(catalog_.get());
  ASSERT_OK_AND_ASSIGN(auto t, Table::Load(&lying, io_.get(), id_, SystemClock::Default()));
  ASSERT_OK_AND_ASSIGN(auto r, t->AppendFiles({NewFile(*t, "a.parquet", 19000, "a", 10)}));
  EXPECT_EQ(r.attempts, 1);  // recognized as landed, not committed a second time
  auto fresh = Open();
  ASSERT_EQ(fresh->metadata().snapshots.size(), 1u);
  EXPECT_EQ(fresh->metadata().CurrentSnapshot()->snapshot_id, r.snapshot_id);
  // The snapshot's manifest list and manifests are all still there.
  EXPECT_EQ(LivePaths(*fresh).size(), 1u);
}

TEST_F(TableTest, TheCommitCheckRunsAgainOnTheVersionARetryBuildsOn) {
  // Writer A loads the table, then writer B commits a snapshot with a checkpoint. A's
  // first attempt loses the race; its check sees B's summary on the refreshed table and
  // stops the commit before anything is committed twice.
  auto a = Open();
  auto b = Open();
  ASSERT_OK(b->AppendFiles({NewFile(*b, "b.parquet", 19000, "x", 3)},
                           {{"icestream.checkpoint.s0", "10"}}));
  std::vector<std::string> seen;
  auto check = [&](const TableMetadata& m) -> Status {
    const Snapshot* cur = m.CurrentSnapshot();
    std::string cp = cur ? cur->summary.count("icestream.checkpoint.s0") ? cur->summary.at("icestream.checkpoint.s0") : "-"
                         : "none";
    seen.push_back(cp);
    if (cp == "10") return AlreadyExists("rows up to 10 are in the table already");
    return Status::OK();
  };
  auto r = a->AppendFiles({NewFile(*a, "a.parquet", 19000, "x", 3)}, {{"icestream.checkpoint.s0", "10"}}, check);
  EXPECT_STATUS(kAlreadyExists, r);
  EXPECT_EQ(seen, (std::vector<std::string>{"none", "10"}));
  // Only B's file is live; A's attempt left no manifest behind.
  EXPECT_EQ(LivePaths(*a), (std::multiset<std::string>{b->NewDataFileLocation({Literal::Date(19000), Literal::String("x")},
                                                                               "b.parquet")}));
  ASSERT_OK_AND_ASSIGN(auto listed, io_->List(a->metadata().location + "/metadata/"));
  int manifests = 0;
  for (const auto& f : listed)
    manifests += f.location.find("-m0.avro") != std::string::npos ? 1 : 0;
  EXPECT_EQ(manifests, 1);  // B's
}

TEST_F(TableTest, ExpiryRechecksWhenARefMovesToASnapshotBeingExpired) {
  auto t = Open();
  ASSERT_OK(t->AppendFiles({NewFile(*t, "a.parquet", 19000, "a", 10)}));
  int64_t first = t->metadata().CurrentSnapshot()->snapshot_id;
  ASSERT_OK(t->AppendFiles({NewFile(*t, "b.parquet", 19000, "a", 20)}));
  RollbackDuringExpiryCatalog racing(catalog_.get());
  racing.rollback_to = first;
  ASSERT_OK_AND_ASSIGN(auto rt, Table::Load(&racing, io_.get(), id_, SystemClock::Default()));
  ExpireOptions eo;
  eo.older_than_ms = SystemClock::Default()->NowMillis() + 60000;
  eo.retain_last = 1;  // chooses to expire `first`, which main is rolled back to meanwhile
  ASSERT_OK(rt->ExpireSnapshots(eo));
  ASSERT_TRUE(racing.done);
  auto fresh = Open();
  ASSERT_NE(fresh->metadata().CurrentSnapshot(), nullptr);
  EXPECT_EQ(fresh->metadata().CurrentSnapshot()->snapshot_id, first);
  EXPECT_EQ(LivePaths(*fresh).size(), 1u);  // a.parquet, still readable
}

TEST_F(TableTest, ManifestsAreRewrittenAfterThePartitionSourceWasPromoted) {
  // Partitioned by identity(bucket_no int); files added; then int -> long, a legal
  // promotion. Rewriting the old manifests (replace, merge) must write the old int
  // partition values as longs.
  ASSERT_OK(catalog_->CreateNamespace({"p"}, {}));
  CreateTableRequest r;
  r.name = "promo";
  r.schema.fields = {{1, "bucket_no", false, Primitive(TypeId::kInt), ""}};
  PartitionSpec spec;
  spec.fields = {{1, 0, "bucket_no", Transform::Identity()}};
  r.spec = spec;
  ASSERT_OK(catalog_->CreateTable({"p"}, r));
  TableIdentifier id{{"p"}, "promo"};
  TableOptions o;
  o.manifest_min_count_to_merge = 3;
  auto t = std::move(Table::Load(catalog_.get(), io_.get(), id, SystemClock::Default(), o)).value();
  auto file = [&](const std::string& name, int32_t b) {
    DataFile f;
    f.partition = {Literal::Int(b)};
    f.file_path = t->NewDataFileLocation(f.partition, name);
    f.record_count = 1;
    f.file_size_in_bytes = 1;
    EXPECT_OK(io_->Write(f.file_path, "x"));
    return f;
  };
  DataFile a = file("a.parquet", 1), b = file("b.parquet", 2);
  ASSERT_OK(t->AppendFiles({a}));
  ASSERT_OK(t->AppendFiles({b}));
  Schema wider = *t->metadata().CurrentSchema();
  wider.fields[0].type = Primitive(TypeId::kLong);
  ASSERT_OK(
      catalog_->CommitTable(id, {}, {update::AddSchema{wider, {}}, update::SetCurrentSchema{-1}}));
  ASSERT_OK(t->Refresh());
  DataFile ab = file("ab.parquet", 1);
  ab.partition = {Literal::Long(1)};
  ASSERT_OK(t->ReplaceFiles({a.file_path}, {ab}));
  DataFile c = file("c.parquet", 3);
  c.partition = {Literal::Long(3)};
  auto app = t->AppendFiles({c});  // enough small manifests now: they are merged
  ASSERT_OK(app);
  ASSERT_OK_AND_ASSIGN(auto entries, LiveEntries(*io_, *t->metadata().CurrentSnapshot()));
  std::set<int64_t> buckets;
  for (const auto& e : entries)
    buckets.insert(e.data_file.partition[0]->type.id == TypeId::kLong
                       ? e.data_file.partition[0]->as_long()
                       : e.data_file.partition[0]->as_int());
  EXPECT_EQ(buckets, (std::set<int64_t>{1, 2, 3}));
  EXPECT_EQ(entries.size(), 3u);
}

TEST_F(TableTest, AddedDeleteFilesAreNotAnAppend) {
  auto t = Open();
  ASSERT_OK(t->AppendFiles({NewFile(*t, "a.parquet", 19000, "a", 10)}));
  EXPECT_EQ(t->metadata().CurrentSnapshot()->summary.at("operation"), "append");
  DataFile del = NewFile(*t, "a-deletes.parquet", 19000, "a", 2);
  del.content = FileContent::kPositionDeletes;
  ASSERT_OK(t->AppendFiles({del}));
  EXPECT_EQ(t->metadata().CurrentSnapshot()->summary.at("operation"), "delete");
  DataFile del2 = NewFile(*t, "b-deletes.parquet", 19000, "a", 1);
  del2.content = FileContent::kPositionDeletes;
  ASSERT_OK(t->AppendFiles({NewFile(*t, "b.parquet", 19000, "a", 5), del2}));
  EXPECT_EQ(t->metadata().CurrentSnapshot()->summary.at("operation"), "overwrite");
}

TEST_F(TableTest, MergesTakeManifestsOfOneSizeTier) {
  // A large manifest (many files in one commit) is not rewritten by the merges that
  // small appends trigger: those merge the small manifests among themselves.
  TableOptions o;
  o.manifest_min_count_to_merge = 4;
  auto t = Open(o);
  std::vector<DataFile> bulk;
  std::multiset<std::string> expected;
  for (int i = 0; i < 3000; ++i) {
    bulk.push_back(NewFile(*t, "bulk" + std::to_string(i) + ".parquet", 19000 + i % 7, "k", 1));
    expected.insert(bulk.back().file_path);
  }
  ASSERT_OK(t->AppendFiles(bulk));
  ASSERT_OK_AND_ASSIGN(auto first, SnapshotManifests(*io_, *t->metadata().CurrentSnapshot()));
  ASSERT_EQ(first.size(), 1u);
  const ManifestFile big = first.front();
  ASSERT_GT(big.manifest_length, 16 << 10) << "the bulk manifest must be two tiers up";
  for (int i = 0; i < 12; ++i) {
    DataFile f = NewFile(*t, "small" + std::to_string(i) + ".parquet", 19000, "k", 1);
    expected.insert(f.file_path);
    ASSERT_OK(t->AppendFiles({f}));
    ASSERT_OK_AND_ASSIGN(auto manifests, SnapshotManifests(*io_, *t->metadata().CurrentSnapshot()));
    int small_count = 0;
    bool big_kept = false;
    for (const auto& mf : manifests) {
      if (mf.manifest_path == big.manifest_path) big_kept = true;
      else ++small_count;
    }
    EXPECT_TRUE(big_kept) << "commit " << i << " rewrote the bulk manifest";
    EXPECT_LE(small_count, 4) << "commit " << i;  // the small ones are still merged
  }
  EXPECT_EQ(LivePaths(*t), expected);
}

TEST_F(TableTest, ManifestsAreMergedOnceThereAreMany) {
  TableOptions o;
  o.manifest_min_count_to_merge = 5;
  auto t = Open(o);
  std::multiset<std::string> expected;
  for (int i = 0; i < 23; ++i) {
    DataFile f = NewFile(*t, "f" + std::to_string(i) + ".parquet", 19000 + i % 3, "k", i + 1);
    expected.insert(f.file_path);
    ASSERT_OK(t->AppendFiles({f}));
    ASSERT_OK_AND_ASSIGN(auto manifests, SnapshotManifests(*io_, *t->metadata().CurrentSnapshot()));
    EXPECT_LE(manifests.size(), 5u) << "commit " << i;
  }
  EXPECT_EQ(LivePaths(*t), expected);
  // Merged entries keep their original sequence numbers.
  ASSERT_OK_AND_ASSIGN(auto entries, LiveEntries(*io_, *t->metadata().CurrentSnapshot()));
  for (const auto& e : entries) {
    EXPECT_EQ(*e.sequence_number, e.data_file.record_count) << e.data_file.file_path;
  }
}

TEST_F(TableTest, ReplaceSwapsFilesAndChecksTheyAreLive) {
  auto t = Open();
  DataFile a = NewFile(*t, "a.parquet", 19000, "a", 10);
  DataFile b = NewFile(*t, "b.parquet", 19000, "a", 20);
  DataFile c = NewFile(*t, "c.parquet", 19005, "z", 1);
  ASSERT_OK(t->AppendFiles({a}));
  ASSERT_OK(t->AppendFiles({b, c}));
  DataFile ab = NewFile(*t, "ab.parquet", 19000, "a", 30);
  ASSERT_OK(t->ReplaceFiles({a.file_path, b.file_path}, {ab}));
  EXPECT_EQ(LivePaths(*t), (std::multiset<std::string>{ab.file_path, c.file_path}));
  const Snapshot* s = t->metadata().CurrentSnapshot();
  EXPECT_EQ(s->operation(), "replace");
  EXPECT_EQ(s->summary.at("deleted-data-files"), "2");
  EXPECT_EQ(s->summary.at("deleted-records"), "30");
  EXPECT_EQ(s->summary.at("total-records"), "31");
  EXPECT_EQ(s->summary.at("total-data-files"), "2");
  // The file is gone now: replacing it again is a conflict to re-plan.
  EXPECT_STATUS(kConflict,
                t->ReplaceFiles({a.file_path}, {NewFile(*t, "x.parquet", 19000, "a", 10)}));
}

TEST_F(TableTest, TwoWritersCommitConcurrentlyWithoutLosingFiles) {
  constexpr int kCommits = 15;
  std::multiset<std::string> expected;
  std::vector<std::vector<DataFile>> files(2);
  {
    auto t = Open();
    for (int w = 0; w < 2; ++w) {
      for (int i = 0; i < kCommits; ++i) {
        files[w].push_back(NewFile(*t, "w" + std::to_string(w) + "-" + std::to_string(i) + ".parquet", 19000, "k", 1));
        expected.insert(files[w].back().file_path);
      }
    }
  }
  std::vector<int> retries(2, 0);
  std::vector<Status> errors(2);
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      TableOptions o;
      o.max_attempts = 50;
      o.min_retry_wait_ms = 1;
      o.max_retry_wait_ms = 20;
      o.manifest_min_count_to_merge = 4;  // retries also redo merges
      auto t = Table::Load(catalog_.get(), io_.get(), id_, SystemClock::Default(), o);
      if (!t.ok()) {
        errors[w] = t.status();
        return;
      }
      for (const auto& f : files[w]) {
        auto r = (*t)->AppendFiles({f});
        if (!r.ok()) {
          errors[w] = r.status();
          return;
        }
        retries[w] += r->attempts - 1;
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_OK(errors[0]);
  ASSERT_OK(errors[1]);
  auto t = Open();
  EXPECT_EQ(LivePaths(*t), expected);  // nothing lost, nothing twice
  EXPECT_EQ(t->metadata().snapshots.size(), 2u * kCommits);
  EXPECT_EQ(t->metadata().last_sequence_number, 2 * kCommits);
  std::set<int64_t> seqs;
  for (const auto& s : t->metadata().snapshots) seqs.insert(s.sequence_number);
  EXPECT_EQ(seqs.size(), 2u * kCommits);
  // The snapshot chain is linear: every snapshot's parent is the previous one.
  int chain = 0;
  for (const Snapshot* s = t->metadata().CurrentSnapshot(); s;
       s = s->parent_snapshot_id ? t->metadata().SnapshotById(*s->parent_snapshot_id) : nullptr) {
    ++chain;
  }
  EXPECT_EQ(chain, 2 * kCommits);
  std::printf("retries: %d + %d\n", retries[0], retries[1]);
}

TEST_F(TableTest, OrphanListingMatchesFileLocationsSpelledJavaStyle) {
  // Java's Hadoop FileIO writes "file:/path"; the listing says "file:///path".
  ASSERT_EQ(io_->root().rfind("file:///", 0), 0u);
  CreateTableRequest r;
  r.name = "javaish";
  r.schema.fields = {{1, "id", true, Primitive(TypeId::kLong), ""}};
  r.location = "file:/" + io_->root().substr(8) + "/db/javaish";
  ASSERT_OK(catalog_->CreateTable({"db"}, r));
  ASSERT_OK_AND_ASSIGN(
      auto t, Table::Load(catalog_.get(), io_.get(), {{"db"}, "javaish"}, SystemClock::Default()));
  ASSERT_EQ(t->metadata().location.rfind("file:/", 0), 0u);
  ASSERT_NE(t->metadata().location.rfind("file:///", 0), 0u);
  DataFile f;
  f.file_path = t->NewDataFileLocation({}, "a.parquet");
  f.record_count = 1;
  f.file_size_in_bytes = 4;
  ASSERT_OK(io_->Write(f.file_path, "data"));
  ASSERT_OK(t->AppendFiles({f}));
  std::string stray = t->NewDataFileLocation({}, "stray.parquet");
  ASSERT_OK(io_->Write(stray, "junk"));
  ASSERT_OK_AND_ASSIGN(auto orphans,
                       t->ListOrphanFiles(SystemClock::Default()->NowMillis() + 60000));
  ASSERT_EQ(orphans.size(), 1u);  // only the stray file: not the data, manifests or metadata
  EXPECT_EQ(*io_->KeyOf(orphans[0].location), *io_->KeyOf(stray));
}

TEST_F(TableTest, ExpiryKeepsTheSnapshotsItIsToldToKeep) {
  auto t = Open();
  ASSERT_OK_AND_ASSIGN(auto first, t->AppendFiles({NewFile(*t, "k1.parquet", 19000, "a", 1)},
                                                  {{"icestream.checkpoint.s0", "1"}}));
  ASSERT_OK(t->AppendFiles({NewFile(*t, "k2.parquet", 19000, "a", 1)}));
  ASSERT_OK(t->AppendFiles({NewFile(*t, "k3.parquet", 19000, "a", 1)}));
  ExpireOptions eo;
  eo.older_than_ms = SystemClock::Default()->NowMillis() + 60000;
  eo.retain_last = 1;
  eo.keep = {first.snapshot_id};
  ASSERT_OK_AND_ASSIGN(auto r, t->ExpireSnapshots(eo));
  EXPECT_EQ(r.expired_snapshot_ids.size(), 1u);  // only the middle one
  EXPECT_NE(t->metadata().SnapshotById(first.snapshot_id), nullptr);
  EXPECT_EQ(t->metadata().snapshots.size(), 2u);
}

TEST_F(TableTest, ExpiryDeletesOnlyUnreachableFilesAndOrphansAreListed) {
  auto t = Open();
  DataFile a = NewFile(*t, "a.parquet", 19000, "a", 10);
  DataFile b = NewFile(*t, "b.parquet", 19000, "a", 20);
  ASSERT_OK(t->AppendFiles({a}));
  ASSERT_OK(t->AppendFiles({b}));
  DataFile ab = NewFile(*t, "ab.parquet", 19000, "a", 30);
  ASSERT_OK(t->ReplaceFiles({a.file_path, b.file_path}, {ab}));
  DataFile c = NewFile(*t, "c.parquet", 19001, "a", 1);
  ASSERT_OK(t->AppendFiles({c}));
  // A file no commit references (a crashed writer's).
  std::string stray = t->NewDataFileLocation({Literal::Date(19000), Literal::String("a")}, "stray.parquet");
  ASSERT_OK(io_->Write(stray, "junk"));

  int64_t future = SystemClock::Default()->NowMillis() + 60000;
  ASSERT_OK_AND_ASSIGN(auto orphans, t->ListOrphanFiles(future));
  ASSERT_EQ(orphans.size(), 1u);
  EXPECT_EQ(orphans[0].location, stray);
  EXPECT_TRUE(t->ListOrphanFiles(0)->empty());  // too young to be called orphans

  ExpireOptions eo;
  eo.older_than_ms = future;
  eo.retain_last = 1;
  ASSERT_OK_AND_ASSIGN(auto r, t->ExpireSnapshots(eo));
  EXPECT_EQ(r.expired_snapshot_ids.size(), 3u);
  EXPECT_EQ(r.deleted_content_files, 2);  // a and b, replaced by ab
  EXPECT_EQ(r.deleted_manifest_lists, 3);
  EXPECT_EQ(t->metadata().snapshots.size(), 1u);
  EXPECT_STATUS(kNotFound, io_->Read(a.file_path));
  EXPECT_STATUS(kNotFound, io_->Read(b.file_path));
  EXPECT_OK(io_->Read(ab.file_path));
  EXPECT_OK(io_->Read(c.file_path));
  EXPECT_EQ(LivePaths(*t), (std::multiset<std::string>{ab.file_path, c.file_path}));
  // Expiry made no new orphans besides the stray file.
  ASSERT_OK_AND_ASSIGN(orphans, t->ListOrphanFiles(future));
  ASSERT_EQ(orphans.size(), 1u);
  EXPECT_EQ(orphans[0].location, stray);
}

}  // namespace
}  // namespace icestream::iceberg
