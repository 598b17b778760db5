// The libpq client against a real PostgreSQL 15 (tests/lib/pg.py makes a throw-away
// cluster and passes its connection string in ICESTREAM_PG): statements with parameters,
// SQLSTATEs as statuses, deadlines that cancel, transactions that roll back, a COMMIT
// whose answer is lost resolved both ways by asking the database, and migrations that
// run once.
#include "pg/client.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "common/testing/status_assertions.h"
#include "pg/migrate.h"

namespace icestream::pg {
namespace {

std::string Conninfo() {
  const char* c = std::getenv("ICESTREAM_PG");
  // A missing cluster is a failure, never a skip (run through tests/lib/pg.py).
  EXPECT_NE(c, nullptr) << "ICESTREAM_PG is not set: run this test through tests/lib/pg.py";
  return c ? c : "host=127.0.0.1 port=1";
}

class PgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PgPoolOptions o;
    o.conninfo = Conninfo();
    o.statement_timeout = std::chrono::milliseconds(3000);
    ASSERT_OK_AND_ASSIGN(pool_, PgPool::Open(o));
    const std::string table = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    table_ = "t_" + table;
    ASSERT_OK(pool_->Exec("DROP TABLE IF EXISTS " + table_));
    ASSERT_OK(pool_->Exec("CREATE TABLE " + table_ + " (k TEXT PRIMARY KEY, v TEXT)"));
  }
  int64_t Count() { return (*pool_->Exec("SELECT count(*) FROM " + table_)).integer(0, 0); }

  std::unique_ptr<PgPool> pool_;
  std::string table_;
};

TEST_F(PgTest, StatementsParametersAndSqlStates) {
  ASSERT_OK_AND_ASSIGN(auto r, pool_->Exec("INSERT INTO " + table_ + " VALUES ($1, $2), ($3, NULL)",
                                           {"a", "1", "b"}));
  EXPECT_EQ(r.affected(), 2);
  ASSERT_OK_AND_ASSIGN(auto q, pool_->Exec("SELECT k, v FROM " + table_ + " ORDER BY k"));
  ASSERT_EQ(q.rows(), 2u);
  EXPECT_EQ(q.text(0, 1), "1");
  EXPECT_TRUE(q.is_null(1, 1));
  EXPECT_STATUS(kAlreadyExists, pool_->Exec("INSERT INTO " + table_ + " VALUES ('a', 'x')"));
  EXPECT_STATUS(kInternal, pool_->Exec("SELECT * FROM no_such_table"));
  EXPECT_STATUS(kInvalidArgument, pool_->Exec("SELECT 1 / 0"));
  EXPECT_STATUS(kInvalidArgument, pool_->Exec("SELECT $1::int", {std::string("x")}));
}

TEST_F(PgTest, ADeadlineCancelsALongStatement) {
  auto start = Clock::now();
  // The server's statement_timeout (3 s here) cancels it, as the client's deadline would.
  EXPECT_STATUS(kUnavailable, pool_->Exec("SELECT pg_sleep(30)"));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  ASSERT_OK_AND_ASSIGN(auto conn,
                       PgConnection::Connect(Conninfo(), After(std::chrono::seconds(3))));
  start = Clock::now();
  EXPECT_STATUS(kUnavailable,
                conn->Exec("SELECT pg_sleep(30)", {}, After(std::chrono::milliseconds(300))));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  // The connection is still usable after the cancel.
  ASSERT_OK_AND_ASSIGN(auto one, conn->Exec("SELECT 1", {}, After(std::chrono::seconds(3))));
  EXPECT_EQ(one.text(0, 0), "1");
}

TEST_F(PgTest, TransactionsCommitOrRollBack) {
  ASSERT_OK(pool_->RunInTransaction([&](PgTx& tx) -> Status {
    return tx.Exec("INSERT INTO " + table_ + " VALUES ('a', '1')").status();
  }));
  EXPECT_EQ(Count(), 1);
  Status st = pool_->RunInTransaction([&](PgTx& tx) -> Status {
    RETURN_IF_ERROR(tx.Exec("INSERT INTO " + table_ + " VALUES ('b', '1')").status());
    return FailedPrecondition("changed my mind");
  });
  EXPECT_STATUS(kFailedPrecondition, st);
  EXPECT_EQ(Count(), 1);
  // A statement error aborts the transaction.
  EXPECT_STATUS(kAlreadyExists, pool_->RunInTransaction([&](PgTx& tx) -> Status {
    RETURN_IF_ERROR(tx.Exec("INSERT INTO " + table_ + " VALUES ('c', '1')").status());
    return tx.Exec("INSERT INTO " + table_ + " VALUES ('a', '2')").status();
  }));
  EXPECT_EQ(Count(), 1);
}

// The COMMIT left, its answer did not come back: the pool asks pg_xact_status() and
// says what really happened — here it committed.
TEST_F(PgTest, ALostCommitAnswerIsResolvedAsCommitted) {
  ArmFailpointForTest("commit.drop_reply");
  ASSERT_OK(pool_->RunInTransaction([&](PgTx& tx) -> Status {
    return tx.Exec("INSERT INTO " + table_ + " VALUES ('lost', 'reply')").status();
  }));
  EXPECT_EQ(Count(), 1);
}

// The other way: the server kills the transaction's backend before COMMIT is sent; the
// outcome is a definite failure and nothing of it is in the table.
TEST_F(PgTest, AKilledBackendIsADefiniteAbort) {
  Status st = pool_->RunInTransaction([&](PgTx& tx) -> Status {
    auto pid = tx.Exec("SELECT pg_backend_pid()");
    if (!pid.ok()) return pid.status();
    RETURN_IF_ERROR(tx.Exec("INSERT INTO " + table_ + " VALUES ('x', 'y')").status());
    auto killed = pool_->Exec("SELECT pg_terminate_backend($1)", {pid->text(0, 0)});
    EXPECT_OK(killed);
    return Status::OK();
  });
  EXPECT_NOT_OK(st);
  EXPECT_NE(st.code(), StatusCode::kUnknownOutcome) << st.ToString();
  EXPECT_EQ(Count(), 0);
}

TEST_F(PgTest, MigrationsRunOnceInOrder) {
  std::vector<std::string> steps = {"CREATE TABLE mig_a (x INT)",
                                    "ALTER TABLE mig_a ADD COLUMN y INT"};
  (void)pool_->Exec("DROP TABLE IF EXISTS mig_a");
  (void)pool_->Exec("DELETE FROM icestream_schema_version WHERE component = 'test'");
  std::vector<std::thread> ts;
  std::vector<Status> results(3);
  for (int i = 0; i < 3; ++i) {
    ts.emplace_back([&, i] { results[i] = Migrate(pool_.get(), "test", steps); });
  }
  for (auto& t : ts) t.join();
  for (const auto& r : results) EXPECT_OK(r);
  ASSERT_OK_AND_ASSIGN(auto v, pool_->Exec("SELECT version FROM icestream_schema_version WHERE "
                                           "component = 'test'"));
  EXPECT_EQ(v.integer(0, 0), 2);
  EXPECT_OK(pool_->Exec("INSERT INTO mig_a (x, y) VALUES (1, 2)"));
  // A database migrated by a newer icestream is refused.
  EXPECT_STATUS(kFailedPrecondition, Migrate(pool_.get(), "test", {steps[0]}));
}

}  // namespace
}  // namespace icestream::pg
