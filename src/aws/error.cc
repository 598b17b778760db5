// AWS error mapping and error bodies.
#include "aws/error.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

namespace icestream::aws {

ApiError KinesisError(const Status& st) {
  const std::string& m = st.message();
  switch (st.code()) {
    case StatusCode::kNotFound: return {"ResourceNotFoundException", m, 400};
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition: return {"ResourceInUseException", m, 400};
    case StatusCode::kInvalidArgument: return {"InvalidArgumentException", m, 400};
    case StatusCode::kResourceExhausted: return {"LimitExceededException", m, 400};
    case StatusCode::kThrottled: return {"ProvisionedThroughputExceededException", m, 400};
    case StatusCode::kUnavailable:
    case StatusCode::kShuttingDown: return {"ServiceUnavailable", m, 503};
    default: return {"InternalFailure", m.empty() ? "Internal service failure." : m, 500};
  }
}

ApiError GlueError(const Status& st) {
  const std::string& m = st.message();
  switch (st.code()) {
    case StatusCode::kNotFound: return {"EntityNotFoundException", m, 400};
    case StatusCode::kAlreadyExists: return {"AlreadyExistsException", m, 400};
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition: return {"InvalidInputException", m, 400};
    case StatusCode::kResourceExhausted: return {"ResourceNumberLimitExceededException", m, 400};
    case StatusCode::kConflict: return {"ConcurrentModificationException", m, 400};
    case StatusCode::kUnavailable:
    case StatusCode::kShuttingDown: return {"OperationTimeoutException", m, 400};
    default: return {"InternalServiceException", m, 500};
  }
}

ApiError ValidationError(std::string message) { return {"ValidationException", std::move(message), 400}; }
ApiError SerializationError(std::string message) {
  return {"SerializationException", std::move(message), 400};
}
ApiError InvalidArgumentError(std::string message) {
  return {"InvalidArgumentException", std::move(message), 400};
}
ApiError UnknownOperationError() { return {"UnknownOperationException", "", 400}; }

http::Response ErrorResponse(const ApiError& error, std::string_view request_id,
                             ErrorFlavor flavor) {
  http::Response r;
  r.status = error.http_status;
  nlohmann::json body = {{"__type", error.type}};
  // An empty message is left out (AWS sends none for an empty body or an unknown
  // operation). SerializationException comes from AWS's request framework, which spells
  // the member "Message" (aws-api.md §A.5), like every Glue error.
  if (!error.message.empty()) {
    std::string message = error.message;
    if (error.http_status >= 500) {
      // Server-side failures: the full text goes to the log, the client's copy names no
      // file of this machine.
      spdlog::warn("request {} answered {} {}: {}", request_id, error.http_status, error.type,
                   message);
      message = RedactPaths(message);
    }
    bool capital = flavor == ErrorFlavor::kGlue || error.type == "SerializationException";
    body[capital ? "Message" : "message"] = message;
  }
  r.body = body.dump();
  r.SetHeader("Content-Type", "application/x-amz-json-1.1");
  r.SetHeader("x-amzn-ErrorType", error.type);
  r.SetHeader("x-amzn-RequestId", std::string(request_id));
  return r;
}

http::Response JsonResponse(std::string body, std::string_view request_id) {
  http::Response r;
  r.body = std::move(body);
  r.SetHeader("Content-Type", "application/x-amz-json-1.1");
  r.SetHeader("x-amzn-RequestId", std::string(request_id));
  return r;
}

}  // namespace icestream::aws
