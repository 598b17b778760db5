// AWS Signature Version 4: canonical requests, signing (for our S3 client) and
// verification of incoming requests (aws-api.md §A.8).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aws/error.h"
#include "common/clock.h"
#include "common/status.h"
#include "http/message.h"

namespace icestream::aws {

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
};

struct ParsedAuthorization {
  std::string access_key_id;
  std::string date;  // yyyymmdd of the credential scope
  std::string region;
  std::string service;
  std::vector<std::string> signed_headers;
  std::string signature;
};

// Parses "AWS4-HMAC-SHA256 Credential=AK/20240101/us-east-1/kinesis/aws4_request,
// SignedHeaders=host;x-amz-date, Signature=abc". Failure → kInvalidArgument naming what
// is missing.
Result<ParsedAuthorization> ParseAuthorization(std::string_view header);

// RFC 3986 encoding as SigV4 wants it (unreserved characters kept; '/' kept when
// `keep_slash`).
std::string UriEncode(std::string_view s, bool keep_slash);
std::string UriDecode(std::string_view s);

struct CanonicalInput {
  std::string_view method;
  std::string_view path;   // as sent on the wire (already encoded)
  std::string_view query;  // raw query string without '?'
  const std::vector<http::Header>* headers;  // names lower-case
  std::string_view payload_sha256_hex;
};

std::string CanonicalRequest(const CanonicalInput& in, const std::vector<std::string>& signed_headers);
std::string CanonicalQuery(std::string_view raw_query);
// Hex signature of `canonical_request`.
std::string ComputeSignature(std::string_view secret, std::string_view date8,
                             std::string_view region, std::string_view service,
                             std::string_view amz_date, std::string_view canonical_request);

// Signs an outgoing request: adds host (if absent), x-amz-date, x-amz-content-sha256,
// x-amz-security-token (with a session token) and Authorization to `headers`.
void SignRequest(std::string_view method, std::string_view path, std::string_view query,
                 std::vector<http::Header>* headers, std::string_view payload_sha256_hex,
                 const Credentials& creds, std::string_view region, std::string_view service,
                 int64_t now_ms);

struct AuthenticatorOptions {
  // Access key id → secret. Empty: signatures are not checked (any well-formed one is
  // accepted, the LocalStack-style default).
  std::map<std::string, std::string> secrets;
  // The one region this server serves: a credential scope naming another is refused.
  std::string region = "us-east-1";
  // Largest accepted difference between the request's date and the server clock.
  int64_t max_skew_ms = 15 * 60 * 1000;
  const Clock* clock = nullptr;  // null: the system clock
};

// Checks an incoming request's SigV4 Authorization header (aws-api.md §A.8).
//
// Always (with or without secrets): the header is well formed, has a date, and its scope
// names this server's region and the service called (`service`: "kinesis", "glue",
// "s3tables"); a payload hash of UNSIGNED-PAYLOAD or a streaming form is refused.
// Presigned query-string authentication is refused.
//
// With secrets, the request is bound as well: the access key must be known; host, the
// date header and x-amz-target (when present) must be among the signed headers; the
// date must be within max_skew_ms of the clock and agree with the scope's date; the signature is
// computed over sha256(body) (an x-amz-content-sha256 header must equal it) and must match. Without
// secrets none of this could stop anyone (any key and signature are accepted), so the body is not
// hashed.
//
// Thread-safe (const).
class Authenticator {
 public:
  explicit Authenticator(AuthenticatorOptions options = {});
  // nullopt = accepted.
  std::optional<ApiError> Check(const http::Request& req, std::string_view service) const;
  bool verifies_signatures() const { return !options_.secrets.empty(); }
  const std::string& region() const { return options_.region; }

 private:
  std::optional<ApiError> Verify(const http::Request& req, const ParsedAuthorization& auth,
                                 std::string_view service) const;
  AuthenticatorOptions options_;
};

}  // namespace icestream::aws
