// Client subcommands' connection to the server.
#include "server/cli_client.h"

#include <CLI/CLI.hpp>
#include <cstdlib>

#include "common/clock.h"
#include "common/crypto.h"
#include "objectstore/s3/s3_store.h"

namespace icestream::server {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

void AddClientFlags(CLI::App* cmd, ClientFlags* flags, bool with_token) {
  cmd->add_option("--endpoint-url,--endpoint", flags->endpoint,
                  "Server URL (default $AWS_ENDPOINT_URL_KINESIS, $AWS_ENDPOINT_URL or "
                  "http://127.0.0.1:4567)");
  cmd->add_option("--region", flags->region, "Signing region (default $AWS_REGION or us-east-1)");
  if (with_token) {
    cmd->add_option("--token", flags->token,
                    "Bearer token for the Iceberg catalog and /metrics (default $ICESTREAM_TOKEN; "
                    "without one, requests are SigV4-signed with the AWS_* credentials)");
  }
}

std::string UriEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

ApiClient::ApiClient(const ClientFlags& flags) {
  endpoint_ = flags.endpoint;
  if (endpoint_.empty()) endpoint_ = Env("AWS_ENDPOINT_URL_KINESIS");
  if (endpoint_.empty()) endpoint_ = Env("AWS_ENDPOINT_URL");
  if (endpoint_.empty()) endpoint_ = "http://127.0.0.1:4567";
  if (endpoint_.find("://") == std::string::npos) endpoint_ = "http://" + endpoint_;
  while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
  host_ = endpoint_.substr(endpoint_.find("://") + 3);
  host_ = host_.substr(0, host_.find('/'));
  region_ = flags.region;
  if (region_.empty()) region_ = Env("AWS_REGION");
  if (region_.empty()) region_ = Env("AWS_DEFAULT_REGION");
  if (region_.empty()) region_ = "us-east-1";
  token_ = flags.token.empty() ? Env("ICESTREAM_TOKEN") : flags.token;
  creds_ = objectstore::s3::CredentialsFromEnvironment();
  if (creds_.access_key_id.empty()) creds_ = {"test", "test", ""};
}

Result<http::ClientResponse> ApiClient::Call(std::string_view target, const nlohmann::json& body,
                                             std::string_view service) {
  std::string payload = body.dump();
  std::vector<http::Header> headers = {{"host", host_},
                                       {"content-type", "application/x-amz-json-1.1"},
                                       {"x-amz-target", std::string(target)}};
  aws::SignRequest("POST", "/", "", &headers, crypto::Hex(crypto::Sha256(payload)), creds_, region_,
                   service, SystemClock::Default()->NowMillis());
  return client_.Send({"POST", endpoint_ + "/", headers, payload, 60000});
}

Result<http::ClientResponse> ApiClient::Get(const std::string& path, const std::string& query,
                                            std::string_view service) {
  std::vector<http::Header> headers = {{"host", host_}};
  if (!token_.empty()) {
    headers.push_back({"authorization", "Bearer " + token_});
  } else {
    aws::SignRequest("GET", path, query, &headers, crypto::Hex(crypto::Sha256("")), creds_, region_,
                     service, SystemClock::Default()->NowMillis());
  }
  return client_.Send(
      {"GET", endpoint_ + path + (query.empty() ? "" : "?" + query), headers, "", 60000});
}

std::string ErrorText(const http::ClientResponse& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object()) {
    if (j.contains("error") && j["error"].is_object()) {
      const auto& e = j["error"];
      return e.value("type", std::string()) + ": " + e.value("message", std::string());
    }
    std::string type = j.value("__type", std::string());
    std::string message = j.value("message", j.value("Message", std::string()));
    if (!type.empty() || !message.empty()) {
      return type.substr(type.find('#') == std::string::npos ? 0 : type.find('#') + 1) + ": " +
             message;
    }
  }
  return "HTTP " + std::to_string(r.status) + (r.body.empty() ? "" : ": " + r.body);
}

}  // namespace icestream::server
