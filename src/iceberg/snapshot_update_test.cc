// The snapshot builders on their own: the merge plan of a fast append (size tiers, bins,
// what is kept), a replace against a parent that no longer holds a file, the summary, and
// the naming and cleanup of a commit's files.
#include "iceberg/snapshot_update.h"

#include <gtest/gtest.h>

#include "common/testing/status_assertions.h"
#include "iceberg/fast_append.h"
#include "iceberg/rewrite_files.h"
#include "iceberg/table.h"
#include "iceberg/table_files.h"
#include "iceberg/test_env.h"

namespace icestream::iceberg {
namespace {

ManifestFile Manifest(const std::string& name, int64_t bytes, int32_t spec_id = 0,
                      ManifestContent content = ManifestContent::kData) {
  ManifestFile mf;
  mf.manifest_path = name;
  mf.manifest_length = bytes;
  mf.partition_spec_id = spec_id;
  mf.content = content;
  mf.added_files_count = 1;
  return mf;
}

std::vector<std::string> Paths(const std::vector<ManifestFile>& mfs) {
  std::vector<std::string> out;
  for (const auto& mf : mfs) out.push_back(mf.manifest_path);
  return out;
}

TEST(ManifestSizeTierTest, TiersGrowByFactorsOfFourFromFourKiB) {
  EXPECT_EQ(ManifestSizeTier(0), 0);
  EXPECT_EQ(ManifestSizeTier(4095), 0);
  EXPECT_EQ(ManifestSizeTier(4096), 1);
  EXPECT_EQ(ManifestSizeTier(16383), 1);
  EXPECT_EQ(ManifestSizeTier(16384), 2);
  EXPECT_EQ(ManifestSizeTier(65535), 2);
  EXPECT_EQ(ManifestSizeTier(65536), 3);
}

TEST(PlanManifestMergeTest, AGroupMergesOnlyOnceTheNewManifestMakesMinCount) {
  TableOptions o;
  o.manifest_min_count_to_merge = 4;
  std::vector<ManifestFile> two = {Manifest("a", 100), Manifest("b", 100)};
  ManifestMergePlan plan = PlanManifestMerge(two, o);
  EXPECT_TRUE(plan.merges.empty());
  EXPECT_EQ(Paths(plan.kept), (std::vector<std::string>{"a", "b"}));

  std::vector<ManifestFile> three = {Manifest("a", 100), Manifest("b", 100), Manifest("c", 100)};
  plan = PlanManifestMerge(three, o);
  ASSERT_EQ(plan.merges.size(), 1u);
  EXPECT_EQ(Paths(plan.merges[0]), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(plan.kept.empty());
}

TEST(PlanManifestMergeTest, OnlyManifestsOfOneTierAndSpecMergeTogether) {
  TableOptions o;
  o.manifest_min_count_to_merge = 3;
  // Two of tier 0 and spec 0, two of tier 1 (5 KiB) and spec 0, one of tier 0 and spec 1.
  std::vector<ManifestFile> parent = {Manifest("t0-a", 100), Manifest("t1-a", 5000),
                                      Manifest("s1", 100, 1), Manifest("t0-b", 200),
                                      Manifest("t1-b", 6000)};
  ManifestMergePlan plan = PlanManifestMerge(parent, o);
  ASSERT_EQ(plan.merges.size(), 2u);
  EXPECT_EQ(Paths(plan.merges[0]), (std::vector<std::string>{"t0-a", "t0-b"}));
  EXPECT_EQ(Paths(plan.merges[1]), (std::vector<std::string>{"t1-a", "t1-b"}));
  EXPECT_EQ(Paths(plan.kept), (std::vector<std::string>{"s1"}));  // its group of one is short
}

TEST(PlanManifestMergeTest, BinsStopAtTheTargetSizeAndABinOfOneStays) {
  TableOptions o;
  o.manifest_min_count_to_merge = 2;
  o.manifest_target_bytes = 1000;
  o.manifest_merge_max_input_bytes = 1000;
  std::vector<ManifestFile> parent = {Manifest("a", 400), Manifest("b", 400), Manifest("c", 400),
                                      Manifest("d", 900)};
  // All of tier 0: a+b fit (800), c starts a new bin (1200 > 1000) with nothing after it
  // that fits, d alone.
  ManifestMergePlan plan = PlanManifestMerge(parent, o);
  ASSERT_EQ(plan.merges.size(), 1u);
  EXPECT_EQ(Paths(plan.merges[0]), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Paths(plan.kept), (std::vector<std::string>{"c", "d"}));
}

TEST(PlanManifestMergeTest, LargeDeleteAndDroppedManifestsAreNotMerged) {
  TableOptions o;
  o.manifest_min_count_to_merge = 2;
  o.manifest_merge_max_input_bytes = 3000;
  ManifestFile gone = Manifest("gone", 100);
  gone.added_files_count = 0;
  gone.deleted_files_count = 3;  // only earlier deletes: dropped
  std::vector<ManifestFile> parent = {Manifest("big", 3000),
                                      Manifest("deletes", 100, 0, ManifestContent::kDeletes), gone,
                                      Manifest("x", 100), Manifest("y", 100)};
  ManifestMergePlan plan = PlanManifestMerge(parent, o);
  ASSERT_EQ(plan.merges.size(), 1u);
  EXPECT_EQ(Paths(plan.merges[0]), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(Paths(plan.kept), (std::vector<std::string>{"big", "deletes"}));

  o.manifest_merge_enabled = false;
  plan = PlanManifestMerge(parent, o);
  EXPECT_TRUE(plan.merges.empty());
  EXPECT_EQ(Paths(plan.kept), (std::vector<std::string>{"big", "deletes", "x", "y"}));
}

TEST(SnapshotSummaryTest, TotalsFollowTheParentAndStandardFieldsWinOverExtras) {
  DataFile f;
  f.record_count = 7;
  f.file_size_in_bytes = 70;
  FileStats added = FileStats::Of({f});
  SnapshotChanges changes;
  changes.manifests_created = 1;
  changes.changed_partitions = {"0/a"};
  Snapshot parent;
  parent.summary = {{"total-records", "10"}, {"total-data-files", "not a number"}};
  auto s = SnapshotSummary({{"operation", "mine"}, {"icestream.checkpoint", "x"}}, added, changes,
                           &parent);
  EXPECT_EQ(s.at("operation"), "append");
  EXPECT_EQ(s.at("icestream.checkpoint"), "x");
  EXPECT_EQ(s.at("total-records"), "17");
  EXPECT_EQ(s.count("total-data-files"), 0u);  // the parent's value cannot be read
  EXPECT_EQ(s.count("total-files-size"), 0u);  // the parent does not carry it
  EXPECT_EQ(s.count("deleted-data-files"), 0u);
  EXPECT_EQ(s.at("added-records"), "7");
  EXPECT_EQ(s.at("changed-partition-count"), "1");
  s = SnapshotSummary({}, added, changes, nullptr);
  EXPECT_EQ(s.at("total-data-files"), "1");
  EXPECT_EQ(s.at("total-files-size"), "70");
}

TEST(CommitFilesTest, NamesCountAcrossAttemptsAndCleanupKeepsWhatIsAsked) {
  ::icestream::testing::TempDir tmp;
  objectstore::LocalObjectStore store(tmp.path().string());
  FileIO io(&store, "wh");
  CommitFiles files(&io, "uuid");
  files.StartAttempt(io.Location("t/metadata"));
  const std::string shared = files.NextManifestPath();
  EXPECT_EQ(shared, io.Location("t/metadata/uuid-m0.avro"));
  ASSERT_OK(files.Write(shared, "m0"));
  files.KeepForAllAttempts();
  files.StartAttempt(io.Location("t/metadata"));
  const std::string mine = files.NextManifestPath();
  EXPECT_EQ(mine, io.Location("t/metadata/uuid-m1.avro"));
  EXPECT_EQ(files.ManifestListPath(42, 2), io.Location("t/metadata/snap-42-2-uuid.avro"));
  ASSERT_OK(files.Write(mine, "m1"));
  files.DeleteAttemptFiles();
  EXPECT_STATUS(kNotFound, io.Read(mine));
  ASSERT_OK(io.Read(shared));
  files.DeleteAll();
  EXPECT_STATUS(kNotFound, io.Read(shared));
}

class RewriteFilesTest : public testing::CatalogEnv {
 protected:
  void SetUp() override {
    CatalogEnv::SetUp();
    ASSERT_OK(catalog_->CreateNamespace({"db"}, {}));
    CreateTableRequest r;
    r.name = "t";
    r.schema.fields = {{1, "id", true, Primitive(TypeId::kLong), ""}};
    ASSERT_OK(catalog_->CreateTable({"db"}, r));
    ASSERT_OK_AND_ASSIGN(
        table_, Table::Load(catalog_.get(), io_.get(), {{"db"}, "t"}, SystemClock::Default()));
  }

  DataFile File(const std::string& name, int64_t rows) {
    DataFile f;
    f.file_path = table_->NewDataFileLocation({}, name);
    f.record_count = rows;
    f.file_size_in_bytes = rows * 10;
    f.spec_id = table_->metadata().default_spec_id;
    return f;
  }

  std::unique_ptr<Table> table_;
  TableOptions options_;
};

TEST_F(RewriteFilesTest, RewritesTheManifestHoldingAFileAndKeepsTheOthers) {
  DataFile a = File("a.parquet", 1), b = File("b.parquet", 2), c = File("c.parquet", 4);
  ASSERT_OK(table_->AppendFiles({a, b}));
  ASSERT_OK(table_->AppendFiles({c}));
  ASSERT_OK_AND_ASSIGN(auto parent, SnapshotManifests(*io_, *table_->metadata().CurrentSnapshot()));
  ASSERT_EQ(parent.size(), 2u);
  CommitFiles files(io_.get(), "u");
  files.StartAttempt(table_->metadata().location + "/metadata");
  UpdateContext ctx{&table_->metadata(), 77, &options_, &files, "db.t"};
  std::vector<std::string> deleted = {a.file_path};
  ASSERT_OK_AND_ASSIGN(SnapshotChanges changes, RewriteFiles(deleted).Apply(ctx, parent));
  EXPECT_STREQ(changes.operation, "replace");
  EXPECT_EQ(changes.manifests_kept, 1);
  EXPECT_EQ(changes.manifests_replaced, 1);
  EXPECT_EQ(changes.manifests_created, 0);  // Table::Commit counts the added files' manifests
  EXPECT_EQ(changes.deleted.data_files, 1);
  EXPECT_EQ(changes.summary.at("deleted-records"), "1");
  EXPECT_EQ(changes.summary.at("removed-files-size"), "10");
  ASSERT_EQ(changes.manifests.size(), 2u);
  // The list keeps the parent's order: the kept manifest stays where it was, the
  // rewritten one takes the place of the manifest that held a.parquet.
  const bool a_first = parent[0].added_files_count == 2;
  const ManifestFile& kept = changes.manifests[a_first ? 1 : 0];
  const ManifestFile& rewritten = changes.manifests[a_first ? 0 : 1];
  EXPECT_EQ(kept.manifest_path, parent[a_first ? 1 : 0].manifest_path);
  EXPECT_EQ(rewritten.manifest_path, table_->metadata().location + "/metadata/u-m0.avro");
  ASSERT_OK_AND_ASSIGN(auto entries, ReadManifestEntries(*io_, rewritten));
  int deleted_entries = 0, existing = 0;
  for (const auto& e : entries) {
    if (e.status == EntryStatus::kDeleted) {
      ++deleted_entries;
      EXPECT_EQ(e.data_file.file_path, a.file_path);
      EXPECT_EQ(e.snapshot_id, 77);
    } else {
      ++existing;
      EXPECT_EQ(e.status, EntryStatus::kExisting);
    }
  }
  EXPECT_EQ(deleted_entries, 1);
  EXPECT_EQ(existing, 1);
}

TEST_F(RewriteFilesTest, AFileNoLongerInTheTableIsAConflict) {
  DataFile a = File("a.parquet", 1);
  ASSERT_OK(table_->AppendFiles({a}));
  ASSERT_OK_AND_ASSIGN(auto parent, SnapshotManifests(*io_, *table_->metadata().CurrentSnapshot()));
  CommitFiles files(io_.get(), "u");
  files.StartAttempt(table_->metadata().location + "/metadata");
  UpdateContext ctx{&table_->metadata(), 77, &options_, &files, "db.t"};
  std::vector<std::string> deleted = {a.file_path, File("gone.parquet", 1).file_path};
  auto r = RewriteFiles(deleted).Apply(ctx, parent);
  EXPECT_STATUS(kConflict, r);
  EXPECT_NE(r.status().message().find("gone.parquet is no longer in table db.t"), std::string::npos)
      << r.status().message();
  // With no parent at all, every file is missing.
  EXPECT_STATUS(kConflict, RewriteFiles(deleted).Apply(ctx, {}));
}

TEST_F(RewriteFilesTest, ACommitThatFailsWritingItsManifestsLeavesNoneBehind) {
  // Spec 1 partitions by a column the current schema no longer has: a file of spec 0 gets
  // its manifest, then the manifest of the spec-1 file cannot be made. The commit fails
  // and must delete the manifest it already wrote (it used to stay as an orphan).
  PartitionSpec by_id;
  by_id.fields = {{1, -1, "id_part", Transform::Identity()}};
  Schema without_id;
  without_id.fields = {{2, "other", false, Primitive(TypeId::kString), ""}};
  ASSERT_OK(catalog_->CommitTable(
      {{"db"}, "t"}, {},
      {update::AddSpec{by_id}, update::AddSchema{without_id, {}}, update::SetCurrentSchema{-1}}));
  ASSERT_OK(table_->Refresh());
  ASSERT_NE(table_->metadata().SpecById(1), nullptr);
  DataFile plain = File("a.parquet", 1);
  DataFile partitioned = File("b.parquet", 1);
  partitioned.spec_id = 1;
  partitioned.partition = {Literal::Long(7)};
  EXPECT_FALSE(table_->AppendFiles({plain, partitioned}).ok());
  ASSERT_OK_AND_ASSIGN(auto listed, io_->List(table_->metadata().location + "/metadata/"));
  for (const auto& f : listed) EXPECT_FALSE(f.location.ends_with(".avro")) << f.location;
}

TEST(FastAppendTest, AnAppendWithoutFilesIsRefused) {
  std::vector<DataFile> none;
  EXPECT_STATUS(kInvalidArgument, FastAppend(none).Validate());
  std::vector<DataFile> one(1);
  ASSERT_OK(FastAppend(one).Validate());
}

}  // namespace
}  // namespace icestream::iceberg
