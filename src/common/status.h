// Status and Result<T>: the one error idiom of icestream library code.
//
// Error codes say what the caller does next (STYLE.md, "Errors"):
//   kUnavailable / kThrottled        retry later
//   kConflict                        reload state and retry (optimistic commit lost)
//   kCorruption / kShuttingDown      stop
//   kUnknownOutcome                  the operation may or may not have happened; never
//                                    assume it failed
// Everything else is a caller error or a missing thing. Statuses are cheap to copy when
// OK (no allocation) and carry a message otherwise.
//
// A caller that must tell finer kinds apart (no such table vs no such namespace) reads a
// detail, never the message text: the component gives its statuses a Subcode<E> of its own
// enum (WithSubcode), and the caller asks status.Is(E::kValue). Arrow's StatusDetail is the
// model. Context added on the way up (WithContext) keeps the detail.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace icestream {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,     // caller sent something malformed or out of range
  kNotFound,            // the named thing does not exist
  kAlreadyExists,       // the named thing exists already
  kFailedPrecondition,  // the thing is in the wrong state for this call
  kResourceExhausted,   // a quota or limit would be exceeded
  kThrottled,           // rate limit; retry after a pause
  kUnavailable,         // transient failure; retry
  kConflict,            // optimistic concurrency lost; reload and retry
  kUnknownOutcome,      // may have happened; check before redoing
  kCorruption,          // stored bytes are damaged
  kIOError,             // the operating system refused a file or socket operation
  kShuttingDown,        // the component is stopping
  kUnimplemented,       // not supported (yet)
  kInternal,            // a bug
};

std::string_view StatusCodeName(StatusCode code);

// What a status carries beyond its code and message, for callers that branch on it.
// Immutable and shared between copies of a status.
class StatusDetail {
 public:
  virtual ~StatusDetail() = default;
  // For logs and test failures, e.g. "iceberg::CatalogError 2".
  virtual std::string ToString() const = 0;
};

// The usual detail: one value of a component's own enum class. Two enums never compare
// equal, so components need no registry of subcode numbers.
template <typename E>
class Subcode final : public StatusDetail {
 public:
  static_assert(std::is_enum_v<E>);
  explicit Subcode(E value) : value_(value) {}
  E value() const { return value_; }
  std::string ToString() const override {
    return "subcode " + std::to_string(static_cast<long long>(value_));
  }

 private:
  E value_;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message,
         std::shared_ptr<const StatusDetail> detail = nullptr);

  static Status OK() { return Status(); }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  const std::string& message() const;
  // "<CodeName>: <message>", or "OK".
  std::string ToString() const;

  // Returns a copy with "context: " prepended to the message (the detail is kept).
  Status WithContext(std::string_view context) const;

  // The detail, or null (always null when OK).
  const StatusDetail* detail() const { return rep_ ? rep_->detail.get() : nullptr; }
  // A copy carrying `detail` instead of the current one; an OK status stays OK.
  Status WithDetail(std::shared_ptr<const StatusDetail> detail) const;
  // The Subcode<E> this status carries, if it carries one of enum E.
  template <typename E>
  std::optional<E> subcode() const {
    const auto* s = dynamic_cast<const Subcode<E>*>(detail());
    return s ? std::optional<E>(s->value()) : std::nullopt;
  }
  // Whether this status carries Subcode<E>(value).
  template <typename E>
  bool Is(E value) const {
    return subcode<E>() == value;
  }

  bool operator==(const Status& other) const {
    return code() == other.code() && message() == other.message();
  }

 private:
  struct Rep {
    StatusCode code;
    std::string message;
    std::shared_ptr<const StatusDetail> detail;
  };
  std::shared_ptr<const Rep> rep_;
};

// `status` with Subcode<E>(value) as its detail: WithSubcode(NotFound("..."), E::kValue).
template <typename E>
Status WithSubcode(const Status& status, E value) {
  return status.WithDetail(std::make_shared<const Subcode<E>>(value));
}

// Convenience constructors.
Status InvalidArgument(std::string message);
Status NotFound(std::string message);
Status AlreadyExists(std::string message);
Status FailedPrecondition(std::string message);
Status ResourceExhausted(std::string message);
Status Throttled(std::string message);
Status Unavailable(std::string message);
Status Conflict(std::string message);
Status UnknownOutcome(std::string message);
Status Corruption(std::string message);
Status IOError(std::string message);
// IOError with strerror(errno_value) appended: "what: No such file or directory". A full
// disk (ENOSPC, EDQUOT) is kUnavailable instead: retry once space is freed.
Status ErrnoError(std::string_view what, int errno_value);
Status ShuttingDown(std::string message);
Status Unimplemented(std::string message);
Status Internal(std::string message);

// The message with every absolute file path in it replaced by "<path>": what a server
// error may tell a client (paths tell an attacker the layout of the machine). A path is
// a '/' at the start or after a space, quote, '(' or '=', followed by a segment and at
// least one more '/'.
std::string RedactPaths(std::string_view message);

// Result<T>: a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(const T& value) : v_(value) {}             // NOLINT(implicit)
  Result(T&& value) : v_(std::move(value)) {}       // NOLINT(implicit)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(implicit)
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U&&, T> &&
                                                    !std::is_same_v<std::decay_t<U>, Status> &&
                                                    !std::is_same_v<std::decay_t<U>, T>>>
  Result(U&& value) : v_(T(std::forward<U>(value))) {}  // NOLINT(implicit)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace icestream

#define ICESTREAM_CONCAT_INNER(a, b) a##b
#define ICESTREAM_CONCAT(a, b) ICESTREAM_CONCAT_INNER(a, b)

// The temporary is named after the line, so that a RETURN_IF_ERROR inside a lambda passed
// to another one (a transaction body) does not shadow the outer one's.
#define RETURN_IF_ERROR_IMPL(tmp, expr) \
  do {                                  \
    ::icestream::Status tmp = (expr);   \
    if (!tmp.ok()) return tmp;          \
  } while (0)
#define RETURN_IF_ERROR(expr) RETURN_IF_ERROR_IMPL(ICESTREAM_CONCAT(_st_, __LINE__), expr)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(ICESTREAM_CONCAT(_result_, __LINE__), lhs, expr)
