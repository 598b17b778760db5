// The table sink's parts together, on real parts: the built-in SQLite catalog over local
// buckets, the schema registry, the Parquet files read back with the project's reader.
//  - The first batch of a new table, with a target file size far below the batch, cuts
//    many files while the converter threads run: the uploader thread creates the table
//    from the batch's write target, which nothing changes while the batch runs (a case
//    for the sanitizer trees: -DICESTREAM_ASAN_FOLDERS='^delivery/table$' or
//    -DICESTREAM_TSAN_FOLDERS='^delivery/table$', README "Testing").
//  - A refused fence leaves the table as it was; a holding one commits.
//  - A quiet table gets its upkeep: its small files are merged with no new records.
//  - In a pool (staged mode), the batches of two shards convert side by side in one
//    process, and the control unit's commit makes both visible.
//  - In a pool, the compaction that follows a staged commit merges files without the
//    sink's lock: a shard's batch is written and staged while a merge reads its inputs.
#include "delivery/table/table_sink.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <set>
#include <thread>

#include "common/testing/status_assertions.h"
#include "delivery/table/table_test_base.h"
#include "iceberg/table_files.h"

namespace icestream::delivery::table {
namespace {

// The records' arrival time, and the engine's chunk size (records of a range handed at once).
constexpr int64_t kArrivalMs = 1'700'000'000'000;
constexpr size_t kChunk = 500;

constexpr const char* kSchema = R"({
  "type": "object",
  "properties": {
    "id": {"type": "integer"},
    "ts": {"type": "string", "format": "date-time"},
    "note": {"type": "string"}
  },
  "required": ["id", "ts"]
})";

// A pool's staging rows, in memory (the thing under test is the sink; the PostgreSQL store
// has its own tests in scaleout/). Its commit fence deletes the rows it commits.
class MemoryStagingStore final : public StagingStore {
 public:
  Result<bool> Stage(const std::string&, const StagedBatch& batch) override {
    std::lock_guard lock(mu_);
    return rows_.emplace(Key(batch), batch).second;
  }
  Result<std::vector<StagedBatch>> Staged(const std::string&) override {
    std::lock_guard lock(mu_);
    std::vector<StagedBatch> out;
    for (const auto& [k, b] : rows_) out.push_back(b);
    return out;
  }
  std::unique_ptr<iceberg::CommitFence> CommitFence(const std::string&,
                                                    std::vector<StagedBatch> batches) override {
    return std::make_unique<Fence>(this, std::move(batches));
  }
  Status Drop(const std::string&, const std::vector<StagedBatch>& batches) override {
    std::lock_guard lock(mu_);
    for (const auto& b : batches) rows_.erase(Key(b));
    return Status::OK();
  }
  Status Request(const std::string&, const std::string& version_id) override {
    std::lock_guard lock(mu_);
    requests_.insert(version_id);
    return Status::OK();
  }
  Result<std::vector<std::string>> Requests(const std::string&) override {
    std::lock_guard lock(mu_);
    return std::vector<std::string>(requests_.begin(), requests_.end());
  }
  Status DoneRequest(const std::string&, const std::string& version_id) override {
    std::lock_guard lock(mu_);
    requests_.erase(version_id);
    return Status::OK();
  }
  size_t rows() {
    std::lock_guard lock(mu_);
    return rows_.size();
  }

 private:
  static std::string Key(const StagedBatch& b) { return b.shard + "@" + PositionText(b.after); }
  class Fence final : public iceberg::CommitFence {
   public:
    Fence(MemoryStagingStore* store, std::vector<StagedBatch> batches)
        : store_(store), batches_(std::move(batches)) {}
    Status Check(iceberg::CatalogStore::Tx&) const override {
      std::lock_guard lock(store_->mu_);
      for (const auto& b : batches_) {
        if (!store_->rows_.count(Key(b))) return FailedPrecondition("a staged row is gone");
      }
      for (const auto& b : batches_) store_->rows_.erase(Key(b));
      return Status::OK();
    }

   private:
    MemoryStagingStore* store_;
    std::vector<StagedBatch> batches_;
  };
  std::mutex mu_;
  std::map<std::string, StagedBatch> rows_;
  std::set<std::string> requests_;
};

// A batch's records that start only once `parties` batches are reading at the same time
// (kUnavailable after 10 s without them).
class Rendezvous {
 public:
  explicit Rendezvous(int parties) : parties_(parties) {}
  Status Arrive() {
    std::unique_lock lock(mu_);
    ++arrived_;
    cv_.notify_all();
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return arrived_ >= parties_; })) {
      return Unavailable("the other shard's batch did not start converting beside this one");
    }
    return Status::OK();
  }

 private:
  const int parties_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
};

class MeetingSource final : public RecordSource {
 public:
  MeetingSource(RecordSource* inner, Rendezvous* meet) : inner_(inner), meet_(meet) {}
  Result<bool> Next(RecordChunk* chunk) override {
    {
      std::lock_guard lock(mu_);  // one arrival per batch, whichever thread reads first
      if (!met_) {
        RETURN_IF_ERROR(meet_->Arrive());
        met_ = true;
      }
    }
    return inner_->Next(chunk);
  }
  Status Rewind() override { return inner_->Rewind(); }

 private:
  RecordSource* inner_;
  Rendezvous* meet_;
  std::mutex mu_;
  bool met_ = false;
};

// The test's table store, with a gate: once armed, a read of a data file (only compaction
// reads them back) waits until the gate is opened, or 10 s (then the gate opens itself);
// Holding says whether a read waits there now.
class GatedStore final : public objectstore::ObjectStore {
 public:
  explicit GatedStore(objectstore::ObjectStore* inner) : inner_(inner) {}
  void Arm() {
    std::lock_guard lock(mu_);
    armed_ = true;
  }
  bool WaitHolding() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return holding_ > 0; });
  }
  bool Holding() {
    std::lock_guard lock(mu_);
    return holding_ > 0;
  }
  void Open() {
    std::lock_guard lock(mu_);
    armed_ = false;
    cv_.notify_all();
  }

  Result<std::string> Get(const std::string& bucket, const std::string& key,
                          const objectstore::ReadOptions& o) override {
    if (key.find("/data/") != std::string::npos && key.ends_with(".parquet")) {
      std::unique_lock lock(mu_);
      if (armed_) {
        ++holding_;
        cv_.notify_all();
        if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return !armed_; })) {
          armed_ = false;  // not opened in time: the later reads pass
        }
        --holding_;
      }
    }
    return inner_->Get(bucket, key, o);
  }
  Status Put(const std::string& bucket, const std::string& key, std::string_view data,
             const objectstore::PutOptions& o) override {
    return inner_->Put(bucket, key, data, o);
  }
  Result<std::string> GetRange(const std::string& bucket, const std::string& key, uint64_t offset,
                               uint64_t length, const objectstore::ReadOptions& o) override {
    return inner_->GetRange(bucket, key, offset, length, o);
  }
  Result<objectstore::ObjectInfo> Head(const std::string& bucket, const std::string& key,
                                       const objectstore::ReadOptions& o) override {
    return inner_->Head(bucket, key, o);
  }
  Result<std::vector<objectstore::ObjectInfo>> List(const std::string& bucket,
                                                    const std::string& prefix,
                                                    const objectstore::ReadOptions& o) override {
    return inner_->List(bucket, prefix, o);
  }
  Status Delete(const std::string& bucket, const std::string& key,
                const objectstore::ReadOptions& o) override {
    return inner_->Delete(bucket, key, o);
  }
  Status CheckBucket(const std::string& bucket, const objectstore::ReadOptions& o) override {
    return inner_->CheckBucket(bucket, o);
  }
  std::string Uri(const std::string& bucket, const std::string& key) const override {
    return inner_->Uri(bucket, key);
  }

 private:
  objectstore::ObjectStore* inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false;
  int holding_ = 0;
};

class TableSinkTest : public TableTestBase {
 protected:
  void SetUp() override { OpenStores(kSchema); }
  void TearDown() override {
    sink_.reset();
    warehouses_.reset();  // before gate_ (it may read through it)
  }

  // The warehouse reads and writes tables through a GatedStore (before MakeSink).
  GatedStore* GateTables() {
    gate_ = std::make_unique<GatedStore>(tables_.get());
    warehouses_ = std::make_unique<iceberg::Warehouses>(db_.get(), gate_.get(), &clock_,
                                                        "us-east-1", "000000000000");
    return gate_.get();
  }

  ChannelConfig Channel() {
    ChannelConfig c = TableChannel();
    c.data_freshness_seconds = 1;
    c.dlq.bucket_arn = "arn:aws:s3:::dlq";
    c.dlq.expected_bucket_owner = "000000000000";
    c.dlq.error_output_prefix = "errors/";
    return c;
  }

  void MakeSink(TableSinkOptions o, const iceberg::CommitFence* fence = nullptr,
                std::shared_ptr<StagingStore> staging = nullptr) {
    TableServices ts = Services();
    ts.staging = std::move(staging);
    ts.fence_for = [fence](const ChannelConfig&) { return fence; };
    dest_ = std::make_unique<TableDestination>(ts, o);
    config_ = Channel();
    ASSERT_OK(dest_->Prepare(&config_));
    SinkEnv env;
    env.buckets = buckets_.get();
    env.clock = &clock_;
    env.load_state = [this]() -> Result<nlohmann::json> { return state_; };
    env.save_state = [this](const nlohmann::json& d) {
      state_ = d;
      return Status::OK();
    };
    ASSERT_OK_AND_ASSIGN(sink_, dest_->MakeSink(config_, env));
  }

  // `n` records of shard ranges 0 and 1 after `first` (sequence numbers are ordinals + 1).
  std::pair<DeliveryBatch, std::vector<VectorSource::Rec>> Batch(uint64_t first, uint64_t n,
                                                                 size_t pad) {
    std::vector<VectorSource::Rec> recs;
    DeliveryBatch batch;
    batch.attempt_ms = clock_.NowMillis();
    for (size_t range = 0; range < 2; ++range) {
      ShardRange r;
      r.shard = "shardId-00000000000" + std::to_string(range);
      r.after = first == 0 ? Position{} : Position{std::to_string(first), std::nullopt};
      r.last_sequence = std::to_string(first + n);
      r.records = n;
      batch.ranges.push_back(r);
      for (uint64_t i = first; i < first + n; ++i) {
        // Notes that do not compress, so that files reach their target size.
        std::string note;
        uint64_t x = i * 2654435761u + range * 97 + 1;
        while (note.size() < pad) {
          x ^= x << 13;
          x ^= x >> 7;
          x ^= x << 17;
          note += "0123456789abcdef"[x & 15];
        }
        std::string data = R"({"id":)" + std::to_string(i * 2 + range) +
                           R"(,"ts":"2026-12-01T10:00:00Z","note":")" + note + "\"}";
        recs.push_back({range, std::to_string(i + 1), i, std::move(data)});
      }
    }
    return {batch, recs};
  }

  // `n` records of one shard after `first`: a staged (one-shard) batch.
  std::pair<DeliveryBatch, std::vector<VectorSource::Rec>> ShardBatch(
      const std::string& shard, uint64_t first, uint64_t n, uint64_t id_base,
      const std::string& ts = "2026-12-01T10:00:00Z") {
    std::vector<VectorSource::Rec> recs;
    DeliveryBatch batch;
    batch.attempt_ms = clock_.NowMillis();
    ShardRange r;
    r.shard = shard;
    r.after = first == 0 ? Position{} : Position{std::to_string(first), std::nullopt};
    r.last_sequence = std::to_string(first + n);
    r.records = n;
    batch.ranges.push_back(r);
    for (uint64_t i = first; i < first + n; ++i) {
      std::string data = R"({"id":)" + std::to_string(id_base + i) + R"(,"ts":")" + ts +
                         R"(","note":"n)" + std::to_string(i) + "\"}";
      recs.push_back({0, std::to_string(i + 1), i, std::move(data)});
    }
    return {batch, recs};
  }

  std::unique_ptr<GatedStore> gate_;
  std::unique_ptr<TableDestination> dest_;
  ChannelConfig config_;
  nlohmann::json state_;
  std::unique_ptr<Sink> sink_;
};

TEST_F(TableSinkTest, FirstBatchOfANewTableCutsManyFilesWhileConverting) {
  TableSinkOptions o;
  o.target_file_size_bytes = 32 << 10;
  o.row_group_bytes = 64 << 10;  // row groups end during the batch: files are cut as it runs
  o.convert_threads = 2;
  o.block_bytes = 256 << 10;
  o.compaction = false;
  MakeSink(o);
  // 2 × 7,000 records of ~1 KiB: about 14 MB into a table that does not exist yet.
  auto [batch, recs] = Batch(0, 7000, 960);
  VectorSource source(recs, kArrivalMs, kChunk);
  ASSERT_OK_AND_ASSIGN(auto counts, sink_->Deliver(batch, &source));
  EXPECT_EQ(counts.delivered, 14000u);
  EXPECT_EQ(counts.failed, 0u);
  size_t files = 0;
  EXPECT_EQ(LiveRows(&files), 14000);
  EXPECT_GT(files, 4u);  // cut while the converters ran, not only at the end
  ASSERT_OK_AND_ASSIGN(auto cps, sink_->Checkpoints());
  EXPECT_EQ(cps.at("shardId-000000000000"), (Position{"7000", std::nullopt}));
  EXPECT_EQ(cps.at("shardId-000000000001"), (Position{"7000", std::nullopt}));
}

TEST_F(TableSinkTest, ARefusedFenceChangesNothing) {
  SwitchFence fence;
  TableSinkOptions o;
  o.compaction = false;
  MakeSink(o, &fence);
  auto [b1, r1] = Batch(0, 10, 10);
  VectorSource s1(r1, kArrivalMs, kChunk);
  ASSERT_OK(sink_->Deliver(b1, &s1));
  EXPECT_EQ(LiveRows(), 20);
  fence.holds = false;
  auto [b2, r2] = Batch(10, 10, 10);
  VectorSource s2(r2, kArrivalMs, kChunk);
  auto refused = sink_->Deliver(b2, &s2);
  EXPECT_STATUS(kFailedPrecondition, refused);
  EXPECT_EQ(LiveRows(), 20);
  EXPECT_EQ(sink_->Checkpoints()->at("shardId-000000000000"), (Position{"10", std::nullopt}));
  fence.holds = true;
  ASSERT_OK(s2.Rewind());
  ASSERT_OK(sink_->Deliver(b2, &s2));
  EXPECT_EQ(LiveRows(), 40);
}

TEST_F(TableSinkTest, AQuietTableGetsItsUpkeep) {
  TableSinkOptions o;
  o.target_file_size_bytes = 1 << 20;
  o.compaction_cold_after_ms = 20000;
  o.compaction_budget_ms = 60000;
  MakeSink(o);
  for (uint64_t i = 0; i < 6; ++i) {
    auto [b, r] = Batch(i * 5, 5, 10);
    VectorSource s(r, kArrivalMs, kChunk);
    ASSERT_OK(sink_->Deliver(b, &s));
    clock_.Advance(1000);
  }
  size_t before = 0;
  ASSERT_EQ(LiveRows(&before), 60);
  EXPECT_GE(before, 6u);
  // No new records: upkeep is due on its own and merges the now-cold partition.
  EXPECT_LT(sink_->NextUpkeepMs(), INT64_MAX);
  clock_.Advance(60'000);
  EXPECT_LE(sink_->NextUpkeepMs(), clock_.NowMillis());
  sink_->Upkeep();
  size_t after = 0;
  EXPECT_EQ(LiveRows(&after), 60);
  EXPECT_LT(after, before);
  EXPECT_GE(sink_->StatusJson()["Compaction"]["Commits"].get<int64_t>(), 1);
}

TEST_F(TableSinkTest, ShardBatchesOfAPoolConvertSideBySide) {
  auto staging = std::make_shared<MemoryStagingStore>();
  TableSinkOptions o;
  o.compaction = false;
  o.convert_threads = 2;
  MakeSink(o, nullptr, staging);
  ASSERT_TRUE(sink_->staged());
  // The first batch creates the table (under the sink's lock).
  auto [b0, r0] = ShardBatch("shardId-000000000000", 0, 2000, 0);
  VectorSource s0(r0, kArrivalMs, kChunk);
  auto first = sink_->Deliver(b0, &s0);
  ASSERT_OK(first);
  EXPECT_EQ(staging->rows(), 1u);

  // Two shards' batches at once: each source waits until the other batch reads too, which
  // happens only when neither holds the sink while converting.
  auto [b1, r1] = ShardBatch("shardId-000000000000", 2000, 3000, 0);
  auto [b2, r2] = ShardBatch("shardId-000000000001", 0, 3000, 1'000'000);
  VectorSource v1(r1, kArrivalMs, kChunk), v2(r2, kArrivalMs, kChunk);
  Rendezvous meet(2);
  MeetingSource s1(&v1, &meet), s2(&v2, &meet);
  Result<DeliveryCounts> c1 = Internal("not run"), c2 = Internal("not run");
  std::thread t1([&] { c1 = sink_->Deliver(b1, &s1); });
  std::thread t2([&] { c2 = sink_->Deliver(b2, &s2); });
  t1.join();
  t2.join();
  ASSERT_OK(c1);
  ASSERT_OK(c2);
  EXPECT_EQ(c1->delivered, 3000u);
  EXPECT_EQ(c2->delivered, 3000u);
  EXPECT_EQ(staging->rows(), 3u);
  EXPECT_EQ(LiveRows(), 0);  // staged, not yet visible

  // The control unit's holder commits every staged batch in one append.
  ASSERT_OK_AND_ASSIGN(auto committed, sink_->CommitStaged());
  EXPECT_EQ(committed.deliveries, 1u);
  EXPECT_EQ(staging->rows(), 0u);
  EXPECT_EQ(LiveRows(), 8000);
  ASSERT_OK_AND_ASSIGN(auto cps, sink_->Checkpoints());
  EXPECT_EQ(cps.at("shardId-000000000000"), (Position{"5000", std::nullopt}));
  EXPECT_EQ(cps.at("shardId-000000000001"), (Position{"3000", std::nullopt}));
}

TEST_F(TableSinkTest, APoolsCompactionMergesWithoutHoldingTheShardWriters) {
  GatedStore* gate = GateTables();
  auto staging = std::make_shared<MemoryStagingStore>();
  TableSinkOptions o;
  o.target_file_size_bytes = 1 << 20;
  o.compaction_cold_after_ms = 20000;
  o.compaction_budget_ms = 60000;
  MakeSink(o, nullptr, staging);
  ASSERT_TRUE(sink_->staged());
  // Four commits of one shard into the 10:00 partition: four small files there.
  const std::string shard0 = "shardId-000000000000", shard1 = "shardId-000000000001";
  for (uint64_t i = 0; i < 4; ++i) {
    auto [b, r] = ShardBatch(shard0, i * 50, 50, 0);
    VectorSource src(r, kArrivalMs, kChunk);
    ASSERT_OK(sink_->Deliver(b, &src));
    ASSERT_OK(sink_->CommitStaged());
    clock_.Advance(1000);
  }
  size_t before = 0;
  ASSERT_EQ(LiveRows(&before), 200);
  ASSERT_EQ(before, 4u);
  // A minute later the 10:00 partition is cold: the next commit (into 11:00) merges it.
  clock_.Advance(60'000);
  auto [b4, r4] = ShardBatch(shard0, 200, 50, 0, "2026-12-01T11:00:00Z");
  VectorSource s4(r4, kArrivalMs, kChunk);
  ASSERT_OK(sink_->Deliver(b4, &s4));
  gate->Arm();
  Result<DeliveryCounts> committed = Internal("not run");
  std::thread commit([&] { committed = sink_->CommitStaged(); });
  ASSERT_TRUE(gate->WaitHolding()) << "the commit's compaction did not read its inputs";
  // While the merge reads its inputs, another shard's batch is written and staged.
  auto [b5, r5] = ShardBatch(shard1, 0, 50, 1'000'000);
  VectorSource s5(r5, kArrivalMs, kChunk);
  auto written = sink_->Deliver(b5, &s5);
  const bool merge_still_reading = gate->Holding();
  gate->Open();
  commit.join();
  ASSERT_OK(written);
  EXPECT_EQ(written->delivered, 50u);
  EXPECT_TRUE(merge_still_reading) << "the shard's batch waited until the merge had finished";
  ASSERT_OK(committed);
  EXPECT_EQ(committed->deliveries, 1u);
  EXPECT_EQ(staging->rows(), 1u);  // the batch written during the merge, staged
  size_t after = 0;
  EXPECT_EQ(LiveRows(&after), 250);
  EXPECT_EQ(after, 2u);  // the four 10:00 files merged into one, and the 11:00 file
  EXPECT_GE(sink_->StatusJson()["Compaction"]["Commits"].get<int64_t>(), 1);
  // The staged batch commits on top of the compaction's snapshot.
  ASSERT_OK(sink_->CommitStaged());
  EXPECT_EQ(LiveRows(), 300);
  EXPECT_EQ(staging->rows(), 0u);
}

}  // namespace
}  // namespace icestream::delivery::table
