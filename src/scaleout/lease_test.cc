// Leases and the fenced delivery store on a real PostgreSQL 15 (tests/lib/pg.py): two
// takers, one winner; a fair share each; a stopped renewer's units move after its lease
// and its writes then match nothing; a takeover bumps the epoch; a handoff gives units
// back at once; and the statements behave on the database's clock.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "common/testing/status_assertions.h"
#include "delivery/coordinator.h"
#include "scaleout/lease_manager.h"
#include "scaleout/pg_delivery_store.h"
#include "scaleout/pg_test_env.h"
#include "scaleout/schema.h"

namespace icestream::scaleout {
namespace {

using namespace std::chrono_literals;

class LeaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pool_ = TestPgPool();
    ASSERT_NE(pool_, nullptr);
    ASSERT_OK(EnsureDeliverySchema(pool_.get()));
    for (const char* t : {"icestream_lease", "icestream_worker", "icestream_checkpoints",
                          "icestream_plans", "icestream_lease_history"}) {
      ASSERT_OK(pool_->Exec(std::string("DELETE FROM ") + t));
    }
  }
  // Waits until `pred` holds (or fails after the deadline).
  template <typename F>
  void Eventually(F pred, std::chrono::milliseconds within = 8000ms) {
    auto until = std::chrono::steady_clock::now() + within;
    while (!pred()) {
      ASSERT_LT(std::chrono::steady_clock::now(), until) << "condition not reached in time";
      std::this_thread::sleep_for(50ms);
    }
  }
  size_t Count(const LeaseManager& m) {
    size_t n = 0;
    for (const auto& [ch, units] : m.Held()) n += units.size();
    return n;
  }
  std::unique_ptr<pg::PgPool> pool_;
};

TEST_F(LeaseTest, TwoWorkersShareTheUnitsAndTakeOverAfterAStop) {
  ASSERT_OK_AND_ASSIGN(auto a, LeaseManager::Start(pool_.get(), FastLeases()));
  std::vector<std::string> units;
  for (int i = 0; i < 6; ++i)
    units.push_back(delivery::ShardUnit("shardId-00000000000" + std::to_string(i)));
  a->Offer("ch", units);
  Eventually([&] { return Count(*a) == 6; });
  ASSERT_OK_AND_ASSIGN(auto b, LeaseManager::Start(pool_.get(), FastLeases()));
  // The first hands units over until both hold their share.
  Eventually([&] { return Count(*a) == 3 && Count(*b) == 3; });
  // Every unit has one owner, and an epoch per change of owner.
  ASSERT_OK_AND_ASSIGN(auto owners, pool_->Exec("SELECT count(DISTINCT owner), count(*) FROM "
                                                "icestream_lease WHERE owner IS NOT NULL"));
  EXPECT_EQ(owners.integer(0, 0), 2);
  EXPECT_EQ(owners.integer(0, 1), 6);

  // A fenced write with the epoch a unit had before: zero rows, refused.
  PgDeliveryStore store_a(pool_.get(), a.get());
  std::string mine;
  auto held_a = a->Held();
  for (const auto& [u, e] : held_a["ch"]) mine = u.substr(6);  // "shard:" + id
  ASSERT_OK(store_a.Commit("ch", {{mine, delivery::Position{"5", std::nullopt}}}, {}));

  // `a` stops renewing (a crash): after its lease, `b` takes everything.
  const std::string a_owner = a->owner();
  const uint64_t a_epoch = held_a["ch"][delivery::ShardUnit(mine)];
  a->Stop(/*handoff=*/false);
  Eventually([&] { return Count(*b) == 6; });
  // The database refuses a's (owner, epoch) now: a write fenced on it matches no row.
  ASSERT_OK_AND_ASSIGN(
      auto stale, pool_->Exec("SELECT 1 FROM icestream_lease WHERE channel_id = 'ch' AND unit = "
                              "$1 AND owner = $2 AND epoch = $3",
                              {delivery::ShardUnit(mine), a_owner, std::to_string(a_epoch)}));
  EXPECT_EQ(stale.rows(), 0u);
  EXPECT_STATUS(kFailedPrecondition,
                store_a.Commit("ch", {{mine, delivery::Position{"9", std::nullopt}}}, {}));
  PgDeliveryStore store_b(pool_.get(), b.get());
  auto cps = store_b.Checkpoints("ch");
  ASSERT_OK(cps);
  EXPECT_EQ(cps->at(mine), (delivery::Position{"5", std::nullopt}));
  ASSERT_OK(store_b.Commit("ch", {{mine, delivery::Position{"9", std::nullopt}}}, {}));
  // The takeover bumped the epoch; the history has a row per change of owner.
  ASSERT_OK_AND_ASSIGN(auto hist, pool_->Exec("SELECT count(*) FROM icestream_lease_history WHERE "
                                              "unit = $1",
                                              {delivery::ShardUnit(mine)}));
  EXPECT_GE(hist.integer(0, 0), 2);
  b->Stop(true);
}

TEST_F(LeaseTest, TwoTakersOneWinner) {
  ASSERT_OK(pool_->Exec("INSERT INTO icestream_lease (channel_id, unit) VALUES ('c', 'channel')"));
  ASSERT_OK_AND_ASSIGN(auto a, LeaseManager::Start(pool_.get(), FastLeases()));
  ASSERT_OK_AND_ASSIGN(auto b, LeaseManager::Start(pool_.get(), FastLeases()));
  a->CycleForTest();
  b->CycleForTest();
  a->CycleForTest();
  b->CycleForTest();
  EXPECT_EQ(Count(*a) + Count(*b), 1u);
  ASSERT_OK_AND_ASSIGN(auto r,
                       pool_->Exec("SELECT epoch FROM icestream_lease WHERE channel_id = 'c'"));
  EXPECT_EQ(r.integer(0, 0), 1);
  a->Stop(true);
  b->Stop(true);
}

TEST_F(LeaseTest, AHandoffGivesUnitsBackAtOnce) {
  ASSERT_OK_AND_ASSIGN(auto a, LeaseManager::Start(pool_.get(), FastLeases()));
  a->Offer("ch", {"control", "shard:s1"});
  Eventually([&] { return Count(*a) == 2; });
  a->Stop(/*handoff=*/true);
  ASSERT_OK_AND_ASSIGN(auto r,
                       pool_->Exec("SELECT count(*) FROM icestream_lease WHERE owner IS NULL"));
  EXPECT_EQ(r.integer(0, 0), 2);
  ASSERT_OK_AND_ASSIGN(auto b, LeaseManager::Start(pool_.get(), FastLeases()));
  b->CycleForTest();
  EXPECT_EQ(Count(*b), 2u);  // no waiting for an expiry
  b->Stop(true);
}

}  // namespace
}  // namespace icestream::scaleout
