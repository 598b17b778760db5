// A client of AWS JSON 1.1 services (Kinesis, Glue) over HTTP/1.1 or TLS, signed with the
// project's own SigV4 signer: one POST per call with X-Amz-Target, the answer parsed as
// JSON, and AWS errors mapped to statuses that say what to do next. Callers that encode a
// hot call themselves (the Kinesis source's CBOR GetRecords, aws-api.md §A.3) use Post and
// ErrorOf, which read JSON and CBOR error bodies alike:
//
//   ProvisionedThroughputExceededException, LimitExceededException,
//   ThrottlingException, KMSThrottlingException                     kThrottled (back off)
//   ExpiredIteratorException                                         kFailedPrecondition
//   ResourceNotFoundException, EntityNotFoundException               kNotFound
//   ResourceInUseException                                           kFailedPrecondition
//   other 4xx                                                        kInvalidArgument
//   5xx, transport failures, unparsable answers                       kUnavailable
//
// The error's type is kept in the message ("<Type>: <message>") and in the status detail
// returned by ErrorType().
//
// Thread-safety: Call may be used from many threads at once.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "aws/sigv4.h"
#include "common/status.h"
#include "http/client.h"

namespace icestream::source {

struct AwsEndpoint {
  std::string url;  // http(s)://host[:port] (a path, if any, is ignored)
  std::string region = "us-east-1";
  std::string service;        // "kinesis" | "glue" (the signing name)
  std::string target_prefix;  // "Kinesis_20131202." | "AWSGlue."
  aws::Credentials credentials;
  int timeout_ms = 30000;
  bool verify_tls = true;
  std::string
      ca_file;  // PEM bundle the server's certificate is checked against (default: the system's)
};

class AwsJsonClient {
 public:
  // kInvalidArgument for a URL that is not http(s)://host[:port].
  static Result<std::unique_ptr<AwsJsonClient>> Make(AwsEndpoint endpoint);

  // One call; `error_type` (when not null) gets the AWS error type of a failed call.
  Result<nlohmann::json> Call(const std::string& operation, const nlohmann::json& body,
                              std::string* error_type = nullptr);

  // One signed POST of a body already encoded as `content_type`; the answer as it came
  // (any HTTP status). kUnavailable only for transport failures.
  Result<http::ClientResponse> Post(const std::string& operation, std::string_view content_type,
                                    std::string_view payload);

  // The status of a failed answer (JSON or CBOR error body, by its Content-Type), as Call
  // maps it; `error_type` (when not null) gets the AWS error type.
  static Status ErrorOf(const std::string& operation, const http::ClientResponse& resp,
                        std::string* error_type = nullptr);

  const AwsEndpoint& endpoint() const { return endpoint_; }

 private:
  explicit AwsJsonClient(AwsEndpoint endpoint, std::string host);
  AwsEndpoint endpoint_;
  std::string host_;  // host[:port] as signed
  http::HttpClient http_;
};

// Whether an answer's Content-Type is application/x-amz-cbor-1.1.
bool IsCborAnswer(const http::ClientResponse& resp);

// Credentials from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN), or the placeholders icestream and kinesalite accept when unset.
aws::Credentials CredentialsFromEnvironment();

}  // namespace icestream::source
