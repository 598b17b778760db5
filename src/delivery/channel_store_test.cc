// ChannelStore on a real SQLite file: batch plans keep their attempt time, and a data
// directory from before that column is migrated in place.
#include "delivery/channel_store.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "common/sqlite.h"

namespace icestream::delivery {
namespace {

class ChannelStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("channel-store-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
    Clean();
  }
  void TearDown() override { Clean(); }
  void Clean() {
    for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(path_.string() + ext);
  }
  std::filesystem::path path_;
};

TEST_F(ChannelStoreTest, PlanRoundTripsWithItsAttemptTime) {
  auto db = Database::Open(path_.string());
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto store = ChannelStore::Open(db->get());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ShardKey k{123456789012345, 3};
  ASSERT_TRUE((*store)->SavePlan("c1", k, {10, 20, 1788431700250}).ok());
  auto p = (*store)->LoadPlan("c1", k);
  ASSERT_TRUE(p.ok() && p->has_value());
  EXPECT_EQ((*p)->first_offset, 10u);
  EXPECT_EQ((*p)->end_offset, 20u);
  EXPECT_EQ((*p)->attempt_ms, 1788431700250);
  // Commit drops the plan and moves the checkpoint.
  ASSERT_TRUE((*store)->Commit("c1", k, 20).ok());
  p = (*store)->LoadPlan("c1", k);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->has_value());
  auto cps = (*store)->Checkpoints("c1");
  ASSERT_TRUE(cps.ok());
  EXPECT_EQ(cps->at(k), 20u);
}

TEST_F(ChannelStoreTest, OldPlanTableGainsTheColumn) {
  {
    auto db = Database::Open(path_.string());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("CREATE TABLE channel_plans (channel_id TEXT NOT NULL, stream_uid "
                            "INTEGER NOT NULL, shard INTEGER NOT NULL, first_offset INTEGER NOT "
                            "NULL, end_offset INTEGER NOT NULL, PRIMARY KEY (channel_id, "
                            "stream_uid, shard));"
                            "INSERT INTO channel_plans VALUES ('c1', 7, 0, 5, 9);")
                    .ok());
  }
  auto db = Database::Open(path_.string());
  ASSERT_TRUE(db.ok());
  auto store = ChannelStore::Open(db->get());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto p = (*store)->LoadPlan("c1", ShardKey{7, 0});
  ASSERT_TRUE(p.ok() && p->has_value()) << p.status().ToString();
  EXPECT_EQ((*p)->first_offset, 5u);
  EXPECT_EQ((*p)->end_offset, 9u);
  EXPECT_EQ((*p)->attempt_ms, 0);
  // Opening again (column present) is fine too.
  EXPECT_TRUE(ChannelStore::Open(db->get()).ok());
}

}  // namespace
}  // namespace icestream::delivery
