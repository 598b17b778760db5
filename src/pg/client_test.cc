// The libpq client against a real PostgreSQL 15 (tests/lib/pg.py makes a throw-away
// cluster and passes its connection string in ICESTREAM_PG): statements with parameters,
// SQLSTATEs as statuses, deadlines that cancel, transactions that roll back, a COMMIT
// whose answer is lost resolved both ways by asking the database (committed, and aborted by
// a deferred constraint at COMMIT), and migrations that run once.
#include "pg/client.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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

TEST_F(PgTest, TheServerProbesAndBoundsEveryPooledSession) {
  // Read on the server, from the session itself: a backend whose client vanished without
  // closing (a partition) is dropped by TCP keepalives within seconds, not the operating
  // system's two hours, and statements, lock waits and idle transactions are bounded.
  ASSERT_OK_AND_ASSIGN(auto r,
                       pool_->Exec("SELECT current_setting('tcp_keepalives_idle'), "
                                   "current_setting('tcp_keepalives_interval'), "
                                   "current_setting('tcp_keepalives_count'), "
                                   "current_setting('tcp_user_timeout'), "
                                   "current_setting('statement_timeout'), "
                                   "current_setting('lock_timeout'), "
                                   "current_setting('idle_in_transaction_session_timeout')"));
  ASSERT_EQ(r.rows(), 1u);
  std::vector<std::string> got;
  for (size_t c = 0; c < 7; ++c) got.push_back(r.text(0, c));
  // (0 would be the operating system's defaults.)
  EXPECT_EQ(got, (std::vector<std::string>{"5", "2", "2", "5000", "3s", "3s", "6s"}));
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

// What RunInTransaction logs while the test runs (spdlog's default logger swapped for one
// that writes into a string, put back at the end): the resolution of a lost COMMIT names
// the transaction it asks about.
class CapturedLog {
 public:
  CapturedLog()
      : previous_(spdlog::default_logger()),
        logger_(std::make_shared<spdlog::logger>(
            "captured", std::make_shared<spdlog::sinks::ostream_sink_mt>(out_))) {
    logger_->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger_);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::string text() {
    logger_->flush();
    return out_.str();
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<spdlog::logger> logger_;
};

// The backend PID and transaction id of the transaction a body runs in.
struct TxIdentity {
  std::string pid;
  std::string xid;
};

Status Identify(PgTx& tx, TxIdentity* out) {
  ASSIGN_OR_RETURN(auto r, tx.Exec("SELECT pg_backend_pid()::text, pg_current_xact_id()::text"));
  out->pid = r.text(0, 0);
  out->xid = r.text(0, 1);
  return Status::OK();
}

// The COMMIT left, its answer did not come back: the pool asks pg_xact_status() and
// says what really happened — here it committed. The connection whose answer was lost is
// dropped (the pool's next statement runs on another backend), the log names the
// transaction it resolved, and the database agrees that it committed: OK came from the
// resolution, not from a COMMIT answer.
TEST_F(PgTest, ALostCommitAnswerIsResolvedAsCommitted) {
  ASSERT_OK_AND_ASSIGN(auto before, pool_->Exec("SELECT pg_backend_pid()::text"));
  CapturedLog log;
  TxIdentity tx_id;
  ArmFailpointForTest("commit.drop_reply");
  ASSERT_OK(pool_->RunInTransaction([&](PgTx& tx) -> Status {
    RETURN_IF_ERROR(Identify(tx, &tx_id));
    return tx.Exec("INSERT INTO " + table_ + " VALUES ('lost', 'reply')").status();
  }));
  // The transaction ran on the pool's idle connection, which is gone now.
  EXPECT_EQ(tx_id.pid, before.text(0, 0));
  ASSERT_OK_AND_ASSIGN(auto after, pool_->Exec("SELECT pg_backend_pid()::text"));
  EXPECT_NE(after.text(0, 0), tx_id.pid)
      << "the connection whose COMMIT answer was lost was reused";
  EXPECT_NE(log.text().find("asking the database what became of transaction " + tx_id.xid),
            std::string::npos)
      << "the lost COMMIT was not resolved; log: " << log.text();
  ASSERT_OK_AND_ASSIGN(auto state, pool_->Exec("SELECT pg_xact_status($1::xid8)", {tx_id.xid}));
  EXPECT_EQ(state.text(0, 0), "committed");
  EXPECT_EQ(Count(), 1);
}

// The other outcome of a lost answer: the database aborted the transaction at COMMIT (a
// DEFERRABLE INITIALLY DEFERRED unique constraint is only checked then). Asked with
// pg_xact_status(), the database says "aborted": RunInTransaction returns kUnavailable
// (nothing happened, retry) — neither OK nor kUnknownOutcome — and nothing of the
// transaction is in the tables. (With the answer received, the same COMMIT fails with the
// constraint's kAlreadyExists: the check at the end shows the constraint does fire.)
TEST_F(PgTest, ALostCommitAnswerIsResolvedAsAborted) {
  const std::string deferred = table_ + "_deferred";
  ASSERT_OK(pool_->Exec("DROP TABLE IF EXISTS " + deferred));
  ASSERT_OK(pool_->Exec("CREATE TABLE " + deferred + " (k TEXT, CONSTRAINT " + deferred +
                        "_k UNIQUE (k) DEFERRABLE INITIALLY DEFERRED)"));
  auto body = [&](TxIdentity* id) {
    return [&, id](PgTx& tx) -> Status {
      RETURN_IF_ERROR(Identify(tx, id));
      RETURN_IF_ERROR(tx.Exec("INSERT INTO " + table_ + " VALUES ('x', 'y')").status());
      // Both rows are accepted now; the constraint fails at COMMIT.
      return tx.Exec("INSERT INTO " + deferred + " VALUES ('twice'), ('twice')").status();
    };
  };
  CapturedLog log;
  TxIdentity tx_id;
  ArmFailpointForTest("commit.drop_reply");
  Status st = pool_->RunInTransaction(body(&tx_id));
  EXPECT_STATUS(kUnavailable, st);
  EXPECT_NE(st.message().find("rolled back by the database"), std::string::npos) << st.ToString();
  EXPECT_NE(log.text().find("asking the database what became of transaction " + tx_id.xid),
            std::string::npos)
      << "the lost COMMIT was not resolved; log: " << log.text();
  ASSERT_OK_AND_ASSIGN(auto state, pool_->Exec("SELECT pg_xact_status($1::xid8)", {tx_id.xid}));
  EXPECT_EQ(state.text(0, 0), "aborted");
  EXPECT_EQ(Count(), 0);
  EXPECT_EQ((*pool_->Exec("SELECT count(*) FROM " + deferred)).integer(0, 0), 0);

  // The same transaction with its COMMIT answer received: the database's own refusal.
  TxIdentity again;
  EXPECT_STATUS(kAlreadyExists, pool_->RunInTransaction(body(&again)));
  EXPECT_EQ(Count(), 0);
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
