// SqliteDeliveryStore on a real SQLite file: channels, checkpoints, plans (with their
// attempt time) and finished marks round-trip; a commit moves checkpoints and drops the
// plans of those shards in one transaction; redrive documents round-trip oldest first and
// are replaced whole; removing a channel removes everything of it.
#include "delivery/sqlite_delivery_store.h"

#include <gtest/gtest.h>

#include "common/sqlite.h"
#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"
#include "delivery/redrive.h"

namespace icestream::delivery {
namespace {

class SqliteDeliveryStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(db_, Database::Open(dir_.Path("meta.db")));
    ASSERT_OK_AND_ASSIGN(store_, SqliteDeliveryStore::Open(db_.get()));
  }
  testing::TempDir dir_;  // first: removed after everything that writes into it
  std::unique_ptr<Database> db_;
  std::unique_ptr<SqliteDeliveryStore> store_;
};

TEST_F(SqliteDeliveryStoreTest, PlansCheckpointsAndMarksRoundTrip) {
  BatchPlan plan{Position{"495", std::nullopt}, "4999", 12, 1788431700250};
  BatchPlan inside{Position{"10", 3}, "20", 2, 5};
  ASSERT_OK(store_->SavePlans("c1", {{"shardId-000000000003", plan}, {"shardId-7", inside}}));
  auto plans = store_->Plans("c1");
  ASSERT_OK(plans);
  ASSERT_EQ(plans->size(), 2u);
  EXPECT_EQ(plans->at("shardId-000000000003"), plan);
  EXPECT_EQ(plans->at("shardId-7"), inside);
  EXPECT_TRUE(store_->Plans("other")->empty());

  // The commit moves a checkpoint and drops only that shard's plan.
  ASSERT_OK(store_->Commit("c1", {{"shardId-000000000003", Position{"4999", std::nullopt}}},
                           {"shardId-000000000001"}));
  plans = store_->Plans("c1");
  ASSERT_EQ(plans->size(), 1u);
  EXPECT_EQ(plans->count("shardId-7"), 1u);
  ASSERT_OK_AND_ASSIGN(auto cps, store_->Checkpoints("c1"));
  EXPECT_EQ(cps.at("shardId-000000000003"), (Position{"4999", std::nullopt}));
  EXPECT_EQ(*store_->FinishedShards("c1"), std::set<std::string>{"shardId-000000000001"});

  // Sink notes and removal.
  ASSERT_OK(store_->SaveSinkState("c1", {{"created", true}}));
  EXPECT_EQ((*store_->LoadSinkState("c1"))["created"], true);
  EXPECT_TRUE(store_->LoadSinkState("c2")->is_null());
  ChannelConfig c;
  c.id = "c1";
  c.name = "chan";
  ASSERT_OK(store_->SaveChannel(c));
  ASSERT_EQ(store_->LoadChannels()->size(), 1u);
  ASSERT_OK(store_->RemoveChannel("c1"));
  EXPECT_TRUE(store_->LoadChannels()->empty());
  EXPECT_TRUE(store_->Plans("c1")->empty());
  EXPECT_TRUE(store_->Checkpoints("c1")->empty());
  EXPECT_TRUE(store_->FinishedShards("c1")->empty());
  EXPECT_TRUE(store_->LoadSinkState("c1")->is_null());
}

TEST_F(SqliteDeliveryStoreTest, RedrivesRoundTripOldestFirst) {
  RedriveState a;
  a.id = "b-second-id";
  a.created_ms = 100;
  a.filter.error_codes = {"VALUE_OUT_OF_RANGE"};
  a.filter.start_ms = 5;
  a.status = RedriveStatus::kInProgress;
  a.total = 40;
  a.progress = {a.id, 10, 8, 1, 1};
  a.plan = RedrivePlan{10, 17, 123456};
  RedriveState b;
  b.id = "a-first-id";
  b.created_ms = 50;
  b.status = RedriveStatus::kCompleted;
  b.progress.id = b.id;
  ASSERT_OK(store_->SaveRedrive("c1", a.id, a.created_ms, RedriveStateToJson(a)));
  ASSERT_OK(store_->SaveRedrive("c1", b.id, b.created_ms, RedriveStateToJson(b)));
  ASSERT_OK(store_->SaveRedrive("c2", "x", 1, RedriveStateToJson(b)));
  ASSERT_OK_AND_ASSIGN(auto docs, store_->LoadRedrives("c1"));
  ASSERT_EQ(docs.size(), 2u);
  auto first = RedriveStateFromJson(docs[0]);
  auto second = RedriveStateFromJson(docs[1]);
  ASSERT_OK(first);
  ASSERT_OK(second);
  EXPECT_EQ(first->id, b.id);  // by creation time, not by id
  EXPECT_EQ(second->id, a.id);
  EXPECT_EQ(second->filter.error_codes, a.filter.error_codes);
  EXPECT_EQ(second->filter.start_ms, a.filter.start_ms);
  EXPECT_FALSE(second->filter.end_ms.has_value());
  EXPECT_EQ(second->progress, a.progress);
  EXPECT_EQ(second->plan, a.plan);
  EXPECT_EQ(second->status, RedriveStatus::kInProgress);
  // A save replaces the whole document: the plan goes with the progress that moved.
  a.progress.next = 17;
  a.plan.reset();
  ASSERT_OK(store_->SaveRedrive("c1", a.id, a.created_ms, RedriveStateToJson(a)));
  second = RedriveStateFromJson((*store_->LoadRedrives("c1"))[1]);
  EXPECT_EQ(second->progress.next, 17u);
  EXPECT_FALSE(second->plan.has_value());
  ASSERT_OK(store_->RemoveChannel("c1"));
  EXPECT_TRUE(store_->LoadRedrives("c1")->empty());
  EXPECT_EQ(store_->LoadRedrives("c2")->size(), 1u);
}

TEST_F(SqliteDeliveryStoreTest, OldOffsetTablesNeedAConverter) {
  store_.reset();
  ASSERT_OK(
      db_->Exec("CREATE TABLE channel_checkpoints (channel_id TEXT, stream_uid INTEGER, "
                "shard INTEGER, next_offset INTEGER)"));
  EXPECT_STATUS(kFailedPrecondition, SqliteDeliveryStore::Open(db_.get()));
}

}  // namespace
}  // namespace icestream::delivery
