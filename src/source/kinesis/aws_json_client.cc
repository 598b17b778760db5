// AWS JSON 1.1 calls, signed.
#include "source/kinesis/aws_json_client.h"

#include <fmt/format.h>

#include <cstdlib>

#include "aws/cbor.h"
#include "common/clock.h"
#include "common/crypto.h"

namespace icestream::source {

namespace {

Status FromAwsError(int http_status, const std::string& type, const std::string& message) {
  std::string text = type.empty() ? message : type + ": " + message;
  if (type == "ProvisionedThroughputExceededException" || type == "LimitExceededException" ||
      type == "ThrottlingException" || type == "KMSThrottlingException") {
    return Throttled(std::move(text));
  }
  if (type == "ExpiredIteratorException" || type == "ResourceInUseException") {
    return FailedPrecondition(std::move(text));
  }
  if (type == "ResourceNotFoundException" || type == "EntityNotFoundException") {
    return NotFound(std::move(text));
  }
  // The endpoint refuses this process's credentials or permissions: the trouble is this
  // process's (its keys, its role, its clock), not the channel's, so it is retried (and
  // shown as the channel's last error) rather than failing a channel that the other
  // processes of a pool deliver fine.
  if (http_status == 401 || http_status == 403 || type == "InvalidSignatureException" ||
      type == "UnrecognizedClientException" || type == "IncompleteSignatureException" ||
      type == "MissingAuthenticationTokenException" || type == "AccessDeniedException" ||
      type == "ExpiredTokenException" || type == "InvalidClientTokenId" ||
      type == "SignatureDoesNotMatch") {
    return Unavailable(std::move(text) + " (the credentials of this process)");
  }
  if (http_status >= 500) return Unavailable(std::move(text));
  return InvalidArgument(std::move(text));
}

}  // namespace

bool IsCborAnswer(const http::ClientResponse& resp) {
  std::string_view type = resp.GetHeader("content-type");
  return type.substr(0, type.find(';')) == aws::kCborContentType;
}

aws::Credentials CredentialsFromEnvironment() {
  aws::Credentials c;
  const char* ak = std::getenv("AWS_ACCESS_KEY_ID");
  const char* sk = std::getenv("AWS_SECRET_ACCESS_KEY");
  const char* st = std::getenv("AWS_SESSION_TOKEN");
  c.access_key_id = ak && *ak ? ak : "test";
  c.secret_access_key = sk && *sk ? sk : "test";
  if (st && *st) c.session_token = st;
  return c;
}

AwsJsonClient::AwsJsonClient(AwsEndpoint endpoint, std::string host)
    : endpoint_(std::move(endpoint)), host_(std::move(host)), http_([&] {
        http::HttpClientOptions o;
        o.timeout_ms = endpoint_.timeout_ms;
        o.verify_tls = endpoint_.verify_tls;
        o.ca_file = endpoint_.ca_file;
        return o;
      }()) {}

Result<std::unique_ptr<AwsJsonClient>> AwsJsonClient::Make(AwsEndpoint endpoint) {
  std::string_view url = endpoint.url;
  size_t scheme = url.find("://");
  if (scheme == std::string_view::npos ||
      (url.substr(0, scheme) != "http" && url.substr(0, scheme) != "https")) {
    return InvalidArgument("endpoint " + endpoint.url + " is not http(s)://host[:port]");
  }
  std::string_view rest = url.substr(scheme + 3);
  std::string host(rest.substr(0, rest.find('/')));
  if (host.empty()) return InvalidArgument("endpoint " + endpoint.url + " names no host");
  endpoint.url = std::string(url.substr(0, scheme + 3)) + host;
  return std::unique_ptr<AwsJsonClient>(new AwsJsonClient(std::move(endpoint), host));
}

Result<http::ClientResponse> AwsJsonClient::Post(const std::string& operation,
                                                 std::string_view content_type,
                                                 std::string_view payload) {
  std::vector<http::Header> headers = {{"host", host_},
                                       {"content-type", std::string(content_type)},
                                       {"x-amz-target", endpoint_.target_prefix + operation}};
  aws::SignRequest("POST", "/", "", &headers, crypto::Hex(crypto::Sha256(payload)),
                   endpoint_.credentials, endpoint_.region, endpoint_.service,
                   SystemClock::Default()->NowMillis());
  http::ClientRequest req;
  req.method = "POST";
  req.url = endpoint_.url + "/";
  req.headers = std::move(headers);
  req.body = payload;
  auto resp = http_.Send(req);
  if (!resp.ok()) {
    return Unavailable(
        fmt::format("{} to {}: {}", operation, endpoint_.url, resp.status().message()));
  }
  return resp;
}

Status AwsJsonClient::ErrorOf(const std::string& operation, const http::ClientResponse& resp,
                              std::string* error_type) {
  // A CBOR error body is the same map as the JSON one (aws-api.md §A.3); tags (none are
  // expected in an error) are ignored.
  const bool cbor = IsCborAnswer(resp);
  auto j = cbor ? nlohmann::json::from_cbor(resp.body, true, false,
                                            nlohmann::json::cbor_tag_handler_t::ignore)
                : nlohmann::json::parse(resp.body, nullptr, false);
  std::string type, message;
  if (!j.is_discarded() && j.is_object()) {
    if (j.contains("__type") && j["__type"].is_string()) type = j["__type"].get<std::string>();
    // "com.amazonaws.kinesis#ExpiredIteratorException" → the part after '#'.
    if (size_t hash = type.rfind('#'); hash != std::string::npos) type = type.substr(hash + 1);
    message = j.contains("message") && j["message"].is_string()   ? j["message"].get<std::string>()
              : j.contains("Message") && j["Message"].is_string() ? j["Message"].get<std::string>()
                                                                  : "";
  }
  if (message.empty()) message = fmt::format("HTTP {}", resp.status);
  if (error_type) *error_type = type;
  return FromAwsError(resp.status, type, fmt::format("{}: {}", operation, message));
}

Result<nlohmann::json> AwsJsonClient::Call(const std::string& operation, const nlohmann::json& body,
                                           std::string* error_type) {
  const std::string payload = body.dump();
  ASSIGN_OR_RETURN(auto resp, Post(operation, aws::kJsonContentType, payload));
  if (resp.status != 200) return ErrorOf(operation, resp, error_type);
  auto j = nlohmann::json::parse(resp.body, nullptr, false);
  if (j.is_discarded()) {
    if (resp.body.empty()) return nlohmann::json::object();
    return Unavailable(operation + ": the answer is not JSON");
  }
  return j;
}

}  // namespace icestream::source
