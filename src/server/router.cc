// Request routing and the JSON 1.1 envelope checks, in AWS's order (aws-api.md §A.7).
#include "server/router.h"

#include <nlohmann/json.hpp>

#include "common/base64.h"
#include "common/crypto.h"
#include "common/json_depth.h"

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

// x-amz-id-2: base64 of 72 random bytes, as AWS sends on every answer but the CORS
// preflight (kinesalite's suite).
std::string AmzId2() {
  uint8_t b[72];
  crypto::RandomBytes(b, sizeof b);
  return base64::Encode(std::string_view(reinterpret_cast<const char*>(b), sizeof b));
}

// AWS's answer to a request it cannot map to an operation (not POST, or neither a JSON
// content type nor a target): 403 with an XML-ish body, no JSON error shape.
http::Response AccessDenied(const std::string& request_id) {
  http::Response r;
  r.status = 403;
  r.SetHeader("x-amzn-RequestId", request_id);
  r.body =
      "<AccessDeniedException>\n  <Message>Unable to determine service/operation name to be "
      "authorized</Message>\n</AccessDeniedException>\n";
  return r;
}

// True when the body is a JSON object. Asked only for bodies of unknown operations (the
// services parse their own), whose syntax error AWS reports before the target.
bool JsonObjectAhead(const std::string& body) {
  if (JsonNestingDepth(body, 64) > 64) return false;
  auto j = nlohmann::json::parse(body, nullptr, false);
  return !j.is_discarded() && j.is_object();
}

}  // namespace

// The envelope checks in AWS's order (kinesalite's index.js, recorded against AWS;
// docs/kinesis-api.md): method, empty body, content type, body syntax, target, then the
// service (authentication, types, model, service checks).
void Router::Handle(std::shared_ptr<http::Request> req, http::Responder respond) const {
  std::string_view target = req->GetHeader("x-amz-target");
  bool has_origin = req->HasHeader("origin");
  bool aws_endpoint = !target.empty() || req->path == "/";
  if (!aws_endpoint) {
    for (const auto& r : paths_) {
      if (req->path.rfind(r.prefix, 0) == 0) return r.handler(std::move(req), std::move(respond));
    }
    http::Response res;
    res.status = 404;
    res.SetHeader("Content-Type", "application/json");
    res.body = R"({"message":"Not found. Kinesis and Glue calls are POST / with X-Amz-Target."})";
    return respond(std::move(res));
  }
  if (has_origin && req->method == "OPTIONS") return respond(Preflight(*req));
  // Every other answer of the AWS endpoint carries x-amz-id-2, and CORS headers when the
  // request has an Origin.
  respond = [inner = std::move(respond), has_origin](http::Response r) {
    r.SetHeader("x-amz-id-2", AmzId2());
    if (has_origin) {
      r.SetHeader("Access-Control-Allow-Origin", "*");
      r.SetHeader("Access-Control-Expose-Headers", kExposeHeaders);
    }
    inner(std::move(r));
  };
  const JsonService* svc = nullptr;
  std::string_view op;
  for (const auto& s : services_) {
    if (target.rfind(s.prefix, 0) == 0) {
      svc = &s;
      op = target.substr(s.prefix.size());
      break;
    }
  }
  bool known = svc && svc->knows(op);
  std::string request_id = crypto::RandomUuid();
  auto flavor = svc ? svc->flavor : aws::ErrorFlavor::kKinesis;
  auto fail = [&](const aws::ApiError& e) { respond(aws::ErrorResponse(e, request_id, flavor)); };
  if (req->method != "POST") return respond(AccessDenied(request_id));
  std::string_view ctype = req->GetHeader("content-type");
  auto semi = ctype.find(';');
  if (semi != std::string_view::npos) ctype = ctype.substr(0, semi);
  while (!ctype.empty() && ctype.back() == ' ') ctype.remove_suffix(1);
  while (!ctype.empty() && ctype.front() == ' ') ctype.remove_prefix(1);
  bool json11 = ctype == aws::kJsonContentType;
  bool cbor = ctype == aws::kCborContentType && (!svc || svc->cbor);
  if (req->body.empty()) {
    // Answered before the content type is looked at: in JSON 1.1 for JSON 1.1 requests,
    // in CBOR for anything else (as AWS does), with no message.
    aws::ApiError e = known ? aws::SerializationError("") : aws::UnknownOperationError();
    http::Response r = aws::ErrorResponse(e, request_id, flavor);
    if (!json11 && (!svc || svc->cbor)) {
      const aws::CborModel* model = svc && svc->cbor ? svc->cbor : nullptr;
      static const aws::CborModel kEmpty{{}, {}};
      r.body = aws::JsonResponseToCbor(r.body, model ? *model : kEmpty);
      r.SetHeader("Content-Type", std::string(aws::kCborContentType));
    }
    return respond(std::move(r));
  }
  if (ctype == "application/json") {
    // AWS's JSON 1.0 front door answers a shape of its own and goes no further.
    auto parsed = nlohmann::json::accept(req->body);
    http::Response r;
    r.status = parsed ? 404 : 400;
    r.SetHeader("Content-Type", "application/json");
    r.SetHeader("x-amzn-RequestId", request_id);
    r.body = std::string(R"({"Output":{"__type":"com.amazon.coral.service#)") +
             (parsed ? "UnknownOperationException" : "SerializationException") +
             R"("},"Version":"1.0"})";
    return respond(std::move(r));
  }
  if (!json11 && !cbor) {
    if (!svc || op.empty() || target.find('.') == std::string_view::npos) {
      return respond(AccessDenied(request_id));
    }
    http::Response r;
    r.status = 404;
    r.SetHeader("x-amzn-RequestId", request_id);
    r.body = "<UnknownOperationException/>\n";
    return respond(std::move(r));
  }
  if (cbor) {
    // From here on every answer, errors included, goes out in CBOR.
    respond = [inner = std::move(respond), model = svc ? svc->cbor : nullptr](http::Response r) {
      // An event stream keeps its own content type (its events are framed, not CBOR).
      if (r.stream || !model) return inner(std::move(r));
      if (!r.body.empty()) r.body = aws::JsonResponseToCbor(r.body, *model);
      r.SetHeader("Content-Type", std::string(aws::kCborContentType));
      inner(std::move(r));
    };
  }
  if (!known) {
    // A body that does not parse is reported before an unknown target.
    if (!cbor && !JsonObjectAhead(req->body)) return fail(aws::SerializationError(""));
    return fail(aws::UnknownOperationError());
  }
  // SigV4 covers the bytes as sent, so it is checked before the body is transcoded; its
  // verdict is reported in AWS's order (after the body's type and model checks) by
  // services that take it.
  std::optional<aws::ApiError> auth_error = auth_->Check(*req, svc->signing_name);
  if (cbor) {
    std::string json_text;
    if (auto e = aws::CborRequestToJson(req->body, *svc->cbor, &json_text)) return fail(*e);
    req->body = std::move(json_text);
  }
  if (svc->handle_auth) {
    return svc->handle_auth(op, std::move(req), std::move(respond), std::move(auth_error));
  }
  if (auth_error) return fail(*auth_error);
  svc->handle(op, std::move(req), std::move(respond));
}

}  // namespace icestream::server
