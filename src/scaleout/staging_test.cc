// The staging store on a real PostgreSQL 15 (tests/lib/pg.py): a shard's batch is staged
// only under the shard's lease and once per start position; the commit fence deletes
// exactly the rows it commits, inside the catalog transaction, and refuses — changing
// nothing — when a row is gone or the control lease is not held.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "common/testing/status_assertions.h"
#include "delivery/coordinator.h"
#include "scaleout/pg_catalog_store.h"
#include "scaleout/pg_staging_store.h"
#include "scaleout/pg_test_env.h"
#include "scaleout/schema.h"

namespace icestream::scaleout {
namespace {

using namespace std::chrono_literals;
using delivery::table::StagedBatch;

iceberg::DataFile File(const std::string& path) {
  iceberg::DataFile f;
  f.file_path = path;
  f.partition = {iceberg::Literal::Int(491234)};
  f.record_count = 17;
  f.file_size_in_bytes = 4096;
  f.spec_id = 0;
  f.column_sizes = {{1, 100}, {2, 200}};
  f.value_counts = {{1, 17}, {2, 17}};
  f.null_value_counts = {{1, 0}, {2, 3}};
  f.nan_value_counts = {{3, 1}};
  f.lower_bounds = {{1, std::string("\x00\x01\xff", 3)}};
  f.upper_bounds = {{1, std::string("\x7f\x00", 2)}};
  f.split_offsets = {4};
  return f;
}

class StagingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pool_ = TestPgPool();
    ASSERT_NE(pool_, nullptr);
    ASSERT_OK(PgCatalogStore::EnsureSchema(pool_.get()));
    ASSERT_OK(EnsureDeliverySchema(pool_.get()));
    for (const char* t : {"icestream_lease", "icestream_worker", "icestream_staged",
                          "icestream_table_requests", "icestream_commit_log"}) {
      ASSERT_OK(pool_->Exec(std::string("DELETE FROM ") + t));
    }
  }
  // Starts a lease manager holding every unit offered for "ch" (it is alone).
  std::unique_ptr<LeaseManager> Holder(const std::vector<std::string>& units) {
    auto m = LeaseManager::Start(pool_.get(), FastLeases());
    EXPECT_OK(m);
    if (!m.ok()) return nullptr;
    (*m)->Offer("ch", units);
    auto until = std::chrono::steady_clock::now() + 8s;
    while ((*m)->Held()["ch"].size() < units.size()) {
      EXPECT_LT(std::chrono::steady_clock::now(), until) << "units not taken in time";
      if (std::chrono::steady_clock::now() >= until) break;
      std::this_thread::sleep_for(50ms);
    }
    return std::move(*m);
  }
  int64_t Rows() {
    auto r = pool_->Exec("SELECT count(*) FROM icestream_staged WHERE channel_id = 'ch'");
    EXPECT_OK(r);
    return r.ok() ? r->integer(0, 0) : -1;
  }
  std::unique_ptr<pg::PgPool> pool_;
};

TEST_F(StagingTest, StagedOnceUnderTheShardLeaseAndCommittedByTheFence) {
  auto m = Holder({"control", "shard:s1", "shard:s2"});
  ASSERT_NE(m, nullptr);
  PgStagingStore store(pool_.get(), m.get());
  StagedBatch a{"s1", {"100", std::nullopt}, "200", 17, {File("s3://wh/t/data/a.parquet")}};
  StagedBatch b{"s2", {"300", 4u}, "400", 17, {File("s3://wh/t/data/b.parquet")}};
  ASSERT_OK_AND_ASSIGN(bool fresh, store.Stage("ch", a));
  EXPECT_TRUE(fresh);
  ASSERT_OK_AND_ASSIGN(fresh, store.Stage("ch", b));
  EXPECT_TRUE(fresh);
  // A replay of the same range: refused by the row's key, nothing changes.
  StagedBatch replay = a;
  replay.files = {File("s3://wh/t/data/a-replay.parquet")};
  ASSERT_OK_AND_ASSIGN(fresh, store.Stage("ch", replay));
  EXPECT_FALSE(fresh);

  ASSERT_OK_AND_ASSIGN(auto staged, store.Staged("ch"));
  ASSERT_EQ(staged.size(), 2u);
  EXPECT_EQ(staged[0].shard, "s1");
  EXPECT_EQ(staged[0].files, a.files);  // every manifest field survives, binary bounds too
  EXPECT_EQ(staged[1].after, (delivery::Position{"300", 4u}));
  EXPECT_EQ(staged[1].files, b.files);

  // The commit fence, in a catalog transaction: the rows go with the swap.
  PgCatalogStore catalog(pool_.get(), "wh");
  auto fence = store.CommitFence("ch", staged);
  ASSERT_OK(
      catalog.RunInTransaction([&](iceberg::CatalogStore::Tx& tx) { return fence->Check(tx); }));
  EXPECT_EQ(Rows(), 0);
  ASSERT_OK_AND_ASSIGN(auto log, pool_->Exec("SELECT count(*) FROM icestream_commit_log WHERE "
                                             "channel_id = 'ch'"));
  EXPECT_EQ(log.integer(0, 0), 1);
  // Committing them again: a row is gone, so the fence refuses and the transaction (with
  // its commit-log row) is rolled back.
  EXPECT_STATUS(kFailedPrecondition, catalog.RunInTransaction([&](iceberg::CatalogStore::Tx& tx) {
    return fence->Check(tx);
  }));
  ASSERT_OK_AND_ASSIGN(log, pool_->Exec("SELECT count(*) FROM icestream_commit_log"));
  EXPECT_EQ(log.integer(0, 0), 1);
  m->Stop(true);
}

TEST_F(StagingTest, AProcessWithoutTheLeaseStagesAndCommitsNothing) {
  auto holder = Holder({"control", "shard:s1"});
  ASSERT_NE(holder, nullptr);
  PgStagingStore mine(pool_.get(), holder.get());
  StagedBatch a{"s1", {"100", std::nullopt}, "200", 17, {File("s3://wh/t/data/a.parquet")}};
  ASSERT_OK(mine.Stage("ch", a).status());

  // A process that holds none of the units.
  PgStagingStore theirs(pool_.get(), nullptr);
  StagedBatch b{"s1", {"200", std::nullopt}, "300", 17, {File("s3://wh/t/data/b.parquet")}};
  EXPECT_STATUS(kFailedPrecondition, theirs.Stage("ch", b));
  EXPECT_EQ(Rows(), 1);
  ASSERT_OK_AND_ASSIGN(auto staged, theirs.Staged("ch"));
  PgCatalogStore catalog(pool_.get(), "wh");
  auto refused = theirs.CommitFence("ch", staged);
  EXPECT_STATUS(kFailedPrecondition, catalog.RunInTransaction([&](iceberg::CatalogStore::Tx& tx) {
    return refused->Check(tx);
  }));
  EXPECT_STATUS(kFailedPrecondition, theirs.Drop("ch", staged));
  EXPECT_EQ(Rows(), 1);

  // The holder stops without handing back (a crash): once its lease expired another
  // process takes the units; the old holder is fenced and the new one commits.
  holder->Stop(/*handoff=*/false);
  ASSERT_OK_AND_ASSIGN(auto other, LeaseManager::Start(pool_.get(), FastLeases()));
  other->Offer("ch", {"control", "shard:s1"});
  auto until = std::chrono::steady_clock::now() + 8s;
  while (other->Held()["ch"].size() < 2) {
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "the units did not move";
    std::this_thread::sleep_for(50ms);
  }
  PgStagingStore next(pool_.get(), other.get());
  auto fence = next.CommitFence("ch", staged);
  EXPECT_STATUS(kFailedPrecondition, mine.Stage("ch", b));
  ASSERT_OK(
      catalog.RunInTransaction([&](iceberg::CatalogStore::Tx& tx) { return fence->Check(tx); }));
  EXPECT_EQ(Rows(), 0);

  // Requests to the table's owner are idempotent.
  ASSERT_OK(theirs.Request("ch", "v-2"));
  ASSERT_OK(next.Request("ch", "v-2"));
  ASSERT_OK_AND_ASSIGN(auto req, next.Requests("ch"));
  EXPECT_EQ(req, std::vector<std::string>{"v-2"});
  ASSERT_OK(next.DoneRequest("ch", "v-2"));
  ASSERT_OK_AND_ASSIGN(req, next.Requests("ch"));
  EXPECT_TRUE(req.empty());
  other->Stop(true);
}

// Every process learns of a staged batch at once: the stage's notification reaches the
// watchers of its channel (and only theirs), also after the listener's connection was
// killed, and never after a watcher's handle is released; a replayed stage that changes
// nothing notifies nobody.
TEST_F(StagingTest, AStagedBatchWakesTheWatchersOfItsChannel) {
  auto m = Holder({"shard:s1"});
  ASSERT_NE(m, nullptr);
  const char* conninfo = std::getenv("ICESTREAM_PG");
  ASSERT_NE(conninfo, nullptr);
  NotifyListener listener(conninfo, PgStagingStore::kStagedChannel);
  PgStagingStore store(pool_.get(), m.get(), &listener);
  std::atomic<int> mine{0}, other{0};
  auto watch = store.Watch("ch", [&] { mine.fetch_add(1); });
  auto watch_other = store.Watch("another", [&] { other.fetch_add(1); });
  ASSERT_NE(watch, nullptr);
  auto wait_for = [](const std::function<bool()>& done) {
    auto until = std::chrono::steady_clock::now() + 10s;
    while (!done() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
    return done();
  };
  ASSERT_TRUE(wait_for([&] { return listener.connects() == 1; })) << "the listener never listened";
  const int after_connect = mine.load();  // the call after connecting
  const int other_after_connect = other.load();

  StagedBatch a{"s1", {"100", std::nullopt}, "200", 17, {File("s3://wh/t/data/a.parquet")}};
  ASSERT_OK_AND_ASSIGN(bool fresh, store.Stage("ch", a));
  ASSERT_TRUE(fresh);
  ASSERT_TRUE(wait_for([&] { return mine.load() == after_connect + 1; }))
      << "no call after the batch was staged";
  // The same batch again stages nothing and notifies nobody; a notification about another
  // channel shows that everything sent before it has been handed out.
  ASSERT_OK_AND_ASSIGN(fresh, store.Stage("ch", a));
  EXPECT_FALSE(fresh);
  ASSERT_OK(pool_->Exec("SELECT pg_notify($1, 'another')", {PgStagingStore::kStagedChannel}));
  ASSERT_TRUE(wait_for([&] { return other.load() == other_after_connect + 1; }));
  EXPECT_EQ(mine.load(), after_connect + 1);

  // The listener's connection killed: it listens again, calls everyone once (what was
  // sent meanwhile is lost), and later stages reach it.
  ASSERT_OK(pool_->Exec(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'"));
  ASSERT_TRUE(wait_for([&] { return listener.connects() == 2; }))
      << "the listener did not come back";
  ASSERT_TRUE(wait_for([&] { return mine.load() == after_connect + 2; }));
  StagedBatch b{"s1", {"200", std::nullopt}, "300", 17, {File("s3://wh/t/data/b.parquet")}};
  ASSERT_OK_AND_ASSIGN(fresh, store.Stage("ch", b));
  ASSERT_TRUE(fresh);
  ASSERT_TRUE(wait_for([&] { return mine.load() == after_connect + 3; }));

  // Released: never called again.
  watch.reset();
  const int before = mine.load();
  StagedBatch c{"s1", {"300", std::nullopt}, "400", 17, {File("s3://wh/t/data/c.parquet")}};
  ASSERT_OK_AND_ASSIGN(fresh, store.Stage("ch", c));
  ASSERT_TRUE(fresh);
  ASSERT_OK(pool_->Exec("SELECT pg_notify($1, 'another')", {PgStagingStore::kStagedChannel}));
  ASSERT_TRUE(wait_for([&] { return other.load() == other_after_connect + 3; }));
  EXPECT_EQ(mine.load(), before);
  m->Stop(true);
}

}  // namespace
}  // namespace icestream::scaleout
