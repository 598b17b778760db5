// Console sign-in: who may open the console when the server has credentials or bearer
// tokens configured, and the sessions of those who did.
//
//   Login      a configured bearer token ([auth] bearer_tokens), or an access key pair
//              from [[credentials]]; compared in constant time. Failed attempts are
//              limited per client address (10 a minute, then 429 for the rest of it).
//   Session    256 random bits as an HttpOnly, SameSite=Strict cookie scoped to
//              /console, with an expiry; its own CSRF token (256 random bits) that every
//              mutating request must echo in X-CSRF-Token. Sessions live in memory: a
//              restart signs everybody out.
//
// Without credentials and tokens the console is open (as the rest of the server); a
// process-wide CSRF token still guards its POSTs, so that another site's page cannot
// drive them (it can neither read the token nor send the header cross-origin).
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"

namespace icestream::console {

struct SessionOptions {
  std::map<std::string, std::string> credentials;  // access key id -> secret
  std::vector<std::string> bearer_tokens;
  int64_t ttl_ms = 12ll * 3600 * 1000;
  size_t max_sessions = 1000;  // the oldest goes when a new one would exceed it
  int failed_logins_per_minute = 10;
};

struct Session {
  std::string id;
  std::string csrf_token;
  std::string principal;  // "bearer token" or the access key id
  int64_t expires_ms = 0;
};

enum class LoginResult { kOk, kRefused, kThrottled };

class SessionStore {
 public:
  static constexpr std::string_view kCookieName = "icestream_console";

  // `clock` must outlive the store.
  SessionStore(SessionOptions options, const Clock* clock);

  // True when credentials or tokens are configured.
  bool login_required() const { return required_; }
  bool accepts_tokens() const { return !options_.bearer_tokens.empty(); }
  bool accepts_keys() const { return !options_.credentials.empty(); }

  // Checks a bearer token (access_key_id empty) or an access key pair; on success a new
  // session. `client` is the remote address (for the failure limit).
  LoginResult Login(std::string_view client, std::string_view bearer_token,
                    std::string_view access_key_id, std::string_view secret, Session* out);
  // The live session of a Cookie header, if any (expired ones are dropped).
  std::optional<Session> FromCookieHeader(std::string_view cookie_header);
  void Remove(std::string_view id);

  // Set-Cookie values that set and clear the session cookie.
  std::string SetCookie(const Session& s) const;
  static std::string ClearCookie();
  // The CSRF token of open mode (no login).
  const std::string& open_csrf_token() const { return open_csrf_; }

  // Constant-time comparison of secrets.
  static bool SameSecret(std::string_view a, std::string_view b);

 private:
  bool Throttled(std::string_view client, int64_t now);
  void NoteFailure(std::string_view client, int64_t now);

  const SessionOptions options_;
  const Clock* clock_;
  const bool required_;
  const std::string open_csrf_;
  std::mutex mu_;
  std::map<std::string, Session, std::less<>> sessions_;
  std::map<std::string, std::deque<int64_t>, std::less<>> failures_;
};

}  // namespace icestream::console
