// Leases and the fenced delivery store on a real PostgreSQL 15 (tests/lib/pg.py): two
// takers, one winner; a fair share each; a stopped renewer's units move after its lease
// and its writes then match nothing; a takeover bumps the epoch; a handoff gives units
// back at once; and the statements behave on the database's clock.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "common/testing/status_assertions.h"
#include "delivery/coordinator.h"
#include "scaleout/lease_manager.h"
#include "scaleout/notify_listener.h"
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
                          "icestream_plans", "icestream_lease_history", "icestream_interest"}) {
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
  b->Offer("ch", units);
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

// Any change of the channel list — a process's SaveChannel, another store's removal, an
// operator's SQL — reaches the watchers of the list at once (the table's trigger and
// NOTIFY), so the pool's channel managers need not poll it every second.
TEST_F(LeaseTest, AChangeOfTheChannelListWakesItsWatchers) {
  ASSERT_OK(pool_->Exec("DELETE FROM icestream_channels"));
  const char* conninfo = std::getenv("ICESTREAM_PG");
  ASSERT_NE(conninfo, nullptr);
  NotifyListener listener(conninfo, PgDeliveryStore::kChannelsChanged);
  PgDeliveryStore watched(pool_.get(), nullptr, &listener);
  PgDeliveryStore other(pool_.get(), nullptr);  // another process (`channels --pg`)
  std::atomic<int> calls{0};
  auto watch = watched.WatchChannels([&] { calls.fetch_add(1); });
  ASSERT_NE(watch, nullptr);
  EXPECT_EQ(other.WatchChannels([] {}), nullptr) << "a store without a listener watches nothing";
  Eventually([&] { return listener.connects() == 1 && calls.load() == 1; });  // after LISTEN
  delivery::ChannelConfig c;
  c.id = "11111111-2222-3333-4444-555555555555";
  c.name = "watched";
  c.stream_name = "s";
  c.stream_arn = "arn:aws:kinesis:us-east-1:000000000000:stream/s";
  ASSERT_OK(other.SaveChannel(c));
  Eventually([&] { return calls.load() == 2; });
  ASSERT_OK(pool_->Exec("UPDATE icestream_channels SET doc = doc WHERE id = $1", {c.id}));
  Eventually([&] { return calls.load() == 3; });
  ASSERT_OK(other.RemoveChannel(c.id));
  Eventually([&] { return calls.load() == 4; });
  // Reads announce nothing.
  ASSERT_OK_AND_ASSIGN(auto list, watched.LoadChannels());
  EXPECT_TRUE(list.empty());
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(calls.load(), 4);
  watch.reset();
  ASSERT_OK(other.SaveChannel(c));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(calls.load(), 4) << "a released watch is not called";
  ASSERT_OK(other.RemoveChannel(c.id));
}

// The engine hears at once that units were taken (WatchTaken), so it schedules their work
// without waiting for its next tick; the units are held by then. A released handle is
// called no more.
TEST_F(LeaseTest, TakingUnitsCallsTheWatchersUntilTheirHandleIsReleased) {
  ASSERT_OK_AND_ASSIGN(auto a, LeaseManager::Start(pool_.get(), FastLeases()));
  std::atomic<int> calls{0};
  std::atomic<uint64_t> epoch_at_call{0};
  auto handle = a->WatchTaken([&] {
    epoch_at_call = a->HeldEpoch("ch", "shard:s2");
    calls++;
  });
  ASSERT_NE(handle, nullptr);
  a->Offer("ch", {"control", "shard:s1", "shard:s2"});
  Eventually([&] { return calls.load() >= 1; });
  EXPECT_NE(epoch_at_call.load(), 0u);
  EXPECT_EQ(Count(*a), 3u);
  handle.reset();
  const int before = calls.load();
  a->Offer("ch2", {"control"});
  Eventually([&] { return Count(*a) == 4; });
  a->CycleForTest();
  EXPECT_EQ(calls.load(), before);
}

TEST_F(LeaseTest, TwoTakersOneWinner) {
  // Takes racing from two threads, each a whole cycle (renew, rows, take): every unit ends
  // with one owner whose take was its only one (epoch 1), and neither thinks it holds a
  // unit the other holds.
  std::vector<std::string> units;
  for (int i = 0; i < 40; ++i) units.push_back(delivery::ShardUnit("s" + std::to_string(i)));
  for (const auto& u : units) {
    ASSERT_OK(pool_->Exec("INSERT INTO icestream_lease (channel_id, unit) VALUES ('c', $1)", {u}));
  }
  LeaseOptions slow = FastLeases();
  slow.renew_ms = slow.take_ms = 60000;  // only the test's cycles take
  slow.lease_ms = 120000;
  ASSERT_OK_AND_ASSIGN(auto a, LeaseManager::Start(pool_.get(), slow));
  ASSERT_OK_AND_ASSIGN(auto b, LeaseManager::Start(pool_.get(), slow));
  a->Offer("c", units);
  b->Offer("c", units);
  std::atomic<bool> go{false};
  auto race = [&](LeaseManager* m) {
    while (!go.load()) std::this_thread::yield();
    for (int i = 0; i < 5; ++i) m->CycleForTest();
  };
  std::thread ta(race, a.get()), tb(race, b.get());
  go.store(true);
  ta.join();
  tb.join();
  auto ha = a->Held()["c"], hb = b->Held()["c"];
  EXPECT_EQ(ha.size() + hb.size(), units.size());
  for (const auto& [u, e] : ha) EXPECT_EQ(hb.count(u), 0u) << u << " held by both";
  // What each believes it holds is what the rows say, and every take (an epoch bump) left
  // one history row: no take was lost or doubled by the race.
  ASSERT_OK_AND_ASSIGN(auto rows, pool_->Exec("SELECT unit, owner, epoch FROM icestream_lease "
                                              "WHERE channel_id = 'c'"));
  ASSERT_EQ(rows.rows(), units.size());
  int64_t epochs = 0;
  for (size_t i = 0; i < rows.rows(); ++i) {
    const auto& held = rows.text(i, 1) == a->owner() ? ha : hb;
    ASSERT_TRUE(rows.text(i, 1) == a->owner() || rows.text(i, 1) == b->owner()) << rows.text(i, 0);
    ASSERT_EQ(held.count(rows.text(i, 0)), 1u) << rows.text(i, 0);
    EXPECT_EQ(held.at(rows.text(i, 0)), static_cast<uint64_t>(rows.integer(i, 2)));
    epochs += rows.integer(i, 2);
  }
  ASSERT_OK_AND_ASSIGN(auto h, pool_->Exec("SELECT count(*) FROM icestream_lease_history WHERE "
                                           "channel_id = 'c' AND NOT released"));
  EXPECT_EQ(h.integer(0, 0), epochs);
  a->Stop(true);
  b->Stop(true);
}

// A process takes units only of the channels it offered (those it can deliver), and
// counts only in their shares; a channel it forgets is handed back at its next renewal.
TEST_F(LeaseTest, OnlyTheProcessesThatOfferAChannelShareIt) {
  std::vector<std::string> units = {"control", "shard:s1", "shard:s2", "shard:s3"};
  ASSERT_OK_AND_ASSIGN(auto a, LeaseManager::Start(pool_.get(), FastLeases()));
  ASSERT_OK_AND_ASSIGN(auto idle, LeaseManager::Start(pool_.get(), FastLeases()));
  idle->Offer("other", {"control"});
  a->Offer("ch", units);
  Eventually([&] { return Count(*a) == 4; });
  // Live, but not offering "ch": takes none of it, and "ch"'s share stays 4 for `a`.
  for (int i = 0; i < 3; ++i) idle->CycleForTest();
  EXPECT_EQ(idle->Held()["ch"].size(), 0u);
  EXPECT_EQ(a->Held()["ch"].size(), 4u);
  ASSERT_OK_AND_ASSIGN(auto b, LeaseManager::Start(pool_.get(), FastLeases()));
  b->Offer("ch", units);
  Eventually([&] { return a->Held()["ch"].size() == 2 && b->Held()["ch"].size() == 2; });
  EXPECT_EQ(idle->Held()["ch"].size(), 0u);
  // `a` cannot deliver "ch" any more: its units go back, and `b` takes them all.
  a->Forget("ch");
  Eventually([&] { return b->Held()["ch"].size() == 4; });
  ASSERT_OK_AND_ASSIGN(auto r, pool_->Exec("SELECT count(*) FROM icestream_interest WHERE "
                                           "worker_id = $1",
                                           {a->owner()}));
  EXPECT_EQ(r.integer(0, 0), 0);
  a->Stop(true);
  b->Stop(true);
  idle->Stop(true);
}

TEST_F(LeaseTest, AHandoffGivesUnitsBackAtOnce) {
  ASSERT_OK_AND_ASSIGN(auto a, LeaseManager::Start(pool_.get(), FastLeases()));
  a->Offer("ch", {"control", "shard:s1"});
  Eventually([&] { return Count(*a) == 2; });
  const std::string a_owner = a->owner();
  a->Stop(/*handoff=*/true);
  ASSERT_OK_AND_ASSIGN(auto r,
                       pool_->Exec("SELECT count(*) FROM icestream_lease WHERE owner IS NULL"));
  EXPECT_EQ(r.integer(0, 0), 2);
  // The history records both grants as ended, under the epochs they were held with.
  ASSERT_OK_AND_ASSIGN(auto ended, pool_->Exec("SELECT count(*) FROM icestream_lease_history h "
                                               "WHERE released AND owner = $1 AND epoch = (SELECT "
                                               "max(epoch) FROM icestream_lease l WHERE l.unit = "
                                               "h.unit AND l.channel_id = h.channel_id)",
                                               {a_owner}));
  EXPECT_EQ(ended.integer(0, 0), 2);
  ASSERT_OK_AND_ASSIGN(auto b, LeaseManager::Start(pool_.get(), FastLeases()));
  b->Offer("ch", {"control", "shard:s1"});
  b->CycleForTest();
  EXPECT_EQ(Count(*b), 2u);  // no waiting for an expiry
  b->Stop(true);
}

// A unit with a batch running is not handed over under it: over its share, a process gives
// its idle units back at once and marks the busy one draining (the engine starts no batch
// of it), and gives it back once its batch is done.
TEST_F(LeaseTest, ABusyUnitDrainsBeforeItIsHandedOver) {
  std::vector<std::string> units = {"control", "shard:s1", "shard:s2", "shard:s3"};
  ASSERT_OK_AND_ASSIGN(auto a, LeaseManager::Start(pool_.get(), FastLeases()));
  a->Offer("ch", units);
  Eventually([&] { return Count(*a) == 4; });
  for (const auto& u : {"shard:s1", "shard:s2", "shard:s3"}) a->SetBusy("ch", u, true);
  ASSERT_OK_AND_ASSIGN(auto b, LeaseManager::Start(pool_.get(), FastLeases()));
  b->Offer("ch", units);
  // a's share is 2: it gives the idle control unit back at once, and drains one shard.
  Eventually([&] {
    int draining = 0;
    for (const auto& u : {"shard:s1", "shard:s2", "shard:s3"}) draining += a->Draining("ch", u);
    return a->Held()["ch"].size() == 3 && a->Held()["ch"].count("control") == 0 && draining == 1;
  });
  std::string drained;
  for (const auto& u : {"shard:s1", "shard:s2", "shard:s3"}) {
    if (a->Draining("ch", u)) drained = u;
  }
  // While busy it stays (however many passes), and b holds only what was given.
  for (int i = 0; i < 3; ++i) a->CycleForTest();
  EXPECT_EQ(a->Held()["ch"].count(drained), 1u);
  EXPECT_EQ(b->Held()["ch"].count(drained), 0u);
  a->SetBusy("ch", drained, false);
  Eventually([&] { return b->Held()["ch"].count(drained) == 1 && a->Held()["ch"].size() == 2; });
  EXPECT_FALSE(a->Draining("ch", drained));
  a->Stop(true);
  b->Stop(true);
}

}  // namespace
}  // namespace icestream::scaleout
