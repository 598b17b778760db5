// A small RAII wrapper over SQLite for metadata (streams, channels, checkpoints,
// registry, catalog). One connection per database file, serialized by a mutex; WAL mode
// with synchronous=FULL so a committed transaction survives power loss.
//
// Thread-safety: every method may be called from any thread; calls are serialized.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace icestream {

using SqlValue = std::variant<std::nullptr_t, int64_t, double, std::string>;
using SqlRow = std::vector<SqlValue>;

class Database {
 public:
  static Result<std::unique_ptr<Database>> Open(const std::string& path);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs one or more statements without parameters (schema setup).
  Status Exec(std::string_view sql);
  // Runs one statement with positional parameters (?1, ?2, ...); returns all rows.
  Result<std::vector<SqlRow>> Query(std::string_view sql, const std::vector<SqlValue>& params = {});
  // Runs `fn` inside BEGIN IMMEDIATE ... COMMIT; rolls back when fn fails. Nested calls
  // from fn must use the Tx methods (the mutex is held).
  class Tx {
   public:
    Result<std::vector<SqlRow>> Query(std::string_view sql, const std::vector<SqlValue>& params = {});
    Status Exec(std::string_view sql, const std::vector<SqlValue>& params = {});
    int64_t changes() const;

   private:
    friend class Database;
    explicit Tx(Database* db) : db_(db) {}
    Database* db_;
  };
  Status Transaction(const std::function<Status(Tx&)>& fn);

 private:
  explicit Database(sqlite3* db) : db_(db) {}
  Result<std::vector<SqlRow>> QueryLocked(std::string_view sql, const std::vector<SqlValue>& params);
  Status ExecLocked(std::string_view sql);

  std::mutex mu_;
  sqlite3* db_;
};

// Row accessors that tolerate NULL.
inline int64_t AsInt(const SqlValue& v) {
  return std::holds_alternative<int64_t>(v) ? std::get<int64_t>(v) : 0;
}
inline const std::string& AsText(const SqlValue& v) {
  static const std::string kEmpty;
  return std::holds_alternative<std::string>(v) ? std::get<std::string>(v) : kEmpty;
}

}  // namespace icestream
