// A thin RAII client over plain libpq for icestream's PostgreSQL state (scale-out: the
// Iceberg JDBC catalog, shard leases, checkpoints). Every call has a deadline: queries
// are sent asynchronously (PQsendQueryParams), the socket is polled until the deadline,
// and a query still running then is cancelled (PQcancel) and reported kUnavailable.
// Errors become Status by SQLSTATE:
//
//   40001 serialization failure, 40P01 deadlock          kConflict (retry the transaction)
//   23505 unique violation                                kAlreadyExists
//   23xxx other integrity violations                      kFailedPrecondition
//   08xxx connection, 57xxx operator intervention,
//   53xxx resources, 55P03 lock not available,
//   25P03 idle-in-transaction timeout, a lost connection,
//   an expired deadline                                    kUnavailable
//   22xxx data exceptions                                 kInvalidArgument
//   anything else                                          kInternal (with the SQLSTATE)
//
// Statements use unnamed prepared statements only (safe behind pgbouncer in transaction
// mode). Parameters are text or NULL.
//
// Thread-safety: a PgConnection is used by one thread at a time; PgPool is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

struct pg_conn;
struct pg_result;

namespace icestream::pg {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;
inline Deadline After(std::chrono::milliseconds ms) { return Clock::now() + ms; }

// One statement parameter: text, or NULL.
using Param = std::optional<std::string>;

// The rows of one statement's result, as text (NULL is std::nullopt).
class PgResult {
 public:
  PgResult() = default;
  size_t rows() const { return rows_.size(); }
  size_t columns() const { return columns_; }
  const std::optional<std::string>& at(size_t row, size_t col) const { return rows_[row][col]; }
  // The text of a cell, "" for NULL.
  const std::string& text(size_t row, size_t col) const;
  int64_t integer(size_t row, size_t col) const;  // 0 for NULL or non-numbers
  bool is_null(size_t row, size_t col) const { return !rows_[row][col].has_value(); }
  // Rows a command changed (INSERT/UPDATE/DELETE), from the command tag.
  int64_t affected() const { return affected_; }

 private:
  friend class PgConnection;
  size_t columns_ = 0;
  std::vector<std::vector<std::optional<std::string>>> rows_;
  int64_t affected_ = 0;
};

// A NOTIFY that reached a connection listening on its channel (LISTEN).
struct Notification {
  std::string channel;
  std::string payload;
};

// The Status of an error result or a libpq failure (see the file comment).
Status StatusFromSqlState(std::string_view sqlstate, std::string message);

class PgConnection {
 public:
  // Connects with `conninfo` (a libpq connection string or URI) before the deadline.
  // Keepalives and a TCP user timeout are added unless the string sets them.
  static Result<std::unique_ptr<PgConnection>> Connect(const std::string& conninfo,
                                                       Deadline deadline);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Runs one statement ($1, $2, … placeholders).
  Result<PgResult> Exec(std::string_view sql, const std::vector<Param>& params, Deadline deadline);
  // Runs statements without parameters (several, separated by ';').
  Status ExecScript(std::string_view sql, Deadline deadline);

  // Sends COMMIT and waits for its answer: OK when it committed; a definite failure
  // (the server refused the commit, or the connection broke before COMMIT left this
  // process) as its status; kUnknownOutcome when COMMIT was sent and no answer came
  // (the connection broke, the deadline passed) — the caller resolves it.
  Status Commit(Deadline deadline);

  // The notifications that reached this connection (after LISTEN): those already read,
  // else the first to arrive before the deadline (none when it passes). kUnavailable
  // when the connection broke (it is then unusable).
  Result<std::vector<Notification>> Notifications(Deadline deadline);

  bool healthy() const;
  // The server's PID (pg_backend_pid), for tests and logs.
  int backend_pid() const;

 private:
  explicit PgConnection(pg_conn* conn) : conn_(conn) {}
  // Waits for the socket to become readable (or writable) before the deadline.
  Status Wait(bool write, Deadline deadline);
  Result<PgResult> Collect(Deadline deadline, bool* sent_ok);
  void Cancel();

  pg_conn* conn_;
  bool broken_ = false;  // a cancelled statement never finished: unusable
};

struct PgPoolOptions {
  std::string conninfo;
  size_t max_connections = 4;
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds statement_timeout{5000};
};

// A transaction's statements (RunInTransaction's body gets one).
class PgTx {
 public:
  explicit PgTx(PgConnection* conn, Deadline deadline) : conn_(conn), deadline_(deadline) {}
  Result<PgResult> Exec(std::string_view sql, const std::vector<Param>& params = {}) {
    return conn_->Exec(sql, params, deadline_);
  }
  // Several statements without parameters, separated by ';'.
  Status ExecScript(std::string_view sql) { return conn_->ExecScript(sql, deadline_); }
  Deadline deadline() const { return deadline_; }

 private:
  PgConnection* conn_;
  Deadline deadline_;
};

class PgPool {
 public:
  static Result<std::unique_ptr<PgPool>> Open(PgPoolOptions options);
  ~PgPool();

  // One statement outside a transaction (autocommit).
  Result<PgResult> Exec(std::string_view sql, const std::vector<Param>& params = {});

  // Runs `body` in a transaction (BEGIN … COMMIT) and commits when it succeeds. A COMMIT
  // whose answer was lost is resolved by asking the database: the transaction's id
  // (pg_current_xact_id(), taken right after BEGIN) is looked up with pg_xact_status() on
  // a new connection until it is no longer in progress — committed: OK; aborted:
  // kUnavailable (nothing happened; retry); unknown (too old, or the database cannot be
  // reached before the deadline): kUnknownOutcome. Never a blind retry.
  Status RunInTransaction(const std::function<Status(PgTx&)>& body);

  const PgPoolOptions& options() const { return options_; }

 private:
  explicit PgPool(PgPoolOptions options) : options_(std::move(options)) {}
  Result<std::unique_ptr<PgConnection>> Acquire(Deadline deadline);
  void Release(std::unique_ptr<PgConnection> conn);
  Status Resolve(const std::string& xid, Deadline deadline);

  const PgPoolOptions options_;
  std::mutex mu_;
  std::vector<std::unique_ptr<PgConnection>> idle_;
};

// Test-only fault injection (environment ICESTREAM_PG_FAILPOINT): "commit.drop_reply"
// makes the next COMMIT's answer be lost (the socket is shut down after COMMIT is sent).
void ArmFailpointForTest(const std::string& name);

}  // namespace icestream::pg
