// ShardRunner over the local source of a real StreamManager (real shard logs, real
// meta.db, the SQLite delivery store) with a recording sink standing in for a
// destination: batches cover every record exactly once, plans are replayed as they were,
// a plan off its checkpoint fails the channel, what a destination holds wins after a
// restart, children wait for their parents, and a failing sink holds no worker; DLQ
// redrives read records back from the log (or the lines' own copies), report the records
// retention removed, replay a failed batch as planned and go on after a restart.
#include "delivery/shard_runner.h"

#include <gtest/gtest.h>

#include <future>
#include <set>
#include <tuple>

#include "common/base64.h"
#include "common/crypto.h"
#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"
#include "common/time_format.h"
#include "delivery/kpl.h"
#include "delivery/sqlite_delivery_store.h"
#include "objectstore/local_store.h"
#include "source/local/local_source.h"
#include "stream/hash_key.h"
#include "stream/model.h"
#include "stream/sequence_number.h"

namespace icestream::delivery {
namespace {

// A destination that keeps what it was given: every batch, and the records of the
// batches it accepted. Failures and held checkpoints are set by the test.
struct Recorder {
  std::mutex mu;
  std::vector<DeliveryBatch> batches;
  std::map<uint32_t, std::vector<uint64_t>> delivered;  // shard → offsets, in delivery order
  std::map<std::string, Position> held;                 // what the destination reports holding
  Status next_failure;                                  // returned (once) by the next Deliver
  bool spans = false;
  bool staged = false;  // staged(): a table's shard batches in a pool
  struct Seen {
    uint64_t offset;
    std::optional<uint32_t> sub;
    std::string key, data, error;
  };
  std::vector<Seen> seen;  // every record handed to the sink
  // Redrive batches: the records handed over (shard, sequence number, data) and spans.
  std::vector<std::tuple<std::string, std::string, std::string>> redriven;
  std::vector<std::pair<uint64_t, uint64_t>> redrive_spans;
  int64_t upkeep_due_ms = INT64_MAX;  // NextUpkeepMs
  int upkeeps = 0;                    // Upkeep calls
};

class RecordingSink final : public Sink {
 public:
  explicit RecordingSink(std::shared_ptr<Recorder> r) : r_(std::move(r)) {}
  bool spans_shards() const override { return r_->spans; }
  bool staged() const override { return r_->staged; }
  int64_t NextUpkeepMs() const override {
    std::lock_guard lock(r_->mu);
    return r_->upkeep_due_ms;
  }
  void Upkeep() override {
    std::lock_guard lock(r_->mu);
    ++r_->upkeeps;
    r_->upkeep_due_ms = INT64_MAX;
  }
  Status Check() override { return Status::OK(); }
  Result<std::map<std::string, Position>> Checkpoints() override {
    std::lock_guard lock(r_->mu);
    return r_->held;
  }
  Result<DeliveryCounts> Deliver(const DeliveryBatch& batch, RecordSource* source) override {
    std::map<uint32_t, std::vector<uint64_t>> got;
    RecordChunk chunk;
    DeliveryCounts counts;
    if (batch.redrive) {
      for (;;) {
        ASSIGN_OR_RETURN(bool more, source->Next(&chunk));
        if (!more) break;
        std::lock_guard lock(r_->mu);
        for (const auto& rec : chunk.records) {
          r_->redriven.emplace_back(batch.ranges[chunk.range].shard,
                                    std::string(rec.sequence_number), std::string(rec.data));
        }
      }
      std::lock_guard lock(r_->mu);
      r_->redrive_spans.emplace_back(batch.redrive->from, batch.redrive->to);
      if (!r_->next_failure.ok()) {
        Status st = r_->next_failure;
        r_->next_failure = Status::OK();
        return st;
      }
      counts.redrive = RedriveReport(*batch.redrive, source->Missing(), {}).after;
      return counts;
    }
    for (;;) {
      ASSIGN_OR_RETURN(bool more, source->Next(&chunk));
      if (!more) break;
      for (const auto& rec : chunk.records) {
        {
          std::lock_guard lock(r_->mu);
          r_->seen.push_back({rec.ordinal, rec.sub_sequence, std::string(rec.partition_key),
                              std::string(rec.data), rec.error});
        }
        if (rec.sub_sequence.value_or(0) > 0) continue;  // offsets once per stream record
        // The local source's ordinal is the log offset.
        got[*stream::ParseShardId(batch.ranges[chunk.range].shard)].push_back(rec.ordinal);
        ++counts.records_in;
        ++counts.delivered;
      }
    }
    std::lock_guard lock(r_->mu);
    r_->batches.push_back(batch);
    if (!r_->next_failure.ok()) {
      Status st = r_->next_failure;
      r_->next_failure = Status::OK();
      return st;
    }
    for (auto& [shard, offs] : got) {
      auto& d = r_->delivered[shard];
      d.insert(d.end(), offs.begin(), offs.end());
    }
    return counts;
  }

 private:
  std::shared_ptr<Recorder> r_;
};

class RecordingDestination final : public Destination {
 public:
  explicit RecordingDestination(std::shared_ptr<Recorder> r) : r_(std::move(r)) {}
  DestinationType type() const override { return DestinationType::kS3; }
  Status Prepare(ChannelConfig*) override { return Status::OK(); }
  Result<std::unique_ptr<Sink>> MakeSink(const ChannelConfig&, SinkEnv) override {
    return std::unique_ptr<Sink>(new RecordingSink(r_));
  }

 private:
  std::shared_ptr<Recorder> r_;
};

// The test's store, whose next Commit fails once armed (a store cut off mid-recovery);
// everything else is the SQLite store's.
class CommitFailingStore final : public DeliveryStore {
 public:
  explicit CommitFailingStore(DeliveryStore* inner) : inner_(inner) {}
  int fail_commits = 0;

  Result<std::vector<ChannelConfig>> LoadChannels() override { return inner_->LoadChannels(); }
  Status SaveChannel(const ChannelConfig& c) override { return inner_->SaveChannel(c); }
  Status RemoveChannel(const std::string& id) override { return inner_->RemoveChannel(id); }
  Result<std::map<std::string, Position>> Checkpoints(const std::string& id) override {
    return inner_->Checkpoints(id);
  }
  Status Activate(const ChannelConfig& c, const std::map<std::string, Position>& cps) override {
    return inner_->Activate(c, cps);
  }
  Result<std::map<std::string, BatchPlan>> Plans(const std::string& id) override {
    return inner_->Plans(id);
  }
  Status SavePlans(const std::string& id, const std::map<std::string, BatchPlan>& p) override {
    return inner_->SavePlans(id, p);
  }
  Status Commit(const std::string& id, const std::map<std::string, Position>& cps,
                const std::set<std::string>& finished) override {
    if (fail_commits > 0) {
      --fail_commits;
      return Unavailable("the store is out of reach");
    }
    return inner_->Commit(id, cps, finished);
  }
  Result<std::set<std::string>> FinishedShards(const std::string& id) override {
    return inner_->FinishedShards(id);
  }
  Result<nlohmann::json> LoadSinkState(const std::string& id) override {
    return inner_->LoadSinkState(id);
  }
  Status SaveSinkState(const std::string& id, const nlohmann::json& doc) override {
    return inner_->SaveSinkState(id, doc);
  }
  Result<std::vector<nlohmann::json>> LoadRedrives(const std::string& id) override {
    return inner_->LoadRedrives(id);
  }
  Status SaveRedrive(const std::string& id, const std::string& redrive_id, int64_t created_ms,
                     const nlohmann::json& doc) override {
    return inner_->SaveRedrive(id, redrive_id, created_ms, doc);
  }

 private:
  DeliveryStore* inner_;
};

// The local source, but planning at most `cap` bytes at once (MaxPlannedBytes), as a
// remote source whose reader holds that much ahead: the engine must cut batches within it.
class CappedSource final : public ShardSource {
 public:
  CappedSource(std::shared_ptr<ShardSource> inner, uint64_t cap)
      : inner_(std::move(inner)), cap_(cap) {}
  uint64_t LocalStreamUid() const override { return inner_->LocalStreamUid(); }
  Result<std::vector<SourceShard>> Shards() override { return inner_->Shards(); }
  Result<Position> StartPosition(const std::string& shard, const StartingPosition& start) override {
    return inner_->StartPosition(shard, start);
  }
  Result<ShardBacklog> Backlog(const std::string& shard, const Position& after) override {
    return inner_->Backlog(shard, after);
  }
  uint64_t MaxPlannedBytes() const override { return cap_; }
  Result<PlannedRange> PlanRange(const std::string& shard, const Position& after,
                                 uint64_t max_bytes, size_t max_records) override {
    return inner_->PlanRange(shard, after, std::min(max_bytes, cap_), max_records);
  }
  Result<std::unique_ptr<RangeReader>> OpenRange(const std::string& shard, const Position& after,
                                                 const std::string& last_sequence,
                                                 size_t chunk_bytes,
                                                 size_t chunk_records) override {
    return inner_->OpenRange(shard, after, last_sequence, chunk_bytes, chunk_records);
  }

 private:
  std::shared_ptr<ShardSource> inner_;
  uint64_t cap_;
};

class ShardRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(db_, Database::Open(dir_.Path("meta.db")));
    stream::StreamManagerOptions o;
    o.data_dir = dir_.Path();
    o.retention_check_interval_ms = 3600 * 1000;
    ASSERT_OK_AND_ASSIGN(streams_, stream::StreamManager::Open(o, &clock_, db_.get()));
    ASSERT_OK_AND_ASSIGN(store_, SqliteDeliveryStore::Open(db_.get()));
    sources_ = std::make_unique<source::LocalSourceProvider>(streams_.get());
    ASSERT_OK_AND_ASSIGN(auto info, streams_->CreateStream({.name = "s", .shard_count = 2}));
    config_.id = "chan";
    config_.name = "chan";
    config_.arn = "arn:aws:kinesis:us-east-1:000000000000:channel/chan";
    config_.stream_name = "s";
    config_.stream_uid = info.uid;
    config_.dlq.bucket_arn = "arn:aws:s3:::dlq";
    config_.dlq.error_output_prefix = "errors/";
    buckets_ = std::make_unique<objectstore::LocalObjectStore>(dir_.Path("buckets"));
    rec_ = std::make_shared<Recorder>();
    dest_ = std::make_unique<RecordingDestination>(rec_);
  }
  // With planned_bytes_cap_ > 0, MakeRunner's source says it plans at most that many bytes
  // at once (as a remote source's read-ahead buffer bounds it).
  uint64_t planned_bytes_cap_ = 0;

  void TearDown() override {
    runner_.reset();
    sources_.reset();
    streams_.reset();
    store_.reset();
    db_.reset();
  }

  void MakeRunner(RunnerOptions o = {}) {
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardSource> source, sources_->OpenSource(config_));
    if (planned_bytes_cap_ > 0) {
      source = std::make_shared<CappedSource>(std::move(source), planned_bytes_cap_);
    }
    SinkEnv env;
    env.buckets = buckets_.get();
    ASSERT_OK_AND_ASSIGN(
        auto r, ShardRunner::Make(config_, dest_.get(), source,
                                  runner_store_ ? runner_store_ : store_.get(), &clock_, o, env));
    runner_ = std::move(r);
  }

  // n records with distinct partition keys; returns shard → offsets appended.
  std::map<uint32_t, std::vector<uint64_t>> Put(int n, const std::string& tag) {
    std::vector<std::string> keys;
    for (int i = 0; i < n; ++i) keys.push_back(tag + "-" + std::to_string(i));
    std::vector<stream::PutItem> items;
    for (const auto& k : keys) items.push_back({k, k, stream::PartitionKeyHash(k)});
    std::promise<stream::PutResult> p;
    EXPECT_OK(streams_->Put("s", items, [&](stream::PutResult r) { p.set_value(std::move(r)); }));
    std::map<uint32_t, std::vector<uint64_t>> out;
    for (const auto& it : p.get_future().get().items) out[it.shard_index].push_back(it.offset);
    return out;
  }

  // Schedules and runs every due job, until none is due; returns the jobs run.
  int Drain(int64_t freshness_ms = 0) {
    int ran = 0;
    for (int round = 0; round < 50; ++round) {
      auto jobs = runner_->Schedule(clock_.NowMillis(), freshness_ms, 8);
      if (jobs.empty()) return ran;
      for (auto& j : jobs) j();
      ran += static_cast<int>(jobs.size());
    }
    return ran;
  }

  void Activate() {
    ASSERT_OK_AND_ASSIGN(auto cps, runner_->PrepareActivation({"TRIM_HORIZON", 0}));
    ASSERT_OK(store_->Activate(config_, cps));
    runner_->Activated(cps);
  }

  testing::TempDir dir_;  // first: removed after everything that writes into it
  ManualClock clock_{1'700'000'000'000};
  std::unique_ptr<Database> db_;
  std::unique_ptr<stream::StreamManager> streams_;
  std::unique_ptr<SqliteDeliveryStore> store_;
  DeliveryStore* runner_store_ = nullptr;  // the runner's store, when not store_
  std::unique_ptr<source::LocalSourceProvider> sources_;
  std::unique_ptr<objectstore::LocalObjectStore> buckets_;
  ChannelConfig config_;
  std::shared_ptr<Recorder> rec_;
  std::unique_ptr<RecordingDestination> dest_;
  std::unique_ptr<ShardRunner> runner_;
};

// The position after the first `n` records of a shard of the test stream.
#define POS(shard, n) source::LegacyPosition(config_.stream_uid, (shard), (n))
#define SHARD(shard) stream::ShardIdString(shard)

// The local source reads a range's next chunk ahead while the current one is used: every
// record still comes once and in order, chunks held meanwhile stay intact, and a reader
// dropped with a read in flight (a batch cut short) waits for it.
TEST_F(ShardRunnerTest, TheLocalSourceReadsAheadWithoutLosingOrReorderingRecords) {
  auto put = Put(400, "r");
  ASSERT_OK_AND_ASSIGN(auto source, sources_->OpenSource(config_));
  const uint32_t shard = put.begin()->first;
  const std::vector<uint64_t>& offsets = put.begin()->second;
  ASSERT_GT(offsets.size(), 50u);
  const std::string last =
      stream::SequenceNumber::ForRecord(config_.stream_uid, shard, offsets.back()).ToString();
  for (size_t after : {size_t{0}, size_t{3}}) {
    ASSERT_OK_AND_ASSIGN(auto reader, source->OpenRange(SHARD(shard), POS(shard, after), last,
                                                        /*chunk_bytes=*/1 << 20,
                                                        /*chunk_records=*/7));
    std::vector<StreamChunk> kept;  // every chunk held to the end: read-ahead must not reuse
    for (;;) {
      StreamChunk c;
      ASSERT_OK_AND_ASSIGN(bool more, reader->Next(&c));
      if (!more) break;
      EXPECT_LE(c.records.size(), 7u);
      kept.push_back(std::move(c));
    }
    size_t i = after;
    for (const auto& c : kept) {
      for (const auto& r : c.records) {
        ASSERT_LT(i, offsets.size());
        EXPECT_EQ(r.ordinal, offsets[i]);
        EXPECT_EQ(r.data, r.partition_key);  // Put writes the key as the data
        EXPECT_TRUE(r.data.starts_with("r-")) << r.data;
        ++i;
      }
    }
    EXPECT_EQ(i, offsets.size()) << "from " << after;
  }
  for (int reads = 1; reads <= 3; ++reads) {
    ASSERT_OK_AND_ASSIGN(auto reader, source->OpenRange(SHARD(shard), POS(shard, 0), last, 1 << 20,
                                                        /*chunk_records=*/5));
    StreamChunk c;
    for (int k = 0; k < reads; ++k) ASSERT_OK(reader->Next(&c).status());
  }  // each dropped with the next chunk being read
}

TEST_F(ShardRunnerTest, PerShardBatchesDeliverEveryRecordOnceAndMoveCheckpoints) {
  MakeRunner();
  auto first = Put(50, "a");
  Activate();
  auto second = Put(30, "b");
  EXPECT_GT(Drain(), 0);
  for (uint32_t shard : {0u, 1u}) {
    std::vector<uint64_t> want = first[shard];
    want.insert(want.end(), second[shard].begin(), second[shard].end());
    EXPECT_EQ(rec_->delivered[shard], want) << shard;
  }
  for (const auto& b : rec_->batches) EXPECT_EQ(b.ranges.size(), 1u);
  ASSERT_OK_AND_ASSIGN(auto cps, store_->Checkpoints(config_.id));
  for (uint32_t shard : {0u, 1u}) {
    EXPECT_EQ(cps.at(SHARD(shard)), POS(shard, first[shard].size() + second[shard].size()));
  }
  ASSERT_OK_AND_ASSIGN(auto plans, store_->Plans(config_.id));
  EXPECT_TRUE(plans.empty());
}

TEST_F(ShardRunnerTest, ASpanningSinkGetsOneBatchForAllShards) {
  rec_->spans = true;
  MakeRunner();
  Activate();
  auto put = Put(40, "c");
  EXPECT_EQ(Drain(), 1);
  ASSERT_EQ(rec_->batches.size(), 1u);
  EXPECT_EQ(rec_->batches[0].ranges.size(), 2u);
  EXPECT_EQ(rec_->delivered, put);
}

// A staged table's batch (one shard's, in a pool) is cut at a table commit's limits, not at
// a shard batch's: with 5 records a shard batch and 1,000 a table batch, 40 records over
// two shards are one batch per shard (they were batches of 5).
TEST_F(ShardRunnerTest, AStagedSinksBatchesTakeATableCommitsLimits) {
  RunnerOptions o;
  o.max_batch_records = 5;
  o.max_spanning_batch_records = 1000;
  rec_->staged = true;
  MakeRunner(o);
  Activate();
  auto put = Put(40, "t");
  ASSERT_EQ(put.size(), 2u);
  Drain();
  EXPECT_EQ(rec_->delivered, put);
  EXPECT_EQ(rec_->batches.size(), 2u);
  for (const auto& b : rec_->batches) EXPECT_EQ(b.ranges.size(), 1u);
}

// ...but never past what the source can plan at once: a worker's remote source holds 32 MiB
// per shard ahead, and a batch ripe only at 128 MiB would wait for its freshness deadline.
// With the source planning about 40 bytes at a time, a shard's 16-24 records (~7 bytes
// each) come in more than one batch; without the bound, none was ever ripe.
TEST_F(ShardRunnerTest, AStagedSinksBatchesStayWithinWhatTheSourcePlans) {
  RunnerOptions o;
  o.max_batch_records = 1000;
  o.max_spanning_batch_records = 1000;
  rec_->staged = true;
  planned_bytes_cap_ = 40;
  MakeRunner(o);
  Activate();
  auto put = Put(40, "t");
  Drain(/*freshness_ms=*/3'600'000);  // ripe only by size
  EXPECT_EQ(rec_->delivered, put);
  EXPECT_GT(rec_->batches.size(), 2u);
}

// Issue 17: a table whose stream went quiet still gets its upkeep (compaction of cold
// partitions, snapshot expiry, orphans), between batches and never beside one.
TEST_F(ShardRunnerTest, AQuietSpanningSinkGetsItsUpkeep) {
  rec_->spans = true;
  MakeRunner();
  Activate();
  auto put = Put(10, "u");
  EXPECT_EQ(Drain(), 1);  // the batch; upkeep is not due yet
  EXPECT_EQ(rec_->upkeeps, 0);
  // Quiet from now on: nothing pending at all, then one record not yet ripe.
  rec_->upkeep_due_ms = clock_.NowMillis();
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(rec_->upkeeps, 1);
  Put(1, "v");
  rec_->upkeep_due_ms = clock_.NowMillis();
  EXPECT_EQ(Drain(/*freshness_ms=*/3'600'000), 1);  // the record waits; upkeep runs
  EXPECT_EQ(rec_->upkeeps, 2);
  EXPECT_EQ(rec_->batches.size(), 1u);
}

TEST_F(ShardRunnerTest, AFailedBatchIsReplayedAsPlannedAndBacksOff) {
  rec_->spans = true;
  MakeRunner();
  Activate();
  Put(20, "d");
  rec_->next_failure = Unavailable("catalog down");
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(runner_->last_error(), "catalog down");
  EXPECT_EQ(Drain(), 0);  // backing off
  Put(20, "e");           // arrives meanwhile: not part of the replay
  clock_.Advance(60'000);
  EXPECT_GE(Drain(), 1);
  ASSERT_GE(rec_->batches.size(), 2u);
  EXPECT_EQ(rec_->batches[1].ranges, rec_->batches[0].ranges);
  EXPECT_EQ(rec_->batches[1].attempt_ms, rec_->batches[0].attempt_ms);
  EXPECT_TRUE(rec_->batches[1].replay);
  EXPECT_FALSE(rec_->batches[0].replay);
  size_t total = 0;
  for (const auto& [s, offs] : rec_->delivered) {
    total += offs.size();
    EXPECT_EQ(std::set<uint64_t>(offs.begin(), offs.end()).size(), offs.size())
        << "duplicate in shard " << s;
  }
  EXPECT_EQ(total, 40u);
}

TEST_F(ShardRunnerTest, APermanentErrorFailsTheChannel) {
  MakeRunner();
  Activate();
  Put(5, "f");
  rec_->next_failure = AlreadyExists("The table t was not created by this channel.");
  Drain();
  ASSERT_TRUE(runner_->fatal().has_value());
  EXPECT_EQ(*runner_->fatal(), "The table t was not created by this channel.");
  EXPECT_TRUE(runner_->Schedule(clock_.NowMillis(), 0, 8).empty());
}

TEST_F(ShardRunnerTest, AMissingBucketIsRetriedForTheGracePeriodThenFailsTheChannel) {
  rec_->spans = true;
  RunnerOptions o;
  o.destination_grace_ms = 20'000;
  MakeRunner(o);
  Activate();
  Put(10, "m");
  // Missing for less than the grace period: retried, then delivered.
  rec_->next_failure = NotFound("The bucket b does not exist.");
  Drain();
  EXPECT_FALSE(runner_->fatal().has_value());
  EXPECT_EQ(runner_->last_error(), "The bucket b does not exist.");
  clock_.Advance(10'000);
  Drain();
  EXPECT_FALSE(runner_->fatal().has_value());
  EXPECT_FALSE(rec_->delivered.empty());
  EXPECT_EQ(runner_->last_error(), "");
  // Missing (or refused) on every attempt for the whole grace period: FAILED, saying so.
  Put(10, "n");
  for (int i = 0; i < 40 && !runner_->fatal(); ++i) {
    rec_->next_failure = i % 2 ? FailedPrecondition("access denied") : NotFound("no bucket b");
    Drain();
    clock_.Advance(3'000);
  }
  ASSERT_TRUE(runner_->fatal().has_value());
  EXPECT_NE(runner_->fatal()->find("grace period"), std::string::npos) << *runner_->fatal();
  EXPECT_GE(clock_.NowMillis() - 1'700'000'000'000 - 10'000, 20'000);
}

TEST_F(ShardRunnerTest, APlanThatDoesNotStartAtTheCheckpointFailsTheChannel) {
  MakeRunner();
  auto put = Put(100, "g");
  Activate();  // checkpoints at 0
  // A plan that skips the first 40 records of shard 0 (what a damaged meta.db or a bug
  // would leave): it must not be followed.
  BatchPlan skipping{POS(0, 40), POS(0, put[0].size()).sequence, put[0].size() - 40, 1};
  ASSERT_OK(store_->SavePlans(config_.id, {{SHARD(0), skipping}}));
  MakeRunner();
  ASSERT_OK(runner_->Load());
  Drain();  // recovery
  Drain();
  ASSERT_TRUE(runner_->fatal().has_value());
  EXPECT_NE(runner_->fatal()->find("plan"), std::string::npos) << *runner_->fatal();
  EXPECT_TRUE(rec_->delivered.empty());
}

TEST_F(ShardRunnerTest, WhatTheDestinationHoldsWinsAfterARestart) {
  rec_->spans = true;
  MakeRunner();
  Activate();
  auto put = Put(60, "h");
  // A batch was planned and committed to the destination, but the server stopped before
  // meta.db moved the checkpoints.
  std::map<std::string, BatchPlan> plans;
  for (uint32_t s : {0u, 1u}) {
    plans[SHARD(s)] = {Position{}, POS(s, put[s].size()).sequence, put[s].size(), 7};
    rec_->held[SHARD(s)] = POS(s, put[s].size());
  }
  ASSERT_OK(store_->SavePlans(config_.id, plans));
  MakeRunner();
  ASSERT_OK(runner_->Load());
  Drain();
  EXPECT_FALSE(runner_->fatal().has_value());
  EXPECT_TRUE(rec_->batches.empty());  // nothing delivered twice
  ASSERT_OK_AND_ASSIGN(auto cps, store_->Checkpoints(config_.id));
  for (uint32_t s : {0u, 1u}) EXPECT_EQ(cps.at(SHARD(s)), POS(s, put[s].size()));
  EXPECT_TRUE(store_->Plans(config_.id)->empty());
  // New records go on from there.
  auto more = Put(10, "i");
  Drain();
  EXPECT_EQ(rec_->delivered, more);
}

TEST_F(ShardRunnerTest, ARecoveryWhoseStoreCommitFailedMovesTheShardsWhenItIsRetried) {
  rec_->spans = true;
  MakeRunner();
  Activate();
  auto put = Put(60, "r");
  std::map<std::string, BatchPlan> plans;
  for (uint32_t s : {0u, 1u}) {
    plans[SHARD(s)] = {Position{}, POS(s, put[s].size()).sequence, put[s].size(), 7};
    rec_->held[SHARD(s)] = POS(s, put[s].size());
  }
  ASSERT_OK(store_->SavePlans(config_.id, plans));
  // The restarted runner's first recovery cannot save the destination's checkpoints.
  CommitFailingStore failing(store_.get());
  failing.fail_commits = 1;
  runner_store_ = &failing;
  MakeRunner();
  ASSERT_OK(runner_->Load());
  Drain();
  ASSERT_FALSE(runner_->fatal().has_value());
  EXPECT_EQ(store_->Plans(config_.id)->size(), 2u);
  // Its retry moves the shards and drops the plans they held: nothing delivered twice.
  clock_.Advance(60'000);
  Drain();
  EXPECT_FALSE(runner_->fatal().has_value()) << *runner_->fatal();
  EXPECT_TRUE(rec_->batches.empty());
  ASSERT_OK_AND_ASSIGN(auto cps, store_->Checkpoints(config_.id));
  for (uint32_t s : {0u, 1u}) EXPECT_EQ(cps.at(SHARD(s)), POS(s, put[s].size()));
  EXPECT_TRUE(store_->Plans(config_.id)->empty());
  auto more = Put(10, "q");
  Drain();
  EXPECT_EQ(rec_->delivered, more);
  runner_.reset();  // before `failing`
}

TEST_F(ShardRunnerTest, ADestinationInsideAPlannedBatchFailsTheChannel) {
  rec_->spans = true;
  MakeRunner();
  Activate();
  auto put = Put(60, "j");
  BatchPlan plan{Position{}, POS(0, put[0].size()).sequence, put[0].size(), 7};
  ASSERT_OK(store_->SavePlans(config_.id, {{SHARD(0), plan}}));
  rec_->held[SHARD(0)] = POS(0, 3);
  MakeRunner();
  ASSERT_OK(runner_->Load());
  Drain();
  ASSERT_TRUE(runner_->fatal().has_value());
}

TEST_F(ShardRunnerTest, ChildrenWaitForTheirParents) {
  MakeRunner();
  Activate();
  auto before = Put(30, "k");
  ASSERT_OK_AND_ASSIGN(auto info, streams_->Describe("s"));
  const auto& s0 = info.shards[0];
  ASSERT_OK(
      streams_->SplitShard("s", s0.index, s0.range.start + (s0.range.end - s0.range.start) / 2));
  auto after = Put(30, "l");
  // Hold back the parent: its first batch fails, so its children must not be delivered yet.
  rec_->next_failure = Unavailable("slow");
  auto jobs = runner_->Schedule(clock_.NowMillis(), 0, 8);
  for (auto& j : jobs) j();
  for (const auto& b : rec_->batches) {
    for (const auto& r : b.ranges) {
      EXPECT_LT(*stream::ParseShardId(r.shard), 2u) << "a child was scheduled before its parent";
    }
  }
  clock_.Advance(60'000);
  Drain();
  clock_.Advance(60'000);
  Drain();
  // Every record once; a child's first batch comes after its parent's last one.
  size_t total = 0;
  for (const auto& [s, offs] : rec_->delivered) total += offs.size();
  EXPECT_EQ(total, 60u);
  size_t parent_last = 0, child_first = SIZE_MAX;
  for (size_t i = 0; i < rec_->batches.size(); ++i) {
    for (const auto& r : rec_->batches[i].ranges) {
      uint32_t index = *stream::ParseShardId(r.shard);
      if (index == s0.index) parent_last = i;
      if (index >= 2) child_first = std::min(child_first, i);
    }
  }
  EXPECT_LT(parent_last, child_first);
}

TEST_F(ShardRunnerTest, KplAggregatesReachSinksAsUserRecords) {
  MakeRunner();
  Activate();
  auto field = [](uint32_t f, std::string_view b) {
    return std::string(1, static_cast<char>(f << 3 | 2)) +
           std::string(1, static_cast<char>(b.size())) + std::string(b);
  };
  auto user = [&](int pk, std::string_view d) {
    return field(3, std::string("\x08") + static_cast<char>(pk) + field(3, d));
  };
  std::string body = field(1, "k0") + field(1, "k1") + user(1, "one") + user(0, "two");
  auto md5 = crypto::Md5(body);
  std::string agg =
      std::string(kKplMagic) + body + std::string(reinterpret_cast<const char*>(md5.data()), 16);
  std::string corrupt = agg;
  corrupt.back() ^= 1;
  std::vector<stream::PutItem> items = {{"p", agg, stream::PartitionKeyHash("p")},
                                        {"p", corrupt, stream::PartitionKeyHash("p")},
                                        {"p", "plain", stream::PartitionKeyHash("p")}};
  std::promise<stream::PutResult> p;
  ASSERT_OK(streams_->Put("s", items, [&](stream::PutResult r) { p.set_value(std::move(r)); }));
  p.get_future().get();
  Drain();
  ASSERT_EQ(rec_->seen.size(), 4u);
  EXPECT_EQ(rec_->seen[0].sub, 0u);
  EXPECT_EQ(rec_->seen[0].key, "k1");
  EXPECT_EQ(rec_->seen[0].data, "one");
  EXPECT_EQ(rec_->seen[1].sub, 1u);
  EXPECT_EQ(rec_->seen[1].key, "k0");
  EXPECT_EQ(rec_->seen[1].data, "two");
  EXPECT_EQ(rec_->seen[0].offset, rec_->seen[1].offset);
  EXPECT_FALSE(rec_->seen[2].sub.has_value());
  EXPECT_NE(rec_->seen[2].error.find("MD5"), std::string::npos);
  EXPECT_EQ(rec_->seen[3].data, "plain");
  EXPECT_TRUE(rec_->seen[3].error.empty());
}

// The retry policy: a failing attempt comes back to the scheduler (the job ends at once,
// holding no worker while it waits), the status says what failed, when and how often,
// and the channel's share of workers bounds its jobs.
TEST_F(ShardRunnerTest, FailuresBackOffWithoutHoldingWorkersAndAreReported) {
  MakeRunner();
  Activate();
  Put(40, "m");
  rec_->next_failure = Unavailable("endpoint unreachable");
  auto jobs = runner_->Schedule(clock_.NowMillis(), 0, 1);
  ASSERT_EQ(jobs.size(), 1u);  // two shards have records, but the share is one job
  for (auto& j : jobs) j();
  EXPECT_EQ(runner_->in_flight(), 0);
  auto status = runner_->StatusJson(clock_.NowMillis());
  EXPECT_EQ(status["LastError"], "endpoint unreachable");
  EXPECT_EQ(status["LastErrorAttempts"], 1);
  EXPECT_DOUBLE_EQ(status["LastErrorTimestamp"].get<double>(), clock_.NowMillis() / 1000.0);
  EXPECT_EQ(runner_->metrics().retryable_failures.load(), 1u);
  EXPECT_EQ(runner_->metrics().failing_since_ms.load(), clock_.NowMillis());
  clock_.Advance(60'000);
  Drain();
  size_t total = 0;
  for (const auto& [s, offs] : rec_->delivered) total += offs.size();
  EXPECT_EQ(total, 40u);
  EXPECT_EQ(runner_->metrics().failing_since_ms.load(), 0);
  EXPECT_FALSE(runner_->StatusJson(clock_.NowMillis()).contains("LastError"));
}

// A redrive reads each DLQ line's record back from the shard log by sequence number; one
// that retention removed is EXPIRED, unless its line carries the record (IncludeRecordData).
// A failed batch is replayed as planned; the progress survives a restart.
TEST_F(ShardRunnerTest, RedriveReadsRecordsBackAndReportsExpiredOnes) {
  rec_->spans = true;
  MakeRunner();
  auto old_put = Put(10, "old");
  clock_.Advance(2 * 3600 * 1000);  // the next records open new segments
  auto new_put = Put(10, "new");
  Activate();
  Drain();
  ASSERT_FALSE(old_put[0].empty());
  ASSERT_FALSE(new_put[0].empty());
  auto seq = [&](uint32_t shard, uint64_t offset) {
    return stream::SequenceNumber::ForRecord(config_.stream_uid, shard, offset).ToString();
  };
  auto line = [&](uint32_t shard, uint64_t offset, const char* data) {
    nlohmann::json j = {{"streamARN", "arn"},
                        {"shardId", SHARD(shard)},
                        {"sequenceNumber", seq(shard, offset)},
                        {"approximateArrivalTimestamp", FormatIso8601Ms(clock_.NowMillis())},
                        {"errorCode", "TYPE_MISMATCH"},
                        {"errorMessage", "x"},
                        {"channelARN", config_.arn},
                        {"attemptTimestamp", FormatIso8601Ms(clock_.NowMillis())}};
    if (data) {
      j["data"] = base64::Encode(data);
      j["partitionKey"] = "pk";
    }
    return j.dump() + "\n";
  };
  // Two old records (one of them with its data in the line), two new ones, and a line of
  // another channel.
  std::string body = line(0, old_put[0][0], nullptr) + line(0, new_put[0][0], nullptr) +
                     line(0, old_put[0].back(), "copy of the record") +
                     line(0, new_put[0].back(), nullptr);
  body += R"({"channelARN": "another", "shardId": "shardId-000000000000"})"
          "\n";
  ASSERT_OK(buckets_->Put("dlq", "errors/2026/01/01/00/chan-x", body));
  clock_.Advance(25 * 3600 * 1000);
  streams_->RunRetention();

  RunnerOptions o;
  o.redrive_batch_records = 3;
  MakeRunner(o);
  ASSERT_OK(runner_->Load());
  Drain();  // recovery
  auto started = runner_->StartRedrive({});
  ASSERT_OK(started);
  EXPECT_STATUS(kFailedPrecondition, runner_->StartRedrive({}));
  // The first batch fails once: it comes back as planned.
  rec_->next_failure = Unavailable("down");
  Drain();
  ASSERT_EQ(rec_->redrive_spans.size(), 1u);
  EXPECT_EQ(rec_->redrive_spans[0], (std::pair<uint64_t, uint64_t>{0, 3}));
  // A restart: the plan is in the store.
  MakeRunner(o);
  ASSERT_OK(runner_->Load());
  clock_.Advance(60'000);
  Drain();
  Drain();
  ASSERT_FALSE(runner_->fatal().has_value()) << *runner_->fatal();
  ASSERT_GE(rec_->redrive_spans.size(), 3u);
  EXPECT_EQ(rec_->redrive_spans[1], rec_->redrive_spans[0]);
  EXPECT_EQ(rec_->redrive_spans[2], (std::pair<uint64_t, uint64_t>{3, 4}));
  auto all = runner_->Redrives();
  ASSERT_EQ(all.size(), 1u);
  const RedriveState& r = all[0];
  EXPECT_EQ(r.status, RedriveStatus::kCompleted);
  EXPECT_EQ(r.total, 4u);
  EXPECT_EQ(r.lines_read, 4u);
  EXPECT_EQ(r.lines_unreadable, 0u);
  EXPECT_EQ(r.progress.delivered, 3u);
  EXPECT_EQ(r.progress.expired, 1u);
  // What the sink got in the delivered attempt (the last two spans).
  std::multiset<std::string> data;
  for (size_t i = rec_->redriven.size() - 3; i < rec_->redriven.size(); ++i) {
    data.insert(std::get<2>(rec_->redriven[i]));
  }
  EXPECT_EQ(data.count("copy of the record"), 1u);
  EXPECT_EQ(data.size(), 3u);
  for (const auto& d : data) {
    EXPECT_TRUE(d == "copy of the record" || d.rfind("new-", 0) == 0) << d;
  }
  // The worklist is in the DLQ bucket.
  EXPECT_OK(buckets_->Head("dlq", WorklistKey(config_, r.id, 0)));
}

// meta.db files of earlier versions kept offsets: they become sequence numbers, and
// delivery goes on from them without a record twice or missing.
TEST_F(ShardRunnerTest, OffsetCheckpointsOfEarlierVersionsAreConverted) {
  MakeRunner();
  Activate();
  auto put = Put(40, "n");
  ASSERT_GE(put[0].size(), 10u);
  ASSERT_OK(store_->SaveChannel(config_));
  store_.reset();
  // What an earlier version left: shard 0 delivered up to offset 5, a plan for 5..9.
  ASSERT_OK(
      db_->Exec("DELETE FROM delivery_checkpoints; DELETE FROM delivery_plans;"
                "CREATE TABLE channel_checkpoints (channel_id TEXT, stream_uid INTEGER, "
                "shard INTEGER, next_offset INTEGER);"
                "CREATE TABLE channel_plans (channel_id TEXT, stream_uid INTEGER, shard "
                "INTEGER, first_offset INTEGER, end_offset INTEGER, attempt_ms INTEGER);"));
  ASSERT_OK(db_->Query("INSERT INTO channel_checkpoints VALUES (?1, ?2, 0, 5), (?1, ?2, 1, 0)",
                       {config_.id, static_cast<int64_t>(config_.stream_uid)}));
  ASSERT_OK(db_->Query("INSERT INTO channel_plans VALUES (?1, ?2, 0, 5, 10, 77)",
                       {config_.id, static_cast<int64_t>(config_.stream_uid)}));
  ASSERT_OK_AND_ASSIGN(store_, SqliteDeliveryStore::Open(db_.get(), source::LegacyPosition));
  ASSERT_OK_AND_ASSIGN(auto cps, store_->Checkpoints(config_.id));
  EXPECT_EQ(cps.at(SHARD(0)), POS(0, 5));
  EXPECT_EQ(cps.at(SHARD(1)), Position{});
  ASSERT_OK_AND_ASSIGN(auto plans, store_->Plans(config_.id));
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans.at(SHARD(0)), (BatchPlan{POS(0, 5), POS(0, 10).sequence, 5, 77}));
  EXPECT_TRUE(db_->Query("SELECT 1 FROM channel_checkpoints").status().code() != StatusCode::kOk);
  MakeRunner();
  ASSERT_OK(runner_->Load());
  Drain();
  ASSERT_FALSE(runner_->fatal().has_value()) << *runner_->fatal();
  std::vector<uint64_t> want0(put[0].begin() + 5, put[0].end());
  EXPECT_EQ(rec_->delivered[0], want0);
  EXPECT_EQ(rec_->delivered[1], put[1]);
}

}  // namespace
}  // namespace icestream::delivery
