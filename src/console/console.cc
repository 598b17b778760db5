// The console's routes: static assets, sign-in, the gateway into the public APIs and the
// read-only endpoints.
#include "console/console.h"

#include <map>
#include <nlohmann/json.hpp>

#include "console/assets.h"
#include "console/dlq_view.h"
#include "console/table_view.h"
#include "iceberg/rest/rest_json.h"

namespace icestream::console {

using nlohmann::json;

namespace {

constexpr std::string_view kRoot = "/console";
constexpr std::string_view kApi = "/console/api/";
constexpr int64_t kMaxSampleRows = 500;

// The Kinesis operations beyond AWS the console shows when the server has them (issue
// 17's redrive); feature detection asks the API, never guesses.
constexpr const char* kOptionalOperations[] = {"StartChannelRedrive", "DescribeChannelRedrive",
                                               "ResumeChannel"};

http::Response Json(int status, const json& body) {
  http::Response r;
  r.status = status;
  r.SetHeader("Content-Type", "application/json");
  r.SetHeader("Cache-Control", "no-store");
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  AddSecurityHeaders(&r);
  return r;
}

http::Response JsonText(std::string body) {
  http::Response r;
  r.SetHeader("Content-Type", "application/json");
  r.SetHeader("Cache-Control", "no-store");
  r.body = std::move(body);
  AddSecurityHeaders(&r);
  return r;
}

http::Response Error(int status, std::string_view type, std::string_view message) {
  return Json(status, {{"__type", type}, {"message", message}});
}

// An error status of a backend as an HTTP answer: what the caller should do next.
http::Response FromStatus(const Status& st) {
  int code = 500;
  std::string type = "InternalFailure";
  switch (st.code()) {
    case StatusCode::kNotFound:
      code = 404, type = "ResourceNotFoundException";
      break;
    case StatusCode::kInvalidArgument:
      code = 400, type = "InvalidArgumentException";
      break;
    case StatusCode::kUnimplemented:
      code = 501, type = "NotImplemented";
      break;
    case StatusCode::kUnavailable:
      code = 503, type = "ServiceUnavailable";
      break;
    default:
      break;
  }
  return Error(code, type, st.message());
}

// Query parameters, percent-decoded ('+' is a space, as browsers encode forms).
std::map<std::string, std::string> Query(std::string_view q) {
  std::map<std::string, std::string> out;
  while (!q.empty()) {
    size_t end = q.find('&');
    std::string_view part = q.substr(0, end);
    q = end == std::string_view::npos ? std::string_view() : q.substr(end + 1);
    size_t eq = part.find('=');
    auto key = iceberg::rest::PercentDecode(part.substr(0, eq), true);
    auto value =
        iceberg::rest::PercentDecode(eq == std::string_view::npos ? "" : part.substr(eq + 1), true);
    if (key.ok() && value.ok() && !key->empty()) out[*key] = *value;
  }
  return out;
}

std::optional<int64_t> ParseInt(const std::string& s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  int64_t v = 0;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return std::nullopt;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return s[0] == '-' ? -v : v;
}

json SessionJson(bool required, const std::optional<Session>& s, const SessionStore& store) {
  json methods = json::array();
  if (store.accepts_tokens()) methods.push_back("bearer_token");
  if (store.accepts_keys()) methods.push_back("access_key");
  json j = {{"login_required", required}, {"methods", methods}};
  if (!required) {
    j["authenticated"] = true;
    j["csrf_token"] = store.open_csrf_token();
  } else if (s) {
    j["authenticated"] = true;
    j["csrf_token"] = s->csrf_token;
    j["principal"] = s->principal;
    j["expires_at"] = s->expires_ms;
  } else {
    j["authenticated"] = false;
  }
  return j;
}

}  // namespace

void AddSecurityHeaders(http::Response* r) {
  r->SetHeader("Content-Security-Policy",
               "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
               "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
  r->SetHeader("X-Content-Type-Options", "nosniff");
  r->SetHeader("X-Frame-Options", "DENY");
  r->SetHeader("Referrer-Policy", "no-referrer");
}

Console::Console(ConsoleOptions options, ConsoleBackend backend, const Clock* clock)
    : options_(std::move(options)),
      backend_(std::move(backend)),
      clock_(clock),
      sessions_(options_.sessions, clock),
      worker_([this] { WorkerLoop(); }) {}

Console::~Console() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void Console::Submit(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void Console::WorkerLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, nothing left
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

void Console::Handle(std::shared_ptr<http::Request> req, http::Responder respond) {
  std::string_view path = req->path;
  if (path.size() > kRoot.size() && path[kRoot.size()] != '/') {
    return respond(Error(404, "NotFound", "No such page."));  // /consolefoo
  }
  if (path.rfind(kApi, 0) == 0) {
    // HTTP/2 clients may split cookies into several header fields (RFC 9113 8.2.3).
    std::string cookies;
    for (const auto& h : req->headers) {
      if (h.name == "cookie") cookies += (cookies.empty() ? "" : "; ") + h.value;
    }
    std::optional<Session> session = sessions_.FromCookieHeader(cookies);
    return Api(path.substr(kApi.size()), std::move(req), std::move(respond), session);
  }
  if (req->method != "GET" && req->method != "HEAD") {
    return respond(Error(405, "MethodNotAllowed", "The console's pages are read with GET."));
  }
  std::string_view rest = path.substr(kRoot.size());
  std::string_view file;
  if (rest.empty() || rest == "/" || rest == "/index.html") {
    file = "index.html";
  } else if (rest.rfind("/assets/", 0) == 0) {
    file = rest.substr(8);
  } else {
    return respond(
        Error(404, "NotFound", "No such page: the console's pages live under /console/#/..."));
  }
  const Asset* a = FindAsset(file);
  if (a == nullptr) return respond(Error(404, "NotFound", "No such asset."));
  http::Response r;
  r.SetHeader("Content-Type", std::string(a->content_type));
  r.SetHeader("ETag", std::string(a->etag));
  // Revalidate every time (cheap with the ETag): a new binary's assets are picked up at once.
  r.SetHeader("Cache-Control", "no-cache");
  AddSecurityHeaders(&r);
  if (req->GetHeader("if-none-match") == a->etag) {
    r.status = 304;
  } else if (req->method == "GET") {
    r.body = std::string(a->bytes());
  }
  respond(std::move(r));
}

void Console::Api(std::string_view rest, std::shared_ptr<http::Request> req,
                  http::Responder respond, const std::optional<Session>& session) {
  const bool required = sessions_.login_required();
  const bool get = req->method == "GET" || req->method == "HEAD";
  if (rest == "session") {
    if (!get) return respond(Error(405, "MethodNotAllowed", "GET /console/api/session"));
    return respond(Json(200, SessionJson(required, session, sessions_)));
  }
  if (rest == "login") {
    if (req->method != "POST")
      return respond(Error(405, "MethodNotAllowed", "POST /console/api/login"));
    std::string_view ctype = req->GetHeader("content-type");
    if (ctype.substr(0, ctype.find(';')) != "application/json") {
      return respond(Error(415, "UnsupportedMediaType", "Send the login as application/json."));
    }
    if (!required) return respond(Json(200, SessionJson(false, std::nullopt, sessions_)));
    auto body = json::parse(req->body, nullptr, false);
    if (!body.is_object())
      return respond(Error(400, "SerializationException", "The body is not a JSON object."));
    auto str = [&](const char* k) {
      return body.contains(k) && body[k].is_string() ? body[k].get<std::string>() : std::string();
    };
    Session s;
    LoginResult r = sessions_.Login(req->remote_address, str("bearer_token"), str("access_key_id"),
                                    str("secret_access_key"), &s);
    if (r == LoginResult::kThrottled) {
      return respond(Error(429, "TooManyRequestsException",
                           "Too many failed sign-ins from this address; wait a minute."));
    }
    if (r == LoginResult::kRefused) {
      return respond(
          Error(401, "NotAuthorizedException",
                "Not a bearer token from [auth] bearer_tokens, nor an access key pair from "
                "[[credentials]] of this server."));
    }
    http::Response res = Json(200, SessionJson(true, s, sessions_));
    res.SetHeader("Set-Cookie", sessions_.SetCookie(s));
    return respond(std::move(res));
  }
  // Everything else needs a session (when sign-in is required) ...
  if (required && !session) {
    http::Response r = Error(401, "NotAuthorizedException", "Sign in to the console first.");
    r.SetHeader("Set-Cookie", SessionStore::ClearCookie());
    return respond(std::move(r));
  }
  // ... and every POST the session's CSRF token.
  if (!get) {
    const std::string& want = required ? session->csrf_token : sessions_.open_csrf_token();
    if (!SessionStore::SameSecret(req->GetHeader("x-csrf-token"), want)) {
      return respond(Error(403, "ForbiddenException",
                           "Missing or wrong X-CSRF-Token (GET /console/api/session has it)."));
    }
  }
  if (rest == "logout") {
    if (get) return respond(Error(405, "MethodNotAllowed", "POST /console/api/logout"));
    if (session) sessions_.Remove(session->id);
    http::Response r = Json(200, SessionJson(required, std::nullopt, sessions_));
    r.SetHeader("Set-Cookie", SessionStore::ClearCookie());
    return respond(std::move(r));
  }
  auto make_inner = [&](std::string method, std::string path, std::string query) {
    auto inner = std::make_shared<http::Request>();
    inner->method = std::move(method);
    inner->path = std::move(path);
    inner->query = std::move(query);
    inner->target = inner->path + (inner->query.empty() ? "" : "?" + inner->query);
    inner->remote_address = req->remote_address;
    inner->headers.push_back({"authorization", "Bearer " + options_.internal_token});
    if (auto host = req->GetHeader("host"); !host.empty())
      inner->headers.push_back({"host", std::string(host)});
    return inner;
  };
  if (rest == "aws") {
    if (req->method != "POST")
      return respond(Error(405, "MethodNotAllowed", "POST /console/api/aws"));
    std::string_view target = req->GetHeader("x-amz-target");
    if (target.rfind("Kinesis_20131202.", 0) != 0 && target.rfind("AWSGlue.", 0) != 0) {
      return respond(Error(400, "InvalidArgumentException",
                           "X-Amz-Target must name a Kinesis_20131202.* or AWSGlue.* operation."));
    }
    auto inner = make_inner("POST", "/", "");
    inner->headers.push_back({"content-type", "application/x-amz-json-1.1"});
    inner->headers.push_back({"x-amz-target", std::string(target)});
    inner->body = std::move(req->body);
    return Dispatch(std::move(inner), std::move(respond));
  }
  if (!get) return respond(Error(405, "MethodNotAllowed", "This endpoint is read with GET."));
  if (rest.rfind("iceberg/", 0) == 0) {
    return Dispatch(make_inner("GET", "/" + std::string(rest), req->query), std::move(respond));
  }
  if (rest == "metrics" || rest == "health") {
    return Dispatch(make_inner("GET", "/" + std::string(rest), ""), std::move(respond));
  }
  if (rest == "info") return Info(std::move(respond));
  if (rest == "errors") {
    json list = json::array();
    for (const auto& e : backend_.recent_errors()) {
      list.push_back({{"time", e.time_ms},
                      {"service", e.service},
                      {"operation", e.operation},
                      {"error_code", e.error_code},
                      {"http_status", e.http_status},
                      {"message", e.message}});
    }
    return respond(Json(200, {{"errors", list}}));
  }
  auto q = Query(req->query);
  if (rest.rfind("streams/", 0) == 0 && rest.size() > 14 &&
      rest.substr(rest.size() - 6) == "/rates") {
    std::string stream(rest.substr(8, rest.size() - 14));
    auto rates = backend_.stream_rates(stream);
    return respond(rates.ok() ? Json(200, *rates) : FromStatus(rates.status()));
  }
  if (rest == "channels/dlq") {
    std::string arn = q["arn"];
    if (arn.empty())
      return respond(Error(400, "InvalidArgumentException", "?arn=<channel ARN> is required."));
    DlqQuery dq;
    if (auto n = ParseInt(q["limit"]); n && *n > 0)
      dq.max_lines = static_cast<size_t>(std::min<int64_t>(*n, 5000));
    return Submit([this, arn, dq, respond = std::move(respond)] {
      auto loc = backend_.dlq_location(arn);
      if (!loc.ok()) return respond(FromStatus(loc.status()));
      auto out = ReadDlq(*loc, dq);
      respond(out.ok() ? Json(200, *out) : FromStatus(out.status()));
    });
  }
  if (rest == "tables/files" || rest == "tables/rows") {
    std::string warehouse = q["warehouse"], ns = q["namespace"], table = q["table"];
    if (warehouse.empty() || ns.empty() || table.empty()) {
      return respond(
          Error(400, "InvalidArgumentException", "warehouse, namespace and table are required."));
    }
    std::optional<int64_t> snapshot;
    if (!q["snapshot"].empty()) {
      snapshot = ParseInt(q["snapshot"]);
      if (!snapshot)
        return respond(Error(400, "InvalidArgumentException", "snapshot must be a snapshot id."));
    }
    int64_t limit = 50;
    if (auto n = ParseInt(q["limit"]); n && *n > 0) limit = std::min(*n, kMaxSampleRows);
    bool rows = rest == "tables/rows";
    return Submit(
        [this, warehouse, ns, table, snapshot, limit, rows, respond = std::move(respond)] {
          auto bucket = backend_.bucket_name(warehouse);
          if (!bucket.ok()) return respond(FromStatus(bucket.status()));
          auto catalog = backend_.catalog(*bucket);
          if (!catalog.ok()) return respond(FromStatus(catalog.status()));
          auto io = backend_.io(*bucket);
          if (!io.ok()) return respond(FromStatus(io.status()));
          iceberg::TableIdentifier id;
          for (size_t at = 0; at <= ns.size();) {
            size_t dot = ns.find('.', at);
            if (dot == std::string::npos) dot = ns.size();
            id.ns.push_back(ns.substr(at, dot - at));
            at = dot + 1;
          }
          id.name = table;
          auto loaded = (*catalog)->LoadTable(id);
          if (!loaded.ok()) return respond(FromStatus(loaded.status()));
          if (rows) {
            auto text = TableRows(**io, loaded->metadata, snapshot, limit);
            return respond(text.ok() ? JsonText(std::move(*text)) : FromStatus(text.status()));
          }
          auto files = TableFiles(**io, loaded->metadata, snapshot);
          respond(files.ok() ? Json(200, *files) : FromStatus(files.status()));
        });
  }
  respond(Error(404, "NotFound", "No such console endpoint (docs/console.md lists them)."));
}

void Console::Dispatch(std::shared_ptr<http::Request> inner, http::Responder respond) {
  backend_.dispatch(std::move(inner), [respond = std::move(respond)](http::Response r) {
    r.SetHeader("Cache-Control", "no-store");
    AddSecurityHeaders(&r);
    respond(std::move(r));
  });
}

void Console::Info(http::Responder respond) {
  json ops = json::object();
  for (const char* op : kOptionalOperations) ops[op] = backend_.kinesis_knows(op);
  json warehouses = json::array();
  for (const auto& w : backend_.warehouses()) warehouses.push_back(w);
  respond(Json(200, {{"version", options_.version},
                     {"region", options_.region},
                     {"account", options_.account},
                     {"login_required", sessions_.login_required()},
                     {"default_warehouse", options_.default_warehouse},
                     {"warehouses", warehouses},
                     {"operations", ops},
                     {"time", clock_->NowMillis()}}));
}

}  // namespace icestream::console
