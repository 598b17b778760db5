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

// Checks an incoming request. With no configured credentials any well-formed signature is
// accepted (the LocalStack-style default); otherwise the key must be known and the
// signature must match.
class Authenticator {
 public:
  explicit Authenticator(std::map<std::string, std::string> secrets_by_access_key = {})
      : secrets_(std::move(secrets_by_access_key)) {}
  // nullopt = accepted.
  std::optional<ApiError> Check(const http::Request& req) const;
  bool verifies_signatures() const { return !secrets_.empty(); }

 private:
  std::map<std::string, std::string> secrets_;
};

}  // namespace icestream::aws
