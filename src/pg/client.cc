// libpq with deadlines, SQLSTATE statuses and resolved COMMITs.
#include "pg/client.h"

#include <fmt/format.h>
#include <libpq-fe.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace icestream::pg {

namespace {

std::atomic<bool> g_drop_next_commit_reply{false};

bool FailpointArmed(const char* name) {
  if (std::strcmp(name, "commit.drop_reply") == 0 && g_drop_next_commit_reply.exchange(false)) {
    return true;
  }
  const char* env = std::getenv("ICESTREAM_PG_FAILPOINT");
  return env != nullptr && std::strcmp(env, name) == 0;
}

std::string ConnMessage(pg_conn* c) {
  std::string m = c ? PQerrorMessage(c) : "out of memory";
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

int64_t Millis(Deadline d) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(d - Clock::now()).count();
  return left < 0 ? 0 : left;
}

}  // namespace

Status StatusFromSqlState(std::string_view state, std::string message) {
  std::string m = fmt::format("{} (SQLSTATE {})", message, state);
  auto cls = state.substr(0, 2);
  if (state == "40001" || state == "40P01") return Conflict(std::move(m));
  if (state == "23505") return AlreadyExists(std::move(m));
  if (cls == "23") return FailedPrecondition(std::move(m));
  if (cls == "08" || cls == "57" || cls == "53" || state == "55P03" || state == "25P03") {
    return Unavailable(std::move(m));
  }
  if (cls == "22") return InvalidArgument(std::move(m));
  return Internal(std::move(m));
}

const std::string& PgResult::text(size_t row, size_t col) const {
  static const std::string kEmpty;
  const auto& v = rows_[row][col];
  return v ? *v : kEmpty;
}

int64_t PgResult::integer(size_t row, size_t col) const {
  const auto& v = rows_[row][col];
  if (!v) return 0;
  return std::strtoll(v->c_str(), nullptr, 10);
}

namespace {

// TCP keepalives, the same on both sides of a connection (the client's in Connect, the
// server's in PgPool::Acquire): a silent peer is dropped after idle + interval x count
// (about 9 s), data left unacknowledged after the user timeout.
constexpr int kKeepaliveIdleS = 5;
constexpr int kKeepaliveIntervalS = 2;
constexpr int kKeepaliveCount = 2;
constexpr int kTcpUserTimeoutMs = 5000;

}  // namespace

Result<std::unique_ptr<PgConnection>> PgConnection::Connect(const std::string& conninfo,
                                                            Deadline deadline) {
  // Defaults first: the caller's connection string (expanded from dbname) comes last and
  // overrides them.
  const std::string idle = std::to_string(kKeepaliveIdleS);
  const std::string interval = std::to_string(kKeepaliveIntervalS);
  const std::string count = std::to_string(kKeepaliveCount);
  const std::string user_timeout = std::to_string(kTcpUserTimeoutMs);
  const char* keys[] = {"keepalives",
                        "keepalives_idle",
                        "keepalives_interval",
                        "keepalives_count",
                        "tcp_user_timeout",
                        "application_name",
                        "dbname",
                        nullptr};
  const char* values[] = {
      "1",         idle.c_str(),     interval.c_str(), count.c_str(), user_timeout.c_str(),
      "icestream", conninfo.c_str(), nullptr};
  pg_conn* c = PQconnectStartParams(keys, values, /*expand_dbname=*/1);
  if (c == nullptr) return Unavailable("connecting to PostgreSQL: out of memory");
  std::unique_ptr<PgConnection> conn(new PgConnection(c));
  // Server notices (e.g. "relation … already exists, skipping" of the idempotent DDL that
  // every joining process runs) go to the debug log, not to stderr.
  PQsetNoticeProcessor(
      c, [](void*, const char* message) { spdlog::debug("PostgreSQL: {}", message); }, nullptr);
  if (PQstatus(c) == CONNECTION_BAD) {
    return Unavailable("connecting to PostgreSQL: " + ConnMessage(c));
  }
  for (;;) {
    PostgresPollingStatusType st = PQconnectPoll(c);
    if (st == PGRES_POLLING_OK) break;
    if (st == PGRES_POLLING_FAILED)
      return Unavailable("connecting to PostgreSQL: " + ConnMessage(c));
    Status w = conn->Wait(st == PGRES_POLLING_WRITING, deadline);
    if (!w.ok()) return Unavailable("connecting to PostgreSQL: " + w.message());
  }
  return conn;
}

PgConnection::~PgConnection() {
  if (conn_) PQfinish(conn_);
}

bool PgConnection::healthy() const {
  return conn_ != nullptr && !broken_ && PQstatus(conn_) == CONNECTION_OK &&
         PQtransactionStatus(conn_) != PQTRANS_UNKNOWN;
}

int PgConnection::backend_pid() const { return conn_ ? PQbackendPID(conn_) : 0; }

Status PgConnection::Wait(bool write, Deadline deadline) {
  int fd = PQsocket(conn_);
  if (fd < 0) return Unavailable("the PostgreSQL connection has no socket");
  for (;;) {
    int64_t ms = Millis(deadline);
    if (ms <= 0) return Unavailable("the PostgreSQL call passed its deadline");
    pollfd p{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, 1000)));
    if (r > 0) return Status::OK();
    if (r < 0 && errno != EINTR) return Unavailable(std::string("poll: ") + std::strerror(errno));
  }
}

Result<std::vector<Notification>> PgConnection::Notifications(Deadline deadline) {
  std::vector<Notification> out;
  auto drain = [&] {
    while (PGnotify* n = PQnotifies(conn_)) {
      out.push_back({n->relname, n->extra ? n->extra : ""});
      PQfreemem(n);
    }
  };
  drain();  // read with an earlier statement's answer
  const int fd = PQsocket(conn_);
  while (out.empty()) {
    if (fd < 0 || broken_) {
      broken_ = true;
      return Unavailable("the PostgreSQL connection has no socket");
    }
    const int64_t ms = Millis(deadline);
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, 1000)));
    if (r < 0 && errno != EINTR) {
      broken_ = true;
      return Unavailable(std::string("poll: ") + std::strerror(errno));
    }
    if (r > 0) {
      // Readable: notifications, other asynchronous messages, or the end of the connection.
      if (PQconsumeInput(conn_) == 0 || PQstatus(conn_) == CONNECTION_BAD) {
        broken_ = true;
        return Unavailable("the PostgreSQL connection broke: " + ConnMessage(conn_));
      }
      drain();
    } else if (ms <= 0) {
      break;
    }
  }
  return out;
}

void PgConnection::Cancel() {
  // libpq's PQcancel connects, sends and waits for the server to close with no timeout:
  // towards a server that cannot be reached (a partition) it blocks for as long as TCP
  // keeps trying. So it runs on a thread of its own, never on the caller's, and at most a
  // few at a time; the statement ends by the server's statement_timeout anyway.
  static std::atomic<int> in_flight{0};
  if (in_flight.fetch_add(1) >= 4) {
    in_flight.fetch_sub(1);
    return;
  }
  PGcancel* cancel = PQgetCancel(conn_);
  if (cancel == nullptr) {
    in_flight.fetch_sub(1);
    return;
  }
  std::thread([cancel] {
    char err[256];
    (void)PQcancel(cancel, err, sizeof err);
    PQfreeCancel(cancel);
    in_flight.fetch_sub(1);
  }).detach();
}

Result<PgResult> PgConnection::Collect(Deadline deadline, bool* sent_ok) {
  // Send everything first.
  for (;;) {
    int f = PQflush(conn_);
    if (f == 0) break;
    if (f < 0) return Unavailable("sending to PostgreSQL: " + ConnMessage(conn_));
    Status w = Wait(true, deadline);
    if (!w.ok()) {
      Cancel();
      broken_ = true;  // part of a message may have left: the connection cannot go on
      return w;
    }
    if (!PQconsumeInput(conn_)) return Unavailable("PostgreSQL: " + ConnMessage(conn_));
  }
  if (sent_ok) *sent_ok = true;
  PgResult out;
  Status error;
  bool any = false;
  for (;;) {
    while (PQisBusy(conn_)) {
      Status w = Wait(false, deadline);
      if (!w.ok()) {
        // The deadline passed: cancel (in the background), and read the cancelled
        // statement's results so that the connection can be used again; if they do not
        // come within a second, the connection is given up.
        Cancel();
        Deadline grace = Clock::now() + std::chrono::milliseconds(1000);
        for (;;) {
          while (PQisBusy(conn_)) {
            if (!Wait(false, grace).ok() || !PQconsumeInput(conn_)) {
              broken_ = true;
              return w;
            }
          }
          pg_result* r = PQgetResult(conn_);
          if (r == nullptr) break;
          PQclear(r);
        }
        return w;
      }
      if (!PQconsumeInput(conn_)) {
        return Unavailable("the PostgreSQL connection broke: " + ConnMessage(conn_));
      }
    }
    pg_result* r = PQgetResult(conn_);
    if (r == nullptr) break;
    any = true;
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
      if (error.ok()) {
        out = PgResult();
        out.columns_ = static_cast<size_t>(PQnfields(r));
        int n = PQntuples(r);
        out.rows_.reserve(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) {
          std::vector<std::optional<std::string>> row(out.columns_);
          for (size_t j = 0; j < out.columns_; ++j) {
            if (!PQgetisnull(r, i, static_cast<int>(j))) {
              row[j] = std::string(PQgetvalue(r, i, static_cast<int>(j)),
                                   static_cast<size_t>(PQgetlength(r, i, static_cast<int>(j))));
            }
          }
          out.rows_.push_back(std::move(row));
        }
        const char* tag = PQcmdTuples(r);
        out.affected_ = tag && *tag ? std::strtoll(tag, nullptr, 10) : 0;
      }
    } else if (error.ok()) {
      const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
      std::string msg = PQresultErrorMessage(r);
      while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
      error = StatusFromSqlState(state ? state : "XX000", msg);
    }
    PQclear(r);
  }
  if (!error.ok()) return error;
  if (!any) return Unavailable("the PostgreSQL connection broke: " + ConnMessage(conn_));
  return out;
}

Result<PgResult> PgConnection::Exec(std::string_view sql, const std::vector<Param>& params,
                                    Deadline deadline) {
  if (broken_) return Unavailable("the PostgreSQL connection was given up after a cancel");
  std::string text(sql);
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  if (!PQsendQueryParams(conn_, text.c_str(), static_cast<int>(params.size()), nullptr,
                         values.data(), nullptr, nullptr, 0)) {
    return Unavailable("sending to PostgreSQL: " + ConnMessage(conn_));
  }
  return Collect(deadline, nullptr);
}

Status PgConnection::ExecScript(std::string_view sql, Deadline deadline) {
  std::string text(sql);
  if (!PQsendQuery(conn_, text.c_str())) {
    return Unavailable("sending to PostgreSQL: " + ConnMessage(conn_));
  }
  return Collect(deadline, nullptr).status();
}

Status PgConnection::Commit(Deadline deadline) {
  if (!PQsendQuery(conn_, "COMMIT")) {
    return Unavailable("sending COMMIT to PostgreSQL: " + ConnMessage(conn_));
  }
  // Until every byte of COMMIT has left, a failure is a certain abort.
  for (;;) {
    int f = PQflush(conn_);
    if (f == 0) break;
    if (f < 0 || !Wait(true, deadline).ok()) {
      return Unavailable("COMMIT could not be sent to PostgreSQL: " + ConnMessage(conn_));
    }
  }
  if (FailpointArmed("commit.drop_reply")) {
    // The answer is lost whatever it is: read nothing more (an answer already in the socket
    // buffer would otherwise be read, and a quick refusal then arrives intact).
    ::shutdown(PQsocket(conn_), SHUT_RDWR);
    broken_ = true;
    return UnknownOutcome(
        "COMMIT was sent but its answer was lost: the connection was cut (test failpoint)");
  }
  auto r = Collect(deadline, nullptr);
  if (r.ok()) return Status::OK();
  // An answer that says no is definite; no answer is not.
  if (healthy() && r.status().code() != StatusCode::kUnavailable) return r.status();
  return UnknownOutcome("COMMIT was sent but its answer was lost: " + r.status().message());
}

Result<std::unique_ptr<PgPool>> PgPool::Open(PgPoolOptions options) {
  std::unique_ptr<PgPool> pool(new PgPool(std::move(options)));
  // One connection now: a wrong connection string fails at start, not at first use.
  ASSIGN_OR_RETURN(auto conn, pool->Acquire(After(pool->options_.connect_timeout)));
  pool->Release(std::move(conn));
  return pool;
}

PgPool::~PgPool() = default;

Result<std::unique_ptr<PgConnection>> PgPool::Acquire(Deadline deadline) {
  {
    std::lock_guard lock(mu_);
    while (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      if (c->healthy()) return c;
    }
  }
  Deadline connect = std::min(deadline, After(options_.connect_timeout));
  ASSIGN_OR_RETURN(auto conn, PgConnection::Connect(options_.conninfo, connect));
  // Server-side bounds, so that a stopped client never holds locks for long. The timeouts
  // cover a statement that runs or waits and a transaction left idle; they do not cover a
  // backend that waits for the rest of a request (a Sync that a partition swallowed after
  // its Execute ran): only TCP can tell that its client is gone, and with the operating
  // system's defaults it tells after two hours, the statement's row locks held all along
  // (a lease row locked that long keeps its shard from every taker). So the server's
  // side of the connection probes as the client's side does (Connect's keepalives).
  auto ms = options_.statement_timeout.count();
  RETURN_IF_ERROR(conn->ExecScript(
      fmt::format("SET statement_timeout = {}; SET lock_timeout = {}; "
                  "SET idle_in_transaction_session_timeout = {}; SET tcp_keepalives_idle = {}; "
                  "SET tcp_keepalives_interval = {}; SET tcp_keepalives_count = {}; "
                  "SET tcp_user_timeout = {}",
                  ms, ms, ms * 2, kKeepaliveIdleS, kKeepaliveIntervalS, kKeepaliveCount,
                  kTcpUserTimeoutMs),
      connect));
  return conn;
}

void PgPool::Release(std::unique_ptr<PgConnection> conn) {
  if (!conn || !conn->healthy()) return;
  std::lock_guard lock(mu_);
  if (idle_.size() < options_.max_connections) idle_.push_back(std::move(conn));
}

Result<PgResult> PgPool::Exec(std::string_view sql, const std::vector<Param>& params) {
  Deadline deadline = After(options_.statement_timeout + options_.connect_timeout);
  ASSIGN_OR_RETURN(auto conn, Acquire(deadline));
  auto r = conn->Exec(sql, params, deadline);
  Release(std::move(conn));
  return r;
}

Status PgPool::RunInTransaction(const std::function<Status(PgTx&)>& body) {
  Deadline deadline = After(options_.statement_timeout + options_.connect_timeout);
  ASSIGN_OR_RETURN(auto conn, Acquire(deadline));
  RETURN_IF_ERROR(conn->ExecScript("BEGIN", deadline));
  ASSIGN_OR_RETURN(PgResult xid, conn->Exec("SELECT pg_current_xact_id()::text", {}, deadline));
  PgTx tx(conn.get(), deadline);
  Status st = body(tx);
  if (!st.ok()) {
    if (conn->healthy()) (void)conn->ExecScript("ROLLBACK", After(std::chrono::milliseconds(2000)));
    Release(std::move(conn));
    return st;
  }
  Status c = conn->Commit(deadline);
  if (c.code() == StatusCode::kUnknownOutcome) {
    conn.reset();
    spdlog::warn("PostgreSQL: {}; asking the database what became of transaction {}", c.message(),
                 xid.text(0, 0));
    return Resolve(xid.text(0, 0), After(options_.statement_timeout * 3));
  }
  Release(std::move(conn));
  return c;
}

Status PgPool::Resolve(const std::string& xid, Deadline deadline) {
  Status last = UnknownOutcome("the database could not be asked");
  while (Clock::now() < deadline) {
    auto conn = PgConnection::Connect(options_.conninfo,
                                      std::min(deadline, After(options_.connect_timeout)));
    if (conn.ok()) {
      auto r = (*conn)->Exec("SELECT pg_xact_status($1::xid8)", {xid}, deadline);
      if (r.ok()) {
        if (r->rows() == 1 && r->is_null(0, 0)) {
          return UnknownOutcome("transaction " + xid + " is too old for its status to be known");
        }
        const std::string& state = r->text(0, 0);
        if (state == "committed") return Status::OK();
        if (state == "aborted") {
          return Unavailable("transaction " + xid +
                             " was rolled back by the database (its COMMIT's answer was lost); "
                             "nothing of it happened");
        }
        last = UnknownOutcome("transaction " + xid + " is still in progress");
      } else {
        last = UnknownOutcome(r.status().message());
      }
    } else {
      last = UnknownOutcome(conn.status().message());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return last;
}

void ArmFailpointForTest(const std::string& name) {
  if (name == "commit.drop_reply") g_drop_next_commit_reply.store(true);
}

}  // namespace icestream::pg
