// Console sign-in: tokens and key pairs, cookies, expiry, the failure limit.
#include "console/session.h"

#include <gtest/gtest.h>

namespace icestream::console {
namespace {

SessionOptions Options() {
  SessionOptions o;
  o.credentials = {{"AKONE", "secret-one"}};
  o.bearer_tokens = {"token-1"};
  o.ttl_ms = 60'000;
  return o;
}

std::string CookieOf(const Session& s) { return "a=b; icestream_console=" + s.id + "; c=d"; }

TEST(SessionStore, LogsInWithATokenOrAKeyPair) {
  ManualClock clock(1'000'000);
  SessionStore store(Options(), &clock);
  EXPECT_TRUE(store.login_required());
  Session s;
  EXPECT_EQ(store.Login("1.2.3.4", "token-1", "", "", &s), LoginResult::kOk);
  EXPECT_EQ(s.principal, "bearer token");
  EXPECT_EQ(s.id.size(), 64u);
  EXPECT_EQ(s.csrf_token.size(), 64u);
  EXPECT_NE(s.id, s.csrf_token);
  Session k;
  EXPECT_EQ(store.Login("1.2.3.4", "", "AKONE", "secret-one", &k), LoginResult::kOk);
  EXPECT_EQ(k.principal, "AKONE");
  EXPECT_NE(k.id, s.id);
  Session bad;
  EXPECT_EQ(store.Login("1.2.3.4", "token-2", "", "", &bad), LoginResult::kRefused);
  EXPECT_EQ(store.Login("1.2.3.4", "", "AKONE", "secret-two", &bad), LoginResult::kRefused);
  EXPECT_EQ(store.Login("1.2.3.4", "", "AKOTHER", "secret-one", &bad), LoginResult::kRefused);
  EXPECT_EQ(store.Login("1.2.3.4", "", "", "", &bad), LoginResult::kRefused);
  EXPECT_EQ(store.Login("1.2.3.4", "", "AKONE", "", &bad), LoginResult::kRefused);
}

TEST(SessionStore, FindsSessionsByCookieUntilTheyExpire) {
  ManualClock clock(1'000'000);
  SessionStore store(Options(), &clock);
  Session s;
  ASSERT_EQ(store.Login("c", "token-1", "", "", &s), LoginResult::kOk);
  auto found = store.FromCookieHeader(CookieOf(s));
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->csrf_token, s.csrf_token);
  EXPECT_FALSE(store.FromCookieHeader("icestream_console=" + std::string(64, 'a')).has_value());
  EXPECT_FALSE(store.FromCookieHeader("").has_value());
  EXPECT_FALSE(store.FromCookieHeader("xicestream_console=" + s.id).has_value());
  std::string cookie = store.SetCookie(s);
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos);
  EXPECT_NE(cookie.find("SameSite=Strict"), std::string::npos);
  EXPECT_NE(cookie.find("Path=/console"), std::string::npos);
  EXPECT_NE(cookie.find("Max-Age=60"), std::string::npos);
  clock.Advance(60'000);
  EXPECT_FALSE(store.FromCookieHeader(CookieOf(s)).has_value());
  Session t;
  ASSERT_EQ(store.Login("c", "token-1", "", "", &t), LoginResult::kOk);
  store.Remove(t.id);
  EXPECT_FALSE(store.FromCookieHeader(CookieOf(t)).has_value());
}

TEST(SessionStore, LimitsFailedLoginsPerClient) {
  ManualClock clock(1'000'000);
  SessionStore store(Options(), &clock);
  Session s;
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(store.Login("attacker", "guess", "", "", &s), LoginResult::kRefused);
  // Even the right token is refused for the rest of the minute, for this client only.
  EXPECT_EQ(store.Login("attacker", "token-1", "", "", &s), LoginResult::kThrottled);
  EXPECT_EQ(store.Login("someone-else", "token-1", "", "", &s), LoginResult::kOk);
  clock.Advance(61'000);
  EXPECT_EQ(store.Login("attacker", "token-1", "", "", &s), LoginResult::kOk);
}

TEST(SessionStore, OpenWithoutCredentials) {
  ManualClock clock(1);
  SessionStore store(SessionOptions{}, &clock);
  EXPECT_FALSE(store.login_required());
  EXPECT_EQ(store.open_csrf_token().size(), 64u);
  Session s;
  EXPECT_EQ(store.Login("c", "", "", "", &s), LoginResult::kRefused);
}

TEST(SessionStore, KeepsAtMostMaxSessions) {
  ManualClock clock(1'000'000);
  SessionOptions o = Options();
  o.max_sessions = 2;
  SessionStore store(o, &clock);
  Session a, b, c;
  ASSERT_EQ(store.Login("c", "token-1", "", "", &a), LoginResult::kOk);
  clock.Advance(1);
  ASSERT_EQ(store.Login("c", "token-1", "", "", &b), LoginResult::kOk);
  clock.Advance(1);
  ASSERT_EQ(store.Login("c", "token-1", "", "", &c), LoginResult::kOk);
  EXPECT_FALSE(store.FromCookieHeader(CookieOf(a)).has_value());  // the oldest went
  EXPECT_TRUE(store.FromCookieHeader(CookieOf(b)).has_value());
  EXPECT_TRUE(store.FromCookieHeader(CookieOf(c)).has_value());
}

}  // namespace
}  // namespace icestream::console
