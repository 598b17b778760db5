// Console sessions and sign-in.
#include "console/session.h"

#include <fmt/format.h>

#include "common/crypto.h"

namespace icestream::console {
namespace {

std::string RandomToken() {
  uint8_t b[32];
  crypto::RandomBytes(b, sizeof b);
  return crypto::Hex(b, sizeof b);
}

constexpr int64_t kFailureWindowMs = 60 * 1000;
constexpr size_t kMaxTrackedClients = 10000;

}  // namespace

SessionStore::SessionStore(SessionOptions options, const Clock* clock)
    : options_(std::move(options)),
      clock_(clock),
      required_(!options_.credentials.empty() || !options_.bearer_tokens.empty()),
      open_csrf_(RandomToken()) {}

bool SessionStore::SameSecret(std::string_view a, std::string_view b) {
  // The length is not secret; the bytes are compared without an early exit.
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool SessionStore::Throttled(std::string_view client, int64_t now) {
  auto it = failures_.find(client);
  if (it == failures_.end()) return false;
  while (!it->second.empty() && now - it->second.front() > kFailureWindowMs) it->second.pop_front();
  if (it->second.empty()) {
    failures_.erase(it);
    return false;
  }
  return it->second.size() >= static_cast<size_t>(options_.failed_logins_per_minute);
}

void SessionStore::NoteFailure(std::string_view client, int64_t now) {
  if (failures_.size() >= kMaxTrackedClients && !failures_.count(client)) {
    // Bounded memory: forget the client with the oldest last failure.
    auto oldest = failures_.begin();
    for (auto it = failures_.begin(); it != failures_.end(); ++it) {
      if (it->second.back() < oldest->second.back()) oldest = it;
    }
    failures_.erase(oldest);
  }
  failures_[std::string(client)].push_back(now);
}

LoginResult SessionStore::Login(std::string_view client, std::string_view bearer_token,
                                std::string_view access_key_id, std::string_view secret,
                                Session* out) {
  int64_t now = clock_->NowMillis();
  std::lock_guard lock(mu_);
  if (Throttled(client, now)) return LoginResult::kThrottled;
  std::string principal;
  if (access_key_id.empty()) {
    bool known = false;
    for (const auto& t : options_.bearer_tokens) known |= SameSecret(t, bearer_token);
    if (known && !bearer_token.empty()) principal = "bearer token";
  } else {
    auto it = options_.credentials.find(std::string(access_key_id));
    // Compare against something even for an unknown key, so the time says nothing.
    std::string_view want = it == options_.credentials.end() ? std::string_view() : it->second;
    if (SameSecret(want, secret) && it != options_.credentials.end() && !secret.empty()) {
      principal = std::string(access_key_id);
    }
  }
  if (principal.empty()) {
    NoteFailure(client, now);
    return LoginResult::kRefused;
  }
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    it = it->second.expires_ms <= now ? sessions_.erase(it) : std::next(it);
  }
  while (sessions_.size() >= options_.max_sessions && !sessions_.empty()) {
    auto oldest = sessions_.begin();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (it->second.expires_ms < oldest->second.expires_ms) oldest = it;
    }
    sessions_.erase(oldest);
  }
  Session s{RandomToken(), RandomToken(), principal, now + options_.ttl_ms};
  sessions_[s.id] = s;
  *out = s;
  return LoginResult::kOk;
}

std::optional<Session> SessionStore::FromCookieHeader(std::string_view header) {
  // Cookie: a=b; icestream_console=<id>; c=d
  std::string_view id;
  size_t at = 0;
  while (at < header.size()) {
    size_t end = header.find(';', at);
    if (end == std::string_view::npos) end = header.size();
    std::string_view part = header.substr(at, end - at);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    if (part.size() > kCookieName.size() && part.substr(0, kCookieName.size()) == kCookieName &&
        part[kCookieName.size()] == '=') {
      id = part.substr(kCookieName.size() + 1);
    }
    at = end + 1;
  }
  if (id.empty()) return std::nullopt;
  int64_t now = clock_->NowMillis();
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  if (it->second.expires_ms <= now) {
    sessions_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

void SessionStore::Remove(std::string_view id) {
  std::lock_guard lock(mu_);
  if (auto it = sessions_.find(id); it != sessions_.end()) sessions_.erase(it);
}

std::string SessionStore::SetCookie(const Session& s) const {
  int64_t max_age = std::max<int64_t>(0, (s.expires_ms - clock_->NowMillis()) / 1000);
  return fmt::format("{}={}; Path=/console; Max-Age={}; HttpOnly; SameSite=Strict", kCookieName,
                     s.id, max_age);
}

std::string SessionStore::ClearCookie() {
  return fmt::format("{}=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict", kCookieName);
}

}  // namespace icestream::console
