// StreamManager on real files and a real SQLite database.
#include "stream/stream_manager.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <future>
#include <thread>

#include "common/fs.h"
#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"

namespace icestream::stream {
namespace {

class StreamManagerTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void TearDown() override {
    mgr_.reset();
    db_.reset();
  }
  void Reopen() {
    mgr_.reset();
    db_.reset();
    ASSERT_OK_AND_ASSIGN(db_, Database::Open((dir_ / "meta.db").string()));
    StreamManagerOptions o;
    o.data_dir = dir_.string();
    o.retention_check_interval_ms = 3600 * 1000;
    o.shard_limit = 50;
    ASSERT_OK_AND_ASSIGN(mgr_, StreamManager::Open(o, &clock_, db_.get()));
  }
  PutResult PutSync(const std::string& name, const std::vector<std::string>& keys) {
    std::vector<PutItem> items;
    std::vector<std::string> data;
    for (const auto& k : keys) data.push_back("data-" + k);
    for (size_t i = 0; i < keys.size(); ++i) {
      items.push_back({keys[i], data[i], PartitionKeyHash(keys[i])});
    }
    std::promise<PutResult> p;
    Status st = mgr_->Put(name, items, [&](PutResult r) { p.set_value(std::move(r)); });
    EXPECT_OK(st);
    return p.get_future().get();
  }
  uint32_t ShardFor(const StreamInfo& info, const std::string& key) {
    uint128 h = PartitionKeyHash(key);
    for (const auto& s : info.shards) {
      if (s.open() && s.range.Contains(h)) return s.index;
    }
    return UINT32_MAX;
  }

  testing::TempDir tmp_;  // first: outlives the manager and its database
  std::filesystem::path dir_ = tmp_.path();
  ManualClock clock_{1'700'000'000'000};
  std::unique_ptr<Database> db_;
  std::unique_ptr<StreamManager> mgr_;
};

TEST_F(StreamManagerTest, CreateDescribeDeleteAndRestart) {
  ASSERT_OK_AND_ASSIGN(auto info, mgr_->CreateStream({.name = "s1", .shard_count = 3}));
  EXPECT_EQ(info.shards.size(), 3u);
  EXPECT_EQ(info.arn, "arn:aws:kinesis:us-east-1:000000000000:stream/s1");
  EXPECT_STATUS(kAlreadyExists, mgr_->CreateStream({.name = "s1", .shard_count = 1}));
  ASSERT_OK_AND_ASSIGN(auto od, mgr_->CreateStream({.name = "od", .mode = StreamMode::kOnDemand}));
  EXPECT_EQ(od.shards.size(), 4u);
  EXPECT_EQ(mgr_->Totals().open_shards, 7u);
  Reopen();
  ASSERT_OK_AND_ASSIGN(auto again, mgr_->Describe("s1"));
  EXPECT_EQ(again.uid, info.uid);
  EXPECT_EQ(mgr_->ListStreams().size(), 2u);
  ASSERT_OK(mgr_->DeleteStream("s1"));
  EXPECT_STATUS(kNotFound, mgr_->Describe("s1"));
  EXPECT_FALSE(fs::Exists((dir_ / "streams" / std::to_string(info.uid)).string()));
  Reopen();
  EXPECT_EQ(mgr_->ListStreams().size(), 1u);
}

TEST_F(StreamManagerTest, ShardQuotaIsEnforced) {
  ASSERT_OK(mgr_->CreateStream({.name = "a", .shard_count = 48}));
  auto r = mgr_->CreateStream({.name = "b", .shard_count = 3});
  EXPECT_STATUS(kResourceExhausted, r);
  EXPECT_NE(r.status().message().find("shard limit"), std::string::npos);
}

TEST_F(StreamManagerTest, PutRoutesByHashAndReadsBack) {
  auto info = *mgr_->CreateStream({.name = "s", .shard_count = 4});
  std::vector<std::string> keys;
  for (int i = 0; i < 200; ++i) keys.push_back("key-" + std::to_string(i));
  auto res = PutSync("s", keys);
  ASSERT_EQ(res.items.size(), keys.size());
  std::map<uint32_t, std::vector<std::string>> per_shard;
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_OK(res.items[i].error);
    EXPECT_EQ(res.items[i].shard_index, ShardFor(info, keys[i]));
    per_shard[res.items[i].shard_index].push_back(keys[i]);
  }
  EXPECT_EQ(per_shard.size(), 4u);
  for (auto& [shard, ks] : per_shard) {
    ASSERT_OK_AND_ASSIGN(auto r, mgr_->Read("s", info.uid, shard, 0, 10000, 10 << 20));
    ASSERT_EQ(r.records.size(), ks.size());
    for (size_t i = 0; i < ks.size(); ++i) {
      EXPECT_EQ(r.records[i].partition_key, ks[i]);
      EXPECT_EQ(r.records[i].data, "data-" + ks[i]);
    }
    EXPECT_FALSE(r.shard_end);
    EXPECT_EQ(r.millis_behind_latest, 0);
  }
  // A reader of the wrong incarnation of the stream is refused.
  EXPECT_STATUS(kNotFound, mgr_->Read("s", info.uid + 1, 0, 0, 1, 1));
}

TEST_F(StreamManagerTest, SplitAndMerge) {
  auto info = *mgr_->CreateStream({.name = "s", .shard_count = 2});
  PutSync("s", {"a", "b", "c", "d"});
  uint128 mid = info.shards[0].range.end / 2;
  EXPECT_STATUS(kInvalidArgument, mgr_->SplitShard("s", 0, info.shards[0].range.start + 1));
  ASSERT_OK(mgr_->SplitShard("s", 0, mid));
  auto after = *mgr_->Describe("s");
  ASSERT_EQ(after.shards.size(), 4u);
  EXPECT_FALSE(after.FindShard(0)->open());
  EXPECT_TRUE(after.FindShard(0)->end_offset.has_value());
  EXPECT_EQ(*after.FindShard(2)->parent, 0u);
  EXPECT_EQ(after.FindShard(2)->range.end, mid - 1);
  EXPECT_EQ(after.FindShard(3)->range.start, mid);
  EXPECT_STATUS(kFailedPrecondition, mgr_->SplitShard("s", 0, mid));
  // Reading the closed parent to its end reports the children.
  auto r = *mgr_->Read("s", after.uid, 0, 0, 1000, 1 << 20);
  uint64_t n = r.records.size();
  auto end = *mgr_->Read("s", after.uid, 0, n, 1000, 1 << 20);
  EXPECT_TRUE(end.shard_end);
  EXPECT_EQ(end.children.size(), 2u);
  // Non-adjacent merge fails; so does an adjacent pair given upper shard first (AWS:
  // ShardToMerge is the lower-range shard).
  EXPECT_STATUS(kInvalidArgument, mgr_->MergeShards("s", 2, 1));
  EXPECT_STATUS(kInvalidArgument, mgr_->MergeShards("s", 3, 2));
  EXPECT_EQ(mgr_->Describe("s")->OpenShardCount(), 3u);
  ASSERT_OK(mgr_->MergeShards("s", 2, 3));
  auto merged = *mgr_->Describe("s");
  const ShardInfo* child = merged.FindShard(4);
  ASSERT_TRUE(child);
  EXPECT_EQ(*child->parent, 2u);
  EXPECT_EQ(*child->adjacent_parent, 3u);
  EXPECT_EQ(child->range.start, 0u);
  EXPECT_EQ(merged.OpenShardCount(), 2u);
  // New writes land on the new shards; the topology survives a restart.
  auto res = PutSync("s", {"a", "b", "c"});
  for (const auto& it : res.items) EXPECT_TRUE(it.shard_index == 1 || it.shard_index == 4);
  Reopen();
  EXPECT_EQ(mgr_->Describe("s")->shards.size(), 5u);
}

TEST_F(StreamManagerTest, UpdateShardCountKeepsSpaceCoveredAndParentsValid) {
  for (auto [from, to] :
       std::vector<std::pair<uint32_t, uint32_t>>{{4, 8}, {8, 4}, {3, 5}, {5, 3}, {4, 7}}) {
    std::string name = "s" + std::to_string(from) + "-" + std::to_string(to);
    ASSERT_OK(mgr_->CreateStream({.name = name, .shard_count = from}));
    ASSERT_OK_AND_ASSIGN(auto prev, mgr_->UpdateShardCount(name, to));
    EXPECT_EQ(prev, from);
    auto info = *mgr_->Describe(name);
    std::vector<HashRange> open;
    for (const auto& s : info.shards) {
      if (s.open()) open.push_back(s.range);
      // Every shard has at most two parents, and two parents are adjacent.
      if (s.parent && s.adjacent_parent) {
        auto* a = info.FindShard(*s.parent);
        auto* b = info.FindShard(*s.adjacent_parent);
        ASSERT_TRUE(a && b);
        EXPECT_TRUE(a->range.end + 1 == b->range.start || b->range.end + 1 == a->range.start);
      }
    }
    std::sort(open.begin(), open.end(),
              [](const HashRange& a, const HashRange& b) { return a.start < b.start; });
    EXPECT_EQ(open, EvenSplit(to)) << name;
    ASSERT_OK(mgr_->DeleteStream(name));
  }
  ASSERT_OK(mgr_->CreateStream({.name = "x", .shard_count = 4}));
  EXPECT_STATUS(kInvalidArgument, mgr_->UpdateShardCount("x", 9));
  EXPECT_STATUS(kInvalidArgument, mgr_->UpdateShardCount("x", 1));
}

// UpdateStreamMode once took the manager's lock while holding a stream's lock, the
// opposite order of ShardLogFor/ListStreams/Totals: the server hung within a second.
TEST_F(StreamManagerTest, ModeChangesDoNotDeadlockWithReaders) {
  auto info = *mgr_->CreateStream({.name = "m", .mode = StreamMode::kOnDemand});
  std::atomic<bool> stop{false};
  std::thread readers([&] {
    while (!stop) {
      (void)mgr_->ShardLogFor(info.uid, 0);
      (void)mgr_->ListStreams();
      (void)mgr_->Totals();
    }
  });
  for (int i = 0; i < 300; ++i) {
    ASSERT_OK(
        mgr_->UpdateStreamMode("m", i % 2 ? StreamMode::kOnDemand : StreamMode::kProvisioned));
  }
  stop = true;
  readers.join();
}

TEST_F(StreamManagerTest, RetentionExpiresClosedShards) {
  auto info = *mgr_->CreateStream({.name = "s", .shard_count = 1});
  PutSync("s", {"a"});
  ASSERT_OK(mgr_->SplitShard("s", 0, kUint128Max / 2));
  mgr_->RunRetention();
  EXPECT_EQ(mgr_->Describe("s")->shards.size(), 3u);
  clock_.Advance(25 * 3600 * 1000LL);
  // A reader that still needs shard 0 keeps it.
  mgr_->SetRetentionFloor([](uint64_t, uint32_t shard) { return shard == 0 ? 0 : UINT64_MAX; });
  mgr_->RunRetention();
  EXPECT_EQ(mgr_->Describe("s")->shards.size(), 3u);
  mgr_->SetRetentionFloor(nullptr);
  mgr_->RunRetention();
  auto after = *mgr_->Describe("s");
  EXPECT_EQ(after.shards.size(), 2u);
  EXPECT_STATUS(kNotFound, mgr_->Bounds("s", info.uid, 0));
}

TEST(StreamArnTest, ParsesPartsAndRefusesOtherResources) {
  auto a = ParseStreamArn("arn:aws-cn:kinesis:cn-north-1:123456789012:stream/orders/consumer/x:1");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->partition, "aws-cn");
  EXPECT_EQ(a->region, "cn-north-1");
  EXPECT_EQ(a->account, "123456789012");
  EXPECT_EQ(a->name, "orders");
  EXPECT_EQ(ParseStreamArn(StreamArn("us-east-1", "000000000000", "s"))->name, "s");
  EXPECT_FALSE(ParseStreamArn("arn:aws:kinesis:us-east-1:000000000000:channel/abc"));
  EXPECT_FALSE(ParseStreamArn("arn:aws:s3:us-east-1:000000000000:stream/x"));
  EXPECT_FALSE(ParseStreamArn("arn:aws:kinesis:us-east-1:000000000000:stream/"));
  EXPECT_FALSE(ParseStreamArn("orders"));
}

// Tip readers wait per shard: a Put wakes the readers of the shards it wrote to and
// nobody else (issue 19: every Put used to wake every subscriber of every stream).
TEST_F(StreamManagerTest, AppendsWakeOnlyTheirShardsReaders) {
  ASSERT_OK(mgr_->CreateStream({.name = "a", .shard_count = 2}));
  ASSERT_OK(mgr_->CreateStream({.name = "b", .shard_count = 1}));
  auto a = *mgr_->Describe("a");
  auto b = *mgr_->Describe("b");
  std::string key0, key1;
  for (int i = 0; key0.empty() || key1.empty(); ++i) {
    std::string k = "k" + std::to_string(i);
    (ShardFor(a, k) == 0 ? key0 : key1) = k;
  }
  auto log0 = *mgr_->ShardLogFor(a.uid, 0);
  auto log1 = *mgr_->ShardLogFor(a.uid, 1);
  std::atomic<int> woke0{0}, woke1{0};
  mgr_->WhenAppended(a.uid, 0, *log0, log0->committed_end(), [&] { ++woke0; });
  mgr_->WhenAppended(a.uid, 1, *log1, log1->committed_end(), [&] { ++woke1; });
  PutSync("b", {"x", "y", "z"});  // another stream
  PutSync("a", {key1});           // the other shard
  EXPECT_EQ(woke0.load(), 0);
  EXPECT_EQ(woke1.load(), 1);
  PutSync("a", {key0});
  EXPECT_EQ(woke0.load(), 1);
  // Once: a callback is spent by the append that fired it.
  PutSync("a", {key0, key1});
  EXPECT_EQ(woke0.load(), 1);
  EXPECT_EQ(woke1.load(), 1);
  // Already past the known end: called at once.
  mgr_->WhenAppended(a.uid, 0, *log0, 0, [&] { ++woke0; });
  EXPECT_EQ(woke0.load(), 2);
  // Deleting the stream wakes its readers (they then see it gone).
  mgr_->WhenAppended(a.uid, 1, *log1, log1->committed_end(), [&] { ++woke1; });
  ASSERT_OK(mgr_->DeleteStream("a"));
  EXPECT_EQ(woke1.load(), 2);
}

}  // namespace
}  // namespace icestream::stream
