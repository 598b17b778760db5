// Request routing and the JSON 1.1 envelope checks, in AWS's order (aws-api.md §A.7).
#include "server/router.h"

#include "common/crypto.h"

namespace icestream::server {

void Router::Handle(std::shared_ptr<http::Request> req, http::Responder respond) const {
  std::string_view target = req->GetHeader("x-amz-target");
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
  if (ctype == "application/x-amz-cbor-1.1") {
    return fail(aws::SerializationError(
        "CBOR (application/x-amz-cbor-1.1) is not supported by this server yet; use JSON 1.1 "
        "(Java SDK: -Daws.cborEnabled=false, KCL: AWS_CBOR_DISABLE=1)."));
  }
  if (ctype != "application/x-amz-json-1.1") {
    return fail({"UnknownOperationException", "", 404});
  }
  if (!svc || !svc->knows(op)) {
    if (req->body.empty() && svc) return fail(aws::UnknownOperationError());
    return fail(aws::UnknownOperationError());
  }
  if (req->body.empty()) return fail(aws::SerializationError(""));
  if (auto e = auth_->Check(*req, svc->signing_name)) return fail(*e);
  svc->handle(op, std::move(req), std::move(respond));
}

}  // namespace icestream::server
