// Status implementation and the code names used in logs.
#include "common/status.h"

#include <cerrno>
#include <cstring>

namespace icestream {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kFailedPrecondition:
      return "FailedPrecondition";
    case StatusCode::kResourceExhausted:
      return "ResourceExhausted";
    case StatusCode::kThrottled:
      return "Throttled";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kConflict:
      return "Conflict";
    case StatusCode::kUnknownOutcome:
      return "UnknownOutcome";
    case StatusCode::kCorruption:
      return "Corruption";
    case StatusCode::kIOError:
      return "IOError";
    case StatusCode::kShuttingDown:
      return "ShuttingDown";
    case StatusCode::kUnimplemented:
      return "Unimplemented";
    case StatusCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

Status::Status(StatusCode code, std::string message, std::shared_ptr<const StatusDetail> detail) {
  if (code != StatusCode::kOk) {
    rep_ = std::make_shared<const Rep>(Rep{code, std::move(message), std::move(detail)});
  }
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return rep_ ? rep_->message : kEmpty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code()));
  if (!message().empty()) {
    out += ": ";
    out += message();
  }
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message();
  return Status(code(), std::move(m), rep_->detail);
}

Status Status::WithDetail(std::shared_ptr<const StatusDetail> detail) const {
  if (ok()) return *this;
  return Status(code(), message(), std::move(detail));
}

Status InvalidArgument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
Status AlreadyExists(std::string m) { return Status(StatusCode::kAlreadyExists, std::move(m)); }
Status FailedPrecondition(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
Status ResourceExhausted(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
Status Throttled(std::string m) { return Status(StatusCode::kThrottled, std::move(m)); }
Status Unavailable(std::string m) { return Status(StatusCode::kUnavailable, std::move(m)); }
Status Conflict(std::string m) { return Status(StatusCode::kConflict, std::move(m)); }
Status UnknownOutcome(std::string m) { return Status(StatusCode::kUnknownOutcome, std::move(m)); }
Status Corruption(std::string m) { return Status(StatusCode::kCorruption, std::move(m)); }
Status IOError(std::string m) { return Status(StatusCode::kIOError, std::move(m)); }
Status ErrnoError(std::string_view what, int errno_value) {
  std::string m(what);
  m += ": ";
  m += std::strerror(errno_value);
  // A full disk (or quota) is a condition to wait out, not a fault: callers retry.
  if (errno_value == ENOSPC || errno_value == EDQUOT)
    return Status(StatusCode::kUnavailable, std::move(m));
  return Status(StatusCode::kIOError, std::move(m));
}
Status ShuttingDown(std::string m) { return Status(StatusCode::kShuttingDown, std::move(m)); }
Status Unimplemented(std::string m) { return Status(StatusCode::kUnimplemented, std::move(m)); }
Status Internal(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

std::string RedactPaths(std::string_view m) {
  std::string out;
  out.reserve(m.size());
  auto boundary = [](char c) {
    return c == ' ' || c == '\'' || c == '"' || c == '(' || c == '=' || c == '\t';
  };
  auto ends_path = [](char c) {
    return c == ' ' || c == '\'' || c == '"' || c == ')' || c == ',' || c == '\t';
  };
  size_t i = 0;
  while (i < m.size()) {
    if (m[i] == '/' && (i == 0 || boundary(m[i - 1]))) {
      size_t j = i;
      while (j < m.size() && !ends_path(m[j])) ++j;
      std::string_view token = m.substr(i, j - i);
      // Keep a trailing ':' or '.' (message punctuation) outside the redaction.
      size_t core = token.size();
      while (core > 0 &&
             (token[core - 1] == ':' || token[core - 1] == '.' || token[core - 1] == ';'))
        --core;
      if (token.substr(1, core > 0 ? core - 1 : 0).find('/') != std::string_view::npos) {
        out += "<path>";
        out += token.substr(core);
        i = j;
        continue;
      }
    }
    out.push_back(m[i]);
    ++i;
  }
  return out;
}

}  // namespace icestream
