// Router: one port for everything (ARCHITECTURE.md §7). JSON 1.1 services are chosen by
// the X-Amz-Target prefix; other endpoints by path (/health, later /metrics and
// /iceberg/v1/...).
//
// Thread-safety: Handle may run on any I/O thread; routes are added before serving.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aws/cbor.h"
#include "aws/error.h"
#include "aws/sigv4.h"
#include "http/message.h"

namespace icestream::server {

// A JSON 1.1 service: `prefix` is the X-Amz-Target prefix ("Kinesis_20131202."),
// `signing_name` the service its SigV4 credential scope must name ("kinesis").
//
// `cbor`: the service also speaks application/x-amz-cbor-1.1; the router decodes CBOR
// bodies into JSON 1.1 text and encodes every answer back (aws/cbor.h), so `handle` sees
// JSON only. Null: CBOR requests get UnknownOperationException like any other type.
// `cbor_itself(op)`: operations whose CBOR bodies reach `handle` untouched (they read
// CBOR themselves); an answer whose Content-Type is already CBOR goes out as it is.
//
// `handle_auth`: when set, the service takes the authentication result itself and
// reports it at its place in AWS's order (after the body's type and model checks,
// aws-api.md §A.7); `handle` is then unused. When unset the router refuses
// unauthenticated requests before `handle`.
struct JsonService {
  using AuthResult = std::optional<aws::ApiError>;
  std::string prefix;
  std::string signing_name;
  aws::ErrorFlavor flavor = aws::ErrorFlavor::kKinesis;
  std::function<bool(std::string_view op)> knows;
  std::function<void(std::string_view op, std::shared_ptr<http::Request>, http::Responder)> handle;
  const aws::CborModel* cbor = nullptr;
  std::function<bool(std::string_view op)> cbor_itself;
  std::function<void(std::string_view op, std::shared_ptr<http::Request>, http::Responder,
                     AuthResult auth_error)>
      handle_auth = nullptr;
};

// A path route authenticates its own requests (see SurfaceAuth): the Iceberg catalog
// and /metrics answer in their own error formats.
struct PathRoute {
  std::string prefix;  // matched against the request path
  http::Handler handler;
  // The route owns its paths even for requests with an X-Amz-Target (the console's
  // gateway takes Kinesis calls under /console/api/aws); otherwise such requests are
  // JSON service calls whatever their path.
  bool with_target = false;
};

// One answered JSON 1.1 call, as the router saw it (for metrics). `service` is the
// service's signing name ("kinesis", "glue") or "unknown"; `operation` an operation the
// service knows, or "unknown"; `error_code` the answer's x-amzn-ErrorType, empty on
// success; `message` the error's message when the answer is JSON.
struct CallRecord {
  std::string_view service;
  std::string_view operation;
  std::string_view error_code;
  int http_status = 0;
  std::string_view message;
  int64_t latency_ns = 0;
};
using CallObserver = std::function<void(const CallRecord&)>;
// Runs a task off the I/O threads (see Router::SetOffload).
using Executor = std::function<void(std::function<void()>)>;

class Router {
 public:
  // `auth` must outlive the router.
  explicit Router(const aws::Authenticator* auth) : auth_(auth) {}
  // CBOR bodies of at least kOffloadCborBytes are transcoded by `offload` (a task that
  // then calls the handler there), so that a few large bodies cannot hold the I/O threads
  // that every other connection needs. Unset: on the calling thread.
  void SetOffload(Executor offload) { offload_ = std::move(offload); }
  static constexpr size_t kOffloadCborBytes = 256 << 10;
  void AddService(JsonService service) { services_.push_back(std::move(service)); }
  void AddPath(PathRoute route) { paths_.push_back(std::move(route)); }
  // Called once for every JSON 1.1 call answered, on the thread that answers it.
  void SetObserver(CallObserver observer) { observer_ = std::move(observer); }
  // Reports a call a path route answered (the Iceberg catalog) to the same observer.
  void Observe(const CallRecord& call) const {
    if (observer_) observer_(call);
  }
  // `GET /` (and HEAD) without X-Amz-Target answers 302 to `location` (the console).
  void SetRootRedirect(std::string location) { root_redirect_ = std::move(location); }
  // Requests with `Authorization: Bearer <token>` count as authenticated: how the
  // console's in-process dispatches (console/console.h) pass. The token is random per
  // process and never leaves it; empty (the default): no such requests.
  void SetInternalToken(std::string token) { internal_token_ = std::move(token); }
  void Handle(std::shared_ptr<http::Request> req, http::Responder respond) const;

 private:
  void Dispatch(const JsonService& svc, std::string_view op, std::shared_ptr<http::Request> req,
                http::Responder respond, std::optional<aws::ApiError> auth_error,
                const std::string& request_id) const;

  const aws::Authenticator* auth_;
  std::vector<JsonService> services_;
  std::vector<PathRoute> paths_;
  CallObserver observer_;
  std::string root_redirect_;
  std::string internal_token_;
  Executor offload_;
};

}  // namespace icestream::server
