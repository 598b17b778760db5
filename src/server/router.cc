// Request routing and the JSON 1.1 envelope checks, in AWS's order (aws-api.md §A.7).
#include "server/router.h"

#include "common/crypto.h"

namespace icestream::server {

namespace {

// Headers AWS exposes to browser SDK builds on every answer to a request with an Origin
// (as recorded against AWS by kinesalite's test suite).
constexpr const char* kExposeHeaders =
    "x-amzn-RequestId,x-amzn-ErrorType,x-amz-request-id,x-amz-id-2,x-amzn-ErrorMessage,Date";

// A CORS preflight (OPTIONS with Origin): 200, empty, the requested headers and method
// echoed, cached for two days.
http::Response Preflight(const http::Request& req) {
  http::Response r;
  r.SetHeader("Access-Control-Allow-Origin", "*");
  if (auto h = req.GetHeader("access-control-request-headers"); !h.empty()) {
    r.SetHeader("Access-Control-Allow-Headers", std::string(h));
  }
  if (auto m = req.GetHeader("access-control-request-method"); !m.empty()) {
    r.SetHeader("Access-Control-Allow-Methods", std::string(m));
  }
  r.SetHeader("Access-Control-Max-Age", "172800");
  r.SetHeader("x-amzn-RequestId", crypto::RandomUuid());
  return r;
}

}  // namespace

void Router::Handle(std::shared_ptr<http::Request> req, http::Responder respond) const {
  std::string_view target = req->GetHeader("x-amz-target");
  bool has_origin = req->HasHeader("origin");
  if (has_origin && req->method == "OPTIONS" && (!target.empty() || req->path == "/")) {
    return respond(Preflight(*req));
  }
  if (target.empty()) {
    for (const auto& r : paths_) {
      if (req->path.rfind(r.prefix, 0) == 0) return r.handler(std::move(req), std::move(respond));
    }
    http::Response res;
    if (req->method == "POST") {
      // A JSON 1.1 call without a target: AWS cannot tell the operation either.
      res = aws::ErrorResponse(aws::UnknownOperationError(), crypto::RandomUuid());
    } else {
      res.status = 404;
      res.SetHeader("Content-Type", "application/json");
      res.body = R"({"message":"Not found. Kinesis and Glue calls are POST / with X-Amz-Target."})";
    }
    return respond(std::move(res));
  }
  if (has_origin) {
    respond = [inner = std::move(respond)](http::Response r) {
      r.SetHeader("Access-Control-Allow-Origin", "*");
      r.SetHeader("Access-Control-Expose-Headers", kExposeHeaders);
      inner(std::move(r));
    };
  }
  const JsonService* svc = nullptr;
  std::string_view op;
  for (const auto& s : services_) {
    if (target.rfind(s.prefix, 0) == 0) {
      svc = &s;
      op = target.substr(s.prefix.size());
      break;
    }
  }
  std::string request_id = crypto::RandomUuid();
  auto flavor = svc ? svc->flavor : aws::ErrorFlavor::kKinesis;
  auto fail = [&](const aws::ApiError& e) { respond(aws::ErrorResponse(e, request_id, flavor)); };
  if (req->method != "POST") {
    return fail({"AccessDeniedException",
                 "Unable to determine service/operation name to be authorized", 403});
  }
  std::string_view ctype = req->GetHeader("content-type");
  auto semi = ctype.find(';');
  if (semi != std::string_view::npos) ctype = ctype.substr(0, semi);
  while (!ctype.empty() && ctype.back() == ' ') ctype.remove_suffix(1);
  bool cbor = ctype == aws::kCborContentType && svc && svc->cbor;
  if (cbor) {
    // From here on every answer, errors included, goes out in CBOR.
    respond = [inner = std::move(respond), model = svc->cbor](http::Response r) {
      // An event stream keeps its own content type (its events are framed, not CBOR).
      if (r.stream) return inner(std::move(r));
      for (const auto& h : r.headers) {
        // Encoded by the handler already (a direct CBOR path).
        if (http::AsciiLower(h.name) == "content-type" && h.value == aws::kCborContentType) {
          return inner(std::move(r));
        }
      }
      if (!r.body.empty()) r.body = aws::JsonResponseToCbor(r.body, *model);
      r.SetHeader("Content-Type", std::string(aws::kCborContentType));
      inner(std::move(r));
    };
  } else if (ctype != aws::kJsonContentType) {
    return fail({"UnknownOperationException", "", 404});
  }
  if (!svc || !svc->knows(op)) return fail(aws::UnknownOperationError());
  // An empty body with a known operation: SerializationException without a message.
  if (req->body.empty()) return fail(aws::SerializationError(""));
  // SigV4 covers the bytes as sent, so it is checked before the body is transcoded; its
  // verdict is reported in AWS's order (after the body's type and model checks) by
  // services that take it.
  std::optional<aws::ApiError> auth_error = auth_->Check(*req, svc->signing_name);
  if (cbor && !(svc->cbor_itself && svc->cbor_itself(op))) {
    if (offload_ && req->body.size() >= kOffloadCborBytes) {
      // `svc` and `op` point into this router and the request, which outlive the task.
      return offload_([this, svc, op, req = std::move(req), respond = std::move(respond),
                       auth_error = std::move(auth_error), request_id, flavor]() mutable {
        std::string json_text;
        if (auto e = aws::CborRequestToJson(req->body, *svc->cbor, &json_text)) {
          return respond(aws::ErrorResponse(*e, request_id, flavor));
        }
        req->body = std::move(json_text);
        Dispatch(*svc, op, std::move(req), std::move(respond), std::move(auth_error), request_id);
      });
    }
    std::string json_text;
    if (auto e = aws::CborRequestToJson(req->body, *svc->cbor, &json_text)) return fail(*e);
    req->body = std::move(json_text);
  }
  Dispatch(*svc, op, std::move(req), std::move(respond), std::move(auth_error), request_id);
}

void Router::Dispatch(const JsonService& svc, std::string_view op,
                      std::shared_ptr<http::Request> req, http::Responder respond,
                      std::optional<aws::ApiError> auth_error,
                      const std::string& request_id) const {
  if (svc.handle_auth) {
    return svc.handle_auth(op, std::move(req), std::move(respond), std::move(auth_error));
  }
  if (auth_error) return respond(aws::ErrorResponse(*auth_error, request_id, svc.flavor));
  svc.handle(op, std::move(req), std::move(respond));
}

}  // namespace icestream::server
