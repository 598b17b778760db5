// AWS error shapes. The one place where internal statuses become AWS error types and
// where error bodies are written (STYLE.md: handlers never write error JSON).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "http/message.h"

namespace icestream::aws {

struct ApiError {
  std::string type;  // e.g. "ResourceNotFoundException"
  std::string message;
  int http_status = 400;
};

// Error-body flavour: Kinesis writes "message", Glue writes "Message".
enum class ErrorFlavor { kKinesis, kGlue };

// Kinesis mapping: kNotFound → ResourceNotFoundException; kAlreadyExists,
// kFailedPrecondition → ResourceInUseException; kInvalidArgument →
// InvalidArgumentException; kResourceExhausted → LimitExceededException; kThrottled →
// ProvisionedThroughputExceededException; kUnavailable, kShuttingDown →
// ServiceUnavailable (503); anything else → InternalFailure (500).
ApiError KinesisError(const Status& status);
// Glue mapping: kNotFound → EntityNotFoundException; kAlreadyExists →
// AlreadyExistsException; kInvalidArgument, kFailedPrecondition → InvalidInputException;
// kResourceExhausted → ResourceNumberLimitExceededException; kConflict →
// ConcurrentModificationException; else InternalServiceException (500).
ApiError GlueError(const Status& status);

ApiError ValidationError(std::string message);     // ValidationException
ApiError SerializationError(std::string message);  // SerializationException
ApiError InvalidArgumentError(std::string message);  // InvalidArgumentException
ApiError UnknownOperationError();                   // UnknownOperationException

// The HTTP response for an error: JSON body {"__type": type, "message": text}, headers
// x-amzn-ErrorType and x-amzn-RequestId.
http::Response ErrorResponse(const ApiError& error, std::string_view request_id,
                             ErrorFlavor flavor = ErrorFlavor::kKinesis);
// A 200 response with a JSON 1.1 body (empty body allowed).
http::Response JsonResponse(std::string body, std::string_view request_id);

}  // namespace icestream::aws
