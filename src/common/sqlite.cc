// SQLite wrapper implementation.
#include "common/sqlite.h"

#include <sqlite3.h>

namespace icestream {
namespace {

Status SqlError(sqlite3* db, std::string_view what) {
  std::string m(what);
  m += ": ";
  m += sqlite3_errmsg(db);
  int code = sqlite3_errcode(db);
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) return Unavailable(std::move(m));
  if (code == SQLITE_CONSTRAINT) return AlreadyExists(std::move(m));
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) return Corruption(std::move(m));
  return IOError(std::move(m));
}

}  // namespace

Result<std::unique_ptr<Database>> Database::Open(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    Status st = IOError("open " + path + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
    sqlite3_close(db);
    return st;
  }
  std::unique_ptr<Database> out(new Database(db));
  sqlite3_busy_timeout(db, 5000);
  RETURN_IF_ERROR(out->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
                            "PRAGMA foreign_keys=ON;"));
  return out;
}

Database::~Database() { sqlite3_close(db_); }

Status Database::ExecLocked(std::string_view sql) {
  char* err = nullptr;
  std::string s(sql);
  if (sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "unknown error";
    sqlite3_free(err);
    return IOError("sqlite: " + m);
  }
  return Status::OK();
}

Status Database::Exec(std::string_view sql) {
  std::lock_guard lock(mu_);
  return ExecLocked(sql);
}

Result<std::vector<SqlRow>> Database::QueryLocked(std::string_view sql,
                                                  const std::vector<SqlValue>& params) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &st, nullptr) != SQLITE_OK) {
    return SqlError(db_, "prepare");
  }
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> guard(st, sqlite3_finalize);
  for (size_t i = 0; i < params.size(); ++i) {
    int idx = static_cast<int>(i + 1);
    const SqlValue& v = params[i];
    int rc;
    if (std::holds_alternative<std::nullptr_t>(v)) {
      rc = sqlite3_bind_null(st, idx);
    } else if (std::holds_alternative<int64_t>(v)) {
      rc = sqlite3_bind_int64(st, idx, std::get<int64_t>(v));
    } else if (std::holds_alternative<double>(v)) {
      rc = sqlite3_bind_double(st, idx, std::get<double>(v));
    } else {
      const auto& s = std::get<std::string>(v);
      rc = sqlite3_bind_text(st, idx, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    }
    if (rc != SQLITE_OK) return SqlError(db_, "bind");
  }
  std::vector<SqlRow> rows;
  for (;;) {
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return SqlError(db_, "step");
    int n = sqlite3_column_count(st);
    SqlRow row(static_cast<size_t>(n));
    for (int c = 0; c < n; ++c) {
      switch (sqlite3_column_type(st, c)) {
        case SQLITE_INTEGER: row[c] = static_cast<int64_t>(sqlite3_column_int64(st, c)); break;
        case SQLITE_FLOAT: row[c] = sqlite3_column_double(st, c); break;
        case SQLITE_NULL: row[c] = nullptr; break;
        default: {
          const auto* p = reinterpret_cast<const char*>(sqlite3_column_blob(st, c));
          int len = sqlite3_column_bytes(st, c);
          row[c] = std::string(p ? p : "", static_cast<size_t>(len));
        }
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<std::vector<SqlRow>> Database::Query(std::string_view sql,
                                            const std::vector<SqlValue>& params) {
  std::lock_guard lock(mu_);
  return QueryLocked(sql, params);
}

Result<std::vector<SqlRow>> Database::Tx::Query(std::string_view sql,
                                                const std::vector<SqlValue>& params) {
  return db_->QueryLocked(sql, params);
}

Status Database::Tx::Exec(std::string_view sql, const std::vector<SqlValue>& params) {
  return db_->QueryLocked(sql, params).status();
}

int64_t Database::Tx::changes() const { return sqlite3_changes(db_->db_); }

Status Database::Transaction(const std::function<Status(Tx&)>& fn) {
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(ExecLocked("BEGIN IMMEDIATE"));
  Tx tx(this);
  Status st = fn(tx);
  if (!st.ok()) {
    (void)ExecLocked("ROLLBACK");
    return st;
  }
  Status c = ExecLocked("COMMIT");
  if (!c.ok()) (void)ExecLocked("ROLLBACK");
  return c;
}

}  // namespace icestream
