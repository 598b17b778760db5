// The console's routes: pages and assets, sign-in enforced on every endpoint, CSRF on
// POSTs, and the gateway's dispatch (the in-process token, never the client's own
// Authorization). The backend's dispatch records what it is handed; the server-level
// tests (tests/browser/, tests/compat/test_console.py) run the same paths against a real
// server.
#include "console/console.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "console/assets.h"

namespace icestream::console {
namespace {

using nlohmann::json;

struct Harness {
  explicit Harness(bool with_credentials) : clock(1'000'000) {
    ConsoleOptions o;
    o.version = "test";
    o.internal_token = "internal-token";
    if (with_credentials) {
      o.sessions.credentials = {{"AKONE", "secret-one"}};
      o.sessions.bearer_tokens = {"token-1"};
    }
    ConsoleBackend b;
    b.dispatch = [this](std::shared_ptr<http::Request> req, http::Responder respond) {
      dispatched.push_back(req);
      http::Response r;
      r.body = R"({"ok":true})";
      respond(std::move(r));
    };
    b.kinesis_knows = [](std::string_view op) { return op == "StartChannelRedrive"; };
    b.recent_errors = [] { return std::vector<metrics::ApiError>{}; };
    b.warehouses = [] { return std::vector<std::string>{"default"}; };
    console = std::make_unique<Console>(o, b, &clock);
  }

  http::Response Call(std::string method, std::string path, std::vector<http::Header> headers = {},
                      std::string body = "", std::string query = "") {
    auto req = std::make_shared<http::Request>();
    req->method = std::move(method);
    req->path = std::move(path);
    req->query = std::move(query);
    req->headers = std::move(headers);
    req->body = std::move(body);
    req->remote_address = "127.0.0.1";
    http::Response out;
    bool answered = false;
    console->Handle(req, [&](http::Response r) {
      out = std::move(r);
      answered = true;
    });
    EXPECT_TRUE(answered);
    return out;
  }
  static std::string Header(const http::Response& r, std::string_view name) {
    for (const auto& h : r.headers) {
      if (http::AsciiLower(h.name) == name) return h.value;
    }
    return "";
  }

  ManualClock clock;
  std::vector<std::shared_ptr<http::Request>> dispatched;
  std::unique_ptr<Console> console;
};

TEST(Console, ServesThePageAndItsAssetsWithAStrictPolicy) {
  Harness t(false);
  for (const char* path : {"/console", "/console/", "/console/index.html"}) {
    http::Response r = t.Call("GET", path);
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(Harness::Header(r, "content-type"), "text/html; charset=utf-8");
    EXPECT_NE(r.body.find("/console/assets/app.js"), std::string::npos);
    EXPECT_NE(Harness::Header(r, "content-security-policy").find("script-src 'self'"),
              std::string::npos);
    EXPECT_EQ(Harness::Header(r, "x-frame-options"), "DENY");
  }
  http::Response js = t.Call("GET", "/console/assets/app.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(Harness::Header(js, "content-type"), "text/javascript; charset=utf-8");
  const Asset* a = FindAsset("app.js");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(js.body, std::string(a->bytes()));
  std::string etag = Harness::Header(js, "etag");
  EXPECT_EQ(t.Call("GET", "/console/assets/app.js", {{"if-none-match", etag}}).status, 304);
  EXPECT_EQ(t.Call("GET", "/console/assets/nope.js").status, 404);
  EXPECT_EQ(t.Call("GET", "/console/assets/../index.html").status, 404);
  EXPECT_EQ(t.Call("GET", "/consolex").status, 404);
  EXPECT_EQ(t.Call("POST", "/console").status, 405);
  // Every page module the app imports is embedded.
  for (const char* p : {"lib/api.js", "lib/dom.js", "lib/charts.js", "lib/payload.js",
                        "pages/overview.js", "pages/stream.js", "pages/channel.js",
                        "pages/table.js", "pages/registry.js", "style.css"}) {
    EXPECT_NE(FindAsset(p), nullptr) << p;
  }
}

TEST(Console, OpenWithoutCredentialsButPostsNeedTheCsrfToken) {
  Harness t(false);
  json s = json::parse(t.Call("GET", "/console/api/session").body);
  EXPECT_FALSE(s["login_required"]);
  EXPECT_TRUE(s["authenticated"]);
  std::string csrf = s["csrf_token"];
  EXPECT_EQ(t.Call("GET", "/console/api/info").status, 200);
  std::vector<http::Header> h = {{"x-amz-target", "Kinesis_20131202.ListStreams"}};
  EXPECT_EQ(t.Call("POST", "/console/api/aws", h, "{}").status, 403);
  EXPECT_TRUE(t.dispatched.empty());
  h.push_back({"x-csrf-token", csrf});
  EXPECT_EQ(t.Call("POST", "/console/api/aws", h, "{}").status, 200);
  ASSERT_EQ(t.dispatched.size(), 1u);
}

TEST(Console, SignInIsRequiredForEveryEndpointWithCredentials) {
  Harness t(true);
  json s = json::parse(t.Call("GET", "/console/api/session").body);
  EXPECT_TRUE(s["login_required"]);
  EXPECT_FALSE(s["authenticated"]);
  EXPECT_FALSE(s.contains("csrf_token"));
  for (const char* p : {"info", "errors", "metrics", "health", "iceberg/v1/config",
                        "streams/x/rates", "channels/dlq", "tables/files", "tables/rows"}) {
    http::Response r = t.Call("GET", std::string("/console/api/") + p);
    EXPECT_EQ(r.status, 401) << p;
    EXPECT_EQ(r.body.find("\"ok\""), std::string::npos) << p;
  }
  EXPECT_EQ(
      t.Call("POST", "/console/api/aws", {{"x-amz-target", "Kinesis_20131202.ListStreams"}}, "{}")
          .status,
      401);
  EXPECT_TRUE(t.dispatched.empty());

  // A wrong secret, then the right one.
  std::vector<http::Header> json_type = {{"content-type", "application/json"}};
  EXPECT_EQ(t.Call("POST", "/console/api/login", json_type, R"({"bearer_token":"nope"})").status,
            401);
  EXPECT_EQ(t.Call("POST", "/console/api/login", {}, R"({"bearer_token":"token-1"})").status, 415);
  http::Response login = t.Call("POST", "/console/api/login", json_type,
                                R"({"access_key_id":"AKONE","secret_access_key":"secret-one"})");
  ASSERT_EQ(login.status, 200) << login.body;
  std::string set_cookie = Harness::Header(login, "set-cookie");
  std::string cookie = set_cookie.substr(0, set_cookie.find(';'));
  std::string csrf = json::parse(login.body)["csrf_token"];
  EXPECT_EQ(t.Call("GET", "/console/api/info", {{"cookie", cookie}}).status, 200);
  // Cookies split over several header fields (HTTP/2), ours not the first.
  EXPECT_EQ(t.Call("GET", "/console/api/info", {{"cookie", "other=1"}, {"cookie", cookie}}).status,
            200);

  // Mutating calls need the session's CSRF token, not just the cookie.
  std::vector<http::Header> h = {{"cookie", cookie},
                                 {"x-amz-target", "Kinesis_20131202.DeleteStream"},
                                 {"authorization", "AWS4-HMAC-SHA256 forged"}};
  EXPECT_EQ(t.Call("POST", "/console/api/aws", h, R"({"StreamName":"s"})").status, 403);
  // One hex digit off (a fixed "0" would equal the token one time in 16).
  h.push_back({"x-csrf-token", (csrf[0] == '0' ? "1" : "0") + csrf.substr(1)});
  EXPECT_EQ(t.Call("POST", "/console/api/aws", h, R"({"StreamName":"s"})").status, 403);
  EXPECT_TRUE(t.dispatched.empty());
  h.back().value = csrf;
  EXPECT_EQ(t.Call("POST", "/console/api/aws", h, R"({"StreamName":"s"})").status, 200);
  ASSERT_EQ(t.dispatched.size(), 1u);
  const auto& inner = *t.dispatched[0];
  EXPECT_EQ(inner.method, "POST");
  EXPECT_EQ(inner.path, "/");
  EXPECT_EQ(inner.GetHeader("authorization"), "Bearer internal-token");  // not the client's
  EXPECT_EQ(inner.GetHeader("x-amz-target"), "Kinesis_20131202.DeleteStream");
  EXPECT_EQ(inner.GetHeader("content-type"), "application/x-amz-json-1.1");
  EXPECT_EQ(inner.body, R"({"StreamName":"s"})");

  // Only Kinesis and Glue targets pass the gateway.
  h.back() = {"x-csrf-token", csrf};
  h[1].value = "Other.Thing";
  EXPECT_EQ(t.Call("POST", "/console/api/aws", h, "{}").status, 400);

  // The catalog through the gateway: GET only, path and query kept.
  EXPECT_EQ(t.Call("GET", "/console/api/iceberg/v1/config", {{"cookie", cookie}}, "", "warehouse=w")
                .status,
            200);
  EXPECT_EQ(t.dispatched.back()->target, "/iceberg/v1/config?warehouse=w");
  EXPECT_EQ(t.Call("POST", "/console/api/iceberg/v1/namespaces",
                   {{"cookie", cookie}, {"x-csrf-token", csrf}}, "{}")
                .status,
            405);

  // Feature detection: the operations the Kinesis API knows.
  json info = json::parse(t.Call("GET", "/console/api/info", {{"cookie", cookie}}).body);
  EXPECT_TRUE(info["operations"]["StartChannelRedrive"]);
  EXPECT_FALSE(info["operations"]["DescribeChannelRedrive"]);

  // Sign out: the cookie stops working.
  EXPECT_EQ(
      t.Call("POST", "/console/api/logout", {{"cookie", cookie}, {"x-csrf-token", csrf}}).status,
      200);
  EXPECT_EQ(t.Call("GET", "/console/api/info", {{"cookie", cookie}}).status, 401);
}

}  // namespace
}  // namespace icestream::console
