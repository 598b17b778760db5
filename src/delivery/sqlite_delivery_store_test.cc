// SqliteDeliveryStore on a real SQLite file: channels, checkpoints, plans (with their
// attempt time) and finished marks round-trip; a commit moves checkpoints and drops the
// plans of those shards in one transaction; removing a channel removes everything of it.
#include "delivery/sqlite_delivery_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "common/sqlite.h"

namespace icestream::delivery {
namespace {

class SqliteDeliveryStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("delivery-store-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
    Clean();
    db_ = std::move(Database::Open(path_.string())).value();
    store_ = std::move(SqliteDeliveryStore::Open(db_.get())).value();
  }
  void TearDown() override {
    store_.reset();
    db_.reset();
    Clean();
  }
  void Clean() {
    for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(path_.string() + ext);
  }
  std::filesystem::path path_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<SqliteDeliveryStore> store_;
};

TEST_F(SqliteDeliveryStoreTest, PlansCheckpointsAndMarksRoundTrip) {
  BatchPlan plan{Position{"495", std::nullopt}, "4999", 12, 1788431700250};
  BatchPlan inside{Position{"10", 3}, "20", 2, 5};
  ASSERT_TRUE(
      store_->SavePlans("c1", {{"shardId-000000000003", plan}, {"shardId-7", inside}}).ok());
  auto plans = store_->Plans("c1");
  ASSERT_TRUE(plans.ok()) << plans.status().ToString();
  ASSERT_EQ(plans->size(), 2u);
  EXPECT_EQ(plans->at("shardId-000000000003"), plan);
  EXPECT_EQ(plans->at("shardId-7"), inside);
  EXPECT_TRUE(store_->Plans("other")->empty());

  // The commit moves a checkpoint and drops only that shard's plan.
  ASSERT_TRUE(store_
                  ->Commit("c1", {{"shardId-000000000003", Position{"4999", std::nullopt}}},
                           {"shardId-000000000001"})
                  .ok());
  plans = store_->Plans("c1");
  ASSERT_EQ(plans->size(), 1u);
  EXPECT_EQ(plans->count("shardId-7"), 1u);
  auto cps = store_->Checkpoints("c1");
  ASSERT_TRUE(cps.ok());
  EXPECT_EQ(cps->at("shardId-000000000003"), (Position{"4999", std::nullopt}));
  EXPECT_EQ(*store_->FinishedShards("c1"), std::set<std::string>{"shardId-000000000001"});

  // Sink notes and removal.
  ASSERT_TRUE(store_->SaveSinkState("c1", {{"created", true}}).ok());
  EXPECT_EQ((*store_->LoadSinkState("c1"))["created"], true);
  EXPECT_TRUE(store_->LoadSinkState("c2")->is_null());
  ChannelConfig c;
  c.id = "c1";
  c.name = "chan";
  ASSERT_TRUE(store_->SaveChannel(c).ok());
  ASSERT_EQ(store_->LoadChannels()->size(), 1u);
  ASSERT_TRUE(store_->RemoveChannel("c1").ok());
  EXPECT_TRUE(store_->LoadChannels()->empty());
  EXPECT_TRUE(store_->Plans("c1")->empty());
  EXPECT_TRUE(store_->Checkpoints("c1")->empty());
  EXPECT_TRUE(store_->FinishedShards("c1")->empty());
  EXPECT_TRUE(store_->LoadSinkState("c1")->is_null());
}

TEST_F(SqliteDeliveryStoreTest, OldOffsetTablesNeedAConverter) {
  store_.reset();
  ASSERT_TRUE(db_->Exec("CREATE TABLE channel_checkpoints (channel_id TEXT, stream_uid INTEGER, "
                        "shard INTEGER, next_offset INTEGER)")
                  .ok());
  EXPECT_EQ(SqliteDeliveryStore::Open(db_.get()).status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace icestream::delivery
