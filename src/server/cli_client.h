// How the client subcommands (channels, table, status) reach a running server: the
// endpoint from --endpoint-url (or --endpoint), else AWS_ENDPOINT_URL_KINESIS, else
// AWS_ENDPOINT_URL, else http://127.0.0.1:4567; the signing region from --region,
// AWS_REGION or AWS_DEFAULT_REGION (else us-east-1); SigV4 credentials from
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN (else test/test, which
// a server without [[credentials]] accepts); for the Iceberg catalog and /metrics, a
// bearer token from --token or ICESTREAM_TOKEN instead of a signature when given.
//
// Errors are the transport's (kUnavailable: refused, timeout); an HTTP error status is
// an answer, not an error — callers print the server's body.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "aws/sigv4.h"
#include "common/status.h"
#include "http/client.h"

namespace CLI {
class App;
}

namespace icestream::server {

struct ClientFlags {
  std::string endpoint;  // empty: from the environment
  std::string region;
  std::string token;
};

// Adds --endpoint-url (with --endpoint as an alias), --region and, when `with_token`,
// --token to `cmd`.
void AddClientFlags(CLI::App* cmd, ClientFlags* flags, bool with_token);

class ApiClient {
 public:
  explicit ApiClient(const ClientFlags& flags);

  const std::string& endpoint() const { return endpoint_; }
  // A JSON 1.1 call (`target` e.g. "Kinesis_20131202.ListChannels"), signed for
  // `service` ("kinesis", "glue").
  Result<http::ClientResponse> Call(std::string_view target, const nlohmann::json& body,
                                    std::string_view service = "kinesis");
  // GET `path` with `query` (already in canonical form: sorted, RFC 3986-encoded), with
  // the bearer token when one is set, else signed for `service`.
  Result<http::ClientResponse> Get(const std::string& path, const std::string& query,
                                   std::string_view service = "s3tables");

 private:
  std::string endpoint_;
  std::string host_;
  std::string region_;
  std::string token_;
  aws::Credentials creds_;
  http::HttpClient client_;
};

// RFC 3986 percent-encoding of everything but unreserved characters (SigV4's canonical
// form of query values and path segments).
std::string UriEncode(std::string_view s);

// The message of an AWS or Iceberg error body, or the body itself.
std::string ErrorText(const http::ClientResponse& r);

}  // namespace icestream::server
