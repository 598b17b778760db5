// The table sink's parts one at a time, on real parts: the built-in SQLite catalog over a
// local table bucket, the schema registry in meta.db, Parquet files written to disk.
//  - TableOwner creates the channel's table once, knows it again from its notes, and
//    refuses a table it did not create or one deleted after it created it.
//  - BatchWriter turns a batch into Parquet data files and the records that go to the
//    DLQ; the files hold exactly the good records.
//  - TableCommitter appends a batch once: the same batch again is "already in", a batch
//    overlapping what the table holds and a refused fence change nothing.
//  - SchemaFollower follows the registry's newer compatible version with one schema
//    commit, and the table is written with it.
//  - TableUpkeep merges a cold partition's small files and expires old snapshots, and the
//    checkpoints survive both.
#include <gtest/gtest.h>

#include <atomic>

#include "common/clock.h"
#include "common/sqlite.h"
#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"
#include "delivery/table/batch_writer.h"
#include "delivery/table/schema_follower.h"
#include "delivery/table/schema_versions.h"
#include "delivery/table/table_committer.h"
#include "delivery/table/table_owner.h"
#include "delivery/table/table_test_base.h"
#include "delivery/table/table_upkeep.h"
#include "iceberg/parquet/data_file.h"
#include "iceberg/table_files.h"
#include "iceberg/warehouses.h"
#include "objectstore/local_store.h"
#include "registry/registry.h"

namespace icestream::delivery::table {
namespace {

constexpr const char* kSchema = R"({
  "type": "object",
  "properties": {
    "id": {"type": "integer"},
    "ts": {"type": "string", "format": "date-time"}
  },
  "required": ["id", "ts"]
})";
// Version 2: one optional column more (compatible: the table evolves to it).
constexpr const char* kSchemaV2 = R"({
  "type": "object",
  "properties": {
    "id": {"type": "integer"},
    "ts": {"type": "string", "format": "date-time"},
    "note": {"type": "string"}
  },
  "required": ["id", "ts"]
})";

class TablePartsTest : public TableTestBase {
 protected:
  void SetUp() override {
    OpenStores(kSchema);
    if (HasFatalFailure()) return;
    lookup_ = std::make_unique<RegistryVersions>(registry_.get());
    config_ = TableChannel();
    services_ = Services();
    env_.buckets = buckets_.get();
    env_.clock = &clock_;
    env_.load_state = [this]() -> Result<nlohmann::json> { return state_; };
    env_.save_state = [this](const nlohmann::json& d) {
      state_ = d;
      return Status::OK();
    };
    versions_ = std::make_unique<SchemaVersions>(lookup_.get(), config_.gsr_schema_arn,
                                                 config_.table().partition_fields.at(0));
    follower_ = std::make_unique<SchemaFollower>(config_, versions_.get(), env_);
    owner_ = MakeOwner();
  }

  std::unique_ptr<TableOwner> MakeOwner() {
    return std::make_unique<TableOwner>(config_, services_, TableSinkOptions{}, env_);
  }

  Result<std::shared_ptr<const WriteTarget>> InitialTarget() {
    ASSIGN_OR_RETURN(auto latest, versions_->Latest());
    return follower_->Initial(std::move(latest));
  }

  // Records of two shards (ranges 0 and 1) with sequence numbers first+1 .. first+n.
  struct Batch {
    DeliveryBatch batch;
    std::vector<VectorSource::Rec> recs;
  };
  static Batch MakeBatch(uint64_t first, uint64_t n) {
    Batch b;
    for (size_t range = 0; range < 2; ++range) {
      ShardRange r;
      r.shard = "shardId-00000000000" + std::to_string(range);
      r.after = first == 0 ? Position{} : Position{std::to_string(first), std::nullopt};
      r.last_sequence = std::to_string(first + n);
      r.records = n;
      b.batch.ranges.push_back(r);
      for (uint64_t i = first; i < first + n; ++i) {
        b.recs.push_back({range, std::to_string(i + 1), b.recs.size(),
                          R"({"id":)" + std::to_string(i * 2 + range) +
                              R"(,"ts":"2026-12-01T10:00:00Z","note":"n)" + std::to_string(i) +
                              "\"}"});
      }
    }
    return b;
  }

  // Runs a BatchWriter over `recs` with `target` (the JSON channel's decoding: the record
  // is its JSON text), creating the table from the target on the first file as the sink
  // does.
  Result<BatchOutput> Write(const WriteTarget& target, std::vector<VectorSource::Rec> recs,
                            BatchWriterOptions wo = {}, size_t padding = 0,
                            size_t max_chunk = std::numeric_limits<size_t>::max()) {
    VectorSource source(std::move(recs), 1'780'000'000'000, max_chunk, padding);
    auto decode = [](const SourceRecord& rec, size_t range, BlockOwner* owner,
                     schema::ConvertBlock* block) {
      owner->records_in++;
      owner->bytes_in += rec.data.size();
      block->records.push_back(rec.data);
      owner->origins.push_back({range, rec.sequence_number, rec.ordinal, rec.arrival_ms,
                                rec.sub_sequence, rec.data.size(), rec.partition_key, rec.data});
      return Status::OK();
    };
    auto place = [&](int64_t hour, const std::string& bytes,
                     const format::parquet::FileMetrics& m) -> Result<iceberg::DataFile> {
      RETURN_IF_ERROR(owner_->CreateIfMissing(target.layout(), target.version()));
      ASSIGN_OR_RETURN(const iceberg::FileIO* io, owner_->io());
      iceberg::Table* table = owner_->table();
      iceberg::PartitionTuple part = {iceberg::Literal::Int(static_cast<int32_t>(hour))};
      std::string path = table->NewDataFileLocation(
          part, "f-" + std::to_string(file_no_.fetch_add(1)) + ".parquet");
      RETURN_IF_ERROR(io->Write(path, bytes));
      placed_buffers_.push_back(bytes.data());
      return iceberg::ParquetDataFile(m, path, part, table->metadata().default_spec_id);
    };
    BatchWriter writer(&target.layout(), &target.parquet(), wo);
    BatchOutput out;
    RETURN_IF_ERROR(writer.Run(&source, decode, place, &out));
    return out;
  }

  size_t Snapshots() {
    auto cat = warehouses_->CatalogFor("tables");
    auto t = (*cat)->LoadTable({{"db"}, "orders"});
    return t.ok() ? t->metadata.snapshots.size() : 0;
  }

  std::unique_ptr<RegistryVersions> lookup_;
  ChannelConfig config_;
  TableServices services_;
  SinkEnv env_;
  nlohmann::json state_;
  std::unique_ptr<SchemaVersions> versions_;
  std::unique_ptr<SchemaFollower> follower_;
  std::unique_ptr<TableOwner> owner_;
  std::atomic<int> file_no_{0};  // data file names, unique across batches as the sink's are
  std::vector<const void*> placed_buffers_;  // where each placed file's bytes lay
};

// One suite per part (the naming rule: <Thing>Test after the class under test).
class TableOwnerTest : public TablePartsTest {};
class BatchWriterTest : public TablePartsTest {};
class TableCommitterTest : public TablePartsTest {};
class SchemaFollowerTest : public TablePartsTest {};
class TableUpkeepTest : public TablePartsTest {};

TEST_F(TableOwnerTest, CreatesTheTableOnceAndKnowsItAgain) {
  ASSERT_OK_AND_ASSIGN(auto none, owner_->Load());
  EXPECT_FALSE(none.has_value());
  EXPECT_FALSE(owner_->exists());
  ASSERT_OK_AND_ASSIGN(auto target, InitialTarget());
  ASSERT_OK(owner_->CreateIfMissing(target->layout(), target->version()));
  ASSERT_TRUE(owner_->exists());
  const auto& props = owner_->table()->metadata().properties;
  EXPECT_EQ(props.at(std::string(kOwnerProperty)), config_.arn);
  EXPECT_EQ(props.at(std::string(kVersionIdProperty)), target->version().id);
  EXPECT_TRUE(state_.value("created", false));
  // A second call (another batch's first file) finds it: no second table, no error.
  ASSERT_OK(owner_->CreateIfMissing(target->layout(), target->version()));
  // After a restart the notes and the table agree.
  auto again = MakeOwner();
  ASSERT_OK_AND_ASSIGN(auto followed, again->Load());
  ASSERT_TRUE(followed.has_value());
  EXPECT_EQ(*followed, target->version().id);
  EXPECT_EQ(again->table()->metadata().table_uuid, owner_->table()->metadata().table_uuid);
}

TEST_F(TableOwnerTest, RefusesATableItDidNotCreate) {
  ASSERT_OK_AND_ASSIGN(auto target, InitialTarget());
  ASSERT_OK_AND_ASSIGN(iceberg::Catalog * cat, warehouses_->CatalogFor("tables"));
  ASSERT_OK(cat->CreateNamespace({"db"}, {}));
  iceberg::CreateTableRequest req;
  req.name = "orders";
  req.schema = target->layout().schema.schema;
  req.spec = target->layout().spec;
  ASSERT_OK(cat->CreateTable({"db"}, req).status());
  auto loaded = owner_->Load();
  ASSERT_STATUS(kAlreadyExists, loaded);
  EXPECT_NE(loaded.status().message().find("was not created by this channel"), std::string::npos)
      << loaded.status().ToString();
  ASSERT_STATUS(kAlreadyExists, owner_->CreateIfMissing(target->layout(), target->version()));
}

TEST_F(TableOwnerTest, KnowsItsTableWasDeleted) {
  ASSERT_OK_AND_ASSIGN(auto target, InitialTarget());
  ASSERT_OK(owner_->CreateIfMissing(target->layout(), target->version()));
  ASSERT_OK_AND_ASSIGN(iceberg::Catalog * cat, warehouses_->CatalogFor("tables"));
  ASSERT_OK(cat->DropTable({{"db"}, "orders"}, /*purge=*/false));
  // The channel created it, so a missing table is not "not made yet" but gone.
  auto again = MakeOwner();
  auto loaded = again->Load();
  ASSERT_STATUS(kNotFound, loaded);
  ASSERT_STATUS(kNotFound, again->CreateIfMissing(target->layout(), target->version()));
}

TEST_F(BatchWriterTest, WritesTheGoodRecordsAndRejectsTheRest) {
  ASSERT_OK_AND_ASSIGN(auto target, InitialTarget());
  Batch b = MakeBatch(0, 2000);
  b.recs[3].data = "not json";
  b.recs[7].data = R"({"ts":"2026-12-01T10:00:00Z"})";  // no "id", which is required
  BatchWriterOptions wo;
  wo.target_file_size_bytes = 512;  // several files: small row groups, cut at 512 bytes
  wo.block_records = 100;
  wo.writer.row_group_size = 1 << 10;
  ASSERT_OK_AND_ASSIGN(BatchOutput out, Write(*target, b.recs, wo));
  EXPECT_EQ(out.counts.records_in, 4000u);
  EXPECT_EQ(out.counts.delivered, 3998u);
  ASSERT_EQ(out.rejects.size(), 2u);
  EXPECT_EQ(out.rejects[0].sequence_number, "4");
  EXPECT_EQ(out.rejects[1].sequence_number, "8");
  EXPECT_GT(out.files.size(), 1u);  // cut at the target size
  int64_t rows = 0;
  for (const auto& f : out.files) {
    rows += f.record_count;
    ASSERT_OK_AND_ASSIGN(const iceberg::FileIO* io, owner_->io());
    ASSERT_OK_AND_ASSIGN(std::string bytes, io->Read(f.file_path));
    ASSERT_GE(bytes.size(), 8u);
    EXPECT_EQ(bytes.substr(0, 4), "PAR1");
    EXPECT_EQ(bytes.substr(bytes.size() - 4), "PAR1");
    EXPECT_EQ(static_cast<int64_t>(bytes.size()), f.file_size_in_bytes);
  }
  EXPECT_EQ(rows, 3998);
}

// Blocks get smaller at the start of a batch and towards its planned end, and are made
// ahead by a thread of their own: whatever the planned count says (exact, short of the
// records as with KPL aggregates, or past them), every record is written once.
TEST_F(BatchWriterTest, EveryRecordIsWrittenOnceWhateverTheBlocksAndThePlannedCount) {
  ASSERT_OK_AND_ASSIGN(auto target, InitialTarget());
  Batch b = MakeBatch(0, 2000);  // 4000 records
  for (uint64_t expected : {0u, 4000u, 3997u, 1000u, 100000u}) {
    for (int prefetch : {0, 2}) {
      SCOPED_TRACE(::testing::Message() << "planned " << expected << ", prefetch " << prefetch);
      BatchWriterOptions wo;
      wo.block_records = 50;
      wo.block_bytes = 1 << 20;
      wo.prefetch_blocks = prefetch;
      wo.expected_records = expected;
      wo.writer.row_group_size = 1 << 10;
      ASSERT_OK_AND_ASSIGN(BatchOutput out, Write(*target, b.recs, wo, 0, /*max_chunk=*/7));
      EXPECT_EQ(out.counts.records_in, 4000u);
      EXPECT_EQ(out.counts.delivered, 4000u);
      EXPECT_TRUE(out.rejects.empty());
      int64_t rows = 0;
      for (const auto& f : out.files) rows += f.record_count;
      EXPECT_EQ(rows, 4000);
    }
  }
}

// A channel's batches share a workspace (a file buffer kept from one batch for the next)
// and a batch reuses its blocks' owners: the files are the same, byte for byte, as without
// them, each rejection still names its own record, and the next batch writes into the
// buffer the last one gave back.
TEST_F(BatchWriterTest, BuffersKeptFromBlockToBlockAndBatchToBatchChangeNothing) {
  ASSERT_OK_AND_ASSIGN(auto target, InitialTarget());
  Batch b = MakeBatch(0, 600);  // 1200 records in blocks of 40: owners reused many times
  for (size_t i : {5u, 333u, 777u, 1198u}) b.recs[i].data = "{not json " + std::to_string(i);
  BatchWriterOptions wo;
  wo.block_records = 40;
  wo.target_file_size_bytes = 512;  // several files a batch
  wo.writer.row_group_size = 1 << 10;
  wo.convert_threads = 1;  // rows in one order, so files compare byte for byte
  ASSERT_OK_AND_ASSIGN(BatchOutput plain, Write(*target, b.recs, wo, 0, /*max_chunk=*/9));
  BatchWorkspace workspace;
  wo.workspace = &workspace;
  std::vector<BatchOutput> kept;
  std::vector<std::vector<const void*>> buffers;
  for (int run = 0; run < 2; ++run) {
    placed_buffers_.clear();
    ASSERT_OK_AND_ASSIGN(BatchOutput out, Write(*target, b.recs, wo, 0, /*max_chunk=*/9));
    EXPECT_EQ(workspace.kept_files(), 1u);
    kept.push_back(std::move(out));
    buffers.push_back(placed_buffers_);
  }
  ASSERT_GT(plain.files.size(), 2u);
  ASSERT_OK_AND_ASSIGN(const iceberg::FileIO* io, owner_->io());
  for (const BatchOutput& out : kept) {
    EXPECT_EQ(out.counts.delivered, 1196u);
    ASSERT_EQ(out.rejects.size(), 4u);
    // Records 5 and 333 of shard 0, 177 and 598 of shard 1 (sequence numbers count from 1).
    const std::pair<size_t, const char*> want[] = {{0, "6"}, {0, "334"}, {1, "178"}, {1, "599"}};
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(out.rejects[i].range, want[i].first) << i;
      EXPECT_EQ(out.rejects[i].sequence_number, want[i].second) << i;
      EXPECT_EQ(out.rejects[i].code, "DESERIALIZATION_ERROR") << i;
      EXPECT_EQ(out.rejects[i].message, plain.rejects[i].message) << i;
    }
    ASSERT_EQ(out.files.size(), plain.files.size());
    for (size_t i = 0; i < out.files.size(); ++i) {
      ASSERT_OK_AND_ASSIGN(std::string a, io->Read(plain.files[i].file_path));
      ASSERT_OK_AND_ASSIGN(std::string k, io->Read(out.files[i].file_path));
      EXPECT_TRUE(a == k) << "file " << i << " differs";
    }
  }
  // The second batch's first file went into a buffer the first batch left.
  ASSERT_FALSE(buffers[1].empty());
  EXPECT_NE(std::find(buffers[0].begin(), buffers[0].end(), buffers[1][0]), buffers[0].end());
  workspace.Release();
  EXPECT_EQ(workspace.kept_files(), 0u);
}

// Records that lie in a padded buffer (as the log hands them) are parsed where they lie: the
// same files, byte for byte, as from records parsed from copies, and a record cut short is
// still rejected although the bytes after it would complete it.
TEST_F(BatchWriterTest, RecordsInAPaddedBufferConvertAsCopiesDo) {
  ASSERT_OK_AND_ASSIGN(auto target, InitialTarget());
  Batch b = MakeBatch(0, 500);
  b.recs[3].data = R"({"id":5,"ts":"2026-12-01T10:00:00Z")";  // cut: the buffer has "}" next
  b.recs[9].data = R"({"id":9,"ts":"2026-12-01T10:00:00Z","note":"cut)";
  b.recs[11].data = R"({"id":1)";  // the bytes after it would make it 19
  BatchWriterOptions wo;
  wo.block_records = 64;
  wo.writer.row_group_size = 1 << 8;
  wo.convert_threads = 1;  // rows in one order, so files compare byte for byte
  ASSERT_OK_AND_ASSIGN(BatchOutput copied, Write(*target, b.recs, wo));
  ASSERT_OK_AND_ASSIGN(BatchOutput in_place, Write(*target, b.recs, wo, /*padding=*/64));
  for (const BatchOutput* out : {&copied, &in_place}) {
    EXPECT_EQ(out->counts.delivered, 997u);
    ASSERT_EQ(out->rejects.size(), 3u);
    EXPECT_EQ(out->rejects[0].sequence_number, "4");
    EXPECT_EQ(out->rejects[1].sequence_number, "10");
    EXPECT_EQ(out->rejects[2].sequence_number, "12");
  }
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(copied.rejects[i].code, in_place.rejects[i].code) << i;
    EXPECT_EQ(copied.rejects[i].message, in_place.rejects[i].message) << i;
  }
  ASSERT_EQ(copied.files.size(), in_place.files.size());
  ASSERT_OK_AND_ASSIGN(const iceberg::FileIO* io, owner_->io());
  for (size_t i = 0; i < copied.files.size(); ++i) {
    ASSERT_OK_AND_ASSIGN(std::string a, io->Read(copied.files[i].file_path));
    ASSERT_OK_AND_ASSIGN(std::string c, io->Read(in_place.files[i].file_path));
    EXPECT_TRUE(a == c) << "file " << i << " differs";
  }
}

TEST_F(TableCommitterTest, AppendsABatchOnce) {
  ASSERT_OK_AND_ASSIGN(auto target, InitialTarget());
  TableCommitter committer(config_, env_);
  Batch b1 = MakeBatch(0, 10);
  ASSERT_OK_AND_ASSIGN(BatchOutput out1, Write(*target, b1.recs));
  bool keep = false;
  ASSERT_OK_AND_ASSIGN(CommitOutcome c1,
                       committer.Commit(owner_.get(), b1.batch, out1.files, std::nullopt, &keep));
  EXPECT_FALSE(c1.already_in);
  EXPECT_EQ(LiveRows(), 20);
  auto cps = owner_->Checkpoints(owner_->table()->metadata());
  EXPECT_EQ(cps.at("shardId-000000000000"), (Position{"10", std::nullopt}));
  EXPECT_EQ(cps.at("shardId-000000000001"), (Position{"10", std::nullopt}));
  const size_t snapshots = Snapshots();

  // The same batch again (a lost reply retried): the table holds it, nothing is appended.
  ASSERT_OK_AND_ASSIGN(CommitOutcome again,
                       committer.Commit(owner_.get(), b1.batch, out1.files, std::nullopt, &keep));
  EXPECT_TRUE(again.already_in);
  EXPECT_EQ(Snapshots(), snapshots);
  EXPECT_EQ(LiveRows(), 20);

  // A batch that starts inside what the table holds: another writer commits as this
  // channel.
  Batch overlap = MakeBatch(5, 10);
  ASSERT_OK_AND_ASSIGN(BatchOutput out2, Write(*target, overlap.recs));
  auto refused = committer.Commit(owner_.get(), overlap.batch, out2.files, std::nullopt, &keep);
  ASSERT_STATUS(kInvalidArgument, refused);
  EXPECT_EQ(Snapshots(), snapshots);

  // The next batch goes on from the checkpoints.
  Batch b2 = MakeBatch(10, 10);
  ASSERT_OK_AND_ASSIGN(BatchOutput out3, Write(*target, b2.recs));
  ASSERT_OK_AND_ASSIGN(CommitOutcome c2,
                       committer.Commit(owner_.get(), b2.batch, out3.files, std::nullopt, &keep));
  EXPECT_FALSE(c2.already_in);
  EXPECT_EQ(LiveRows(), 40);
  cps = owner_->Checkpoints(owner_->table()->metadata());
  EXPECT_EQ(cps.at("shardId-000000000001"), (Position{"20", std::nullopt}));
}

TEST_F(TableCommitterTest, UnderARefusedFenceChangesNothing) {
  ASSERT_OK_AND_ASSIGN(auto target, InitialTarget());
  SwitchFence fence;
  TableCommitter committer(config_, env_);
  committer.SetFence(&fence);
  Batch b1 = MakeBatch(0, 10);
  ASSERT_OK_AND_ASSIGN(BatchOutput out1, Write(*target, b1.recs));
  fence.holds = false;
  bool keep = false;
  auto refused = committer.Commit(owner_.get(), b1.batch, out1.files, std::nullopt, &keep);
  ASSERT_STATUS(kFailedPrecondition, refused);
  EXPECT_EQ(LiveRows(), 0);
  EXPECT_TRUE(owner_->Checkpoints(owner_->table()->metadata()).empty());
  fence.holds = true;
  ASSERT_OK(committer.Commit(owner_.get(), b1.batch, out1.files, std::nullopt, &keep).status());
  EXPECT_EQ(LiveRows(), 20);
}

TEST_F(SchemaFollowerTest, EvolvesTheTableToANewerCompatibleVersion) {
  ASSERT_OK_AND_ASSIGN(auto target, InitialTarget());
  ASSERT_OK(owner_->CreateIfMissing(target->layout(), target->version()));
  ASSERT_OK_AND_ASSIGN(auto v2, registry_->RegisterVersion(registry::kDefaultRegistry, "orders",
                                                           std::string(kSchemaV2)));
  ASSERT_OK_AND_ASSIGN(auto next, follower_->FollowLatest(owner_.get(), target));
  EXPECT_EQ(next->version().id, v2.id);
  EXPECT_EQ(next->version().number, 2);
  ASSERT_OK(owner_->Refresh());  // the table is still the channel's, at the evolved schema
  const iceberg::TableMetadata& m = owner_->table()->metadata();
  EXPECT_EQ(m.properties.at(std::string(kVersionIdProperty)), v2.id);
  const iceberg::Schema* current = m.CurrentSchema();
  ASSERT_NE(current, nullptr);
  bool has_note = false;
  for (const auto& f : current->fields) has_note = has_note || f.name == "note";
  EXPECT_TRUE(has_note);
  // Nothing newer: the same target comes back.
  ASSERT_OK_AND_ASSIGN(auto same, follower_->FollowLatest(owner_.get(), next));
  EXPECT_EQ(same.get(), next.get());
}

TEST_F(TableUpkeepTest, MergesSmallFilesAndExpiresSnapshotsKeepingTheCheckpoints) {
  TableSinkOptions o;
  o.compaction_cold_after_ms = 1000;
  o.compaction_budget_ms = 60'000;
  o.expire_interval_ms = 0;
  o.snapshot_max_age_ms = 1;
  o.min_snapshots_to_keep = 1;
  o.orphan_interval_ms = 0;
  owner_ = std::make_unique<TableOwner>(config_, services_, o, env_);
  ASSERT_OK_AND_ASSIGN(auto target, InitialTarget());
  TableCommitter committer(config_, env_);
  TableUpkeep upkeep(config_, o, env_);
  for (uint64_t first = 0; first < 30; first += 10) {
    Batch b = MakeBatch(first, 10);
    ASSERT_OK_AND_ASSIGN(BatchOutput out, Write(*target, b.recs));
    bool keep = false;
    ASSERT_OK_AND_ASSIGN(CommitOutcome c,
                         committer.Commit(owner_.get(), b.batch, out.files, std::nullopt, &keep));
    upkeep.Appended(owner_->table()->metadata(), c.result.snapshot_id, out.files);
    clock_.Advance(10);
  }
  size_t files = 0;
  ASSERT_EQ(LiveRows(&files), 60);
  ASSERT_EQ(files, 3u);
  ASSERT_EQ(Snapshots(), 3u);
  clock_.Advance(5000);  // the partition is cold now
  upkeep.Run(owner_.get(), *target, format::parquet::WriterOptions{});
  EXPECT_EQ(LiveRows(&files), 60);
  EXPECT_EQ(files, 1u);
  EXPECT_EQ(upkeep.compaction().files_merged.load(), 3);
  EXPECT_GT(upkeep.snapshots_expired(), 0);
  // The snapshots left still say where the channel is.
  ASSERT_OK(owner_->Refresh());
  auto cps = owner_->Checkpoints(owner_->table()->metadata());
  EXPECT_EQ(cps.at("shardId-000000000000"), (Position{"30", std::nullopt}));
  EXPECT_EQ(cps.at("shardId-000000000001"), (Position{"30", std::nullopt}));
}

// Small fresh files of a partition that is still written to: the first merge copies
// their row groups as they are, and the merged file's manifest entry counts what the
// inputs' did.
TEST_F(TableUpkeepTest, AFreshMergeCopiesTheRowGroupsAsTheyAre) {
  TableSinkOptions o;
  o.target_file_size_bytes = 64 << 10;
  o.compaction_budget_ms = 60'000;
  o.expire_interval_ms = 0;
  o.orphan_interval_ms = 0;
  owner_ = std::make_unique<TableOwner>(config_, services_, o, env_);
  ASSERT_OK_AND_ASSIGN(auto target, InitialTarget());
  TableCommitter committer(config_, env_);
  TableUpkeep upkeep(config_, o, env_);
  const uint64_t kAppends = 12;
  for (uint64_t first = 0; first < kAppends * 10; first += 10) {
    Batch b = MakeBatch(first, 10);
    ASSERT_OK_AND_ASSIGN(BatchOutput out, Write(*target, b.recs));
    bool keep = false;
    ASSERT_OK_AND_ASSIGN(CommitOutcome c,
                         committer.Commit(owner_.get(), b.batch, out.files, std::nullopt, &keep));
    upkeep.Appended(owner_->table()->metadata(), c.result.snapshot_id, out.files);
    clock_.Advance(10);
  }
  auto live = [&]() {
    auto io = warehouses_->Io("tables");
    EXPECT_OK(owner_->Refresh());
    auto entries = iceberg::LiveEntries(**io, *owner_->table()->metadata().CurrentSnapshot());
    EXPECT_OK(entries);
    return entries.ok() ? *entries : std::vector<iceberg::ManifestEntry>{};
  };
  auto before = live();
  ASSERT_EQ(before.size(), kAppends);
  std::map<int32_t, int64_t> values, nulls;
  for (const auto& e : before) {
    for (const auto& [id, n] : e.data_file.value_counts) values[id] += n;
    for (const auto& [id, n] : e.data_file.null_value_counts) nulls[id] += n;
  }
  upkeep.Run(owner_.get(), *target, format::parquet::WriterOptions{});
  EXPECT_GT(upkeep.compaction().files_copied_as_is.load(), 0);
  EXPECT_EQ(upkeep.compaction().files_copied_as_is.load(), upkeep.compaction().files_merged.load());
  auto after = live();
  EXPECT_LT(after.size(), before.size());
  std::map<int32_t, int64_t> values_after, nulls_after;
  int64_t rows = 0;
  for (const auto& e : after) {
    rows += e.data_file.record_count;
    for (const auto& [id, n] : e.data_file.value_counts) values_after[id] += n;
    for (const auto& [id, n] : e.data_file.null_value_counts) nulls_after[id] += n;
  }
  EXPECT_EQ(rows, static_cast<int64_t>(kAppends) * 20);
  EXPECT_EQ(values_after, values);
  EXPECT_EQ(nulls_after, nulls);
  EXPECT_EQ(LiveRows(), static_cast<int64_t>(kAppends) * 20);
}

}  // namespace
}  // namespace icestream::delivery::table
