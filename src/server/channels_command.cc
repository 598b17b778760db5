// `icestream channels create|describe|list|update|delete`: the channel API from the command
// line (the AWS CLI v1 on many machines has no create-channel). Each subcommand sends the
// AWS-shaped request JSON (a file, file://path, or stdin) as a SigV4-signed JSON 1.1 call
// and prints the AWS-shaped response.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>

#include "aws/sigv4.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/fs.h"
#include "http/client.h"
#include "objectstore/s3/s3_store.h"
#include "server/commands.h"

namespace icestream::server {
namespace {

struct ChannelFlags {
  std::string endpoint = "http://127.0.0.1:4567";
  std::string region;
  std::string input;
  std::string channel_arn;
};

Result<std::string> ReadInput(const std::string& input) {
  if (input.empty() || input == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  std::string path = input.rfind("file://", 0) == 0 ? input.substr(7) : input;
  return fs::ReadFile(path);
}

int Run(const std::string& op, const ChannelFlags& f, bool body_optional) {
  nlohmann::json body = nlohmann::json::object();
  if (!f.input.empty() || (!body_optional && f.channel_arn.empty())) {
    auto text = ReadInput(f.input);
    if (!text.ok()) {
      std::cerr << "icestream channels: " << text.status().message() << "\n";
      return 2;
    }
    body = nlohmann::json::parse(*text, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      std::cerr << "icestream channels: the request is not a JSON object\n";
      return 2;
    }
  }
  if (!f.channel_arn.empty()) body["ChannelARN"] = f.channel_arn;
  std::string payload = body.dump();
  std::string region = f.region;
  if (region.empty()) {
    const char* r = std::getenv("AWS_REGION");
    if (!r) r = std::getenv("AWS_DEFAULT_REGION");
    region = r ? r : "us-east-1";
  }
  aws::Credentials creds = objectstore::s3::CredentialsFromEnvironment();
  if (creds.access_key_id.empty()) creds = {"test", "test", ""};
  std::string ep = f.endpoint;
  while (!ep.empty() && ep.back() == '/') ep.pop_back();
  std::string host = ep.substr(ep.find("://") == std::string::npos ? 0 : ep.find("://") + 3);
  std::vector<http::Header> headers = {{"host", host},
                                       {"content-type", "application/x-amz-json-1.1"},
                                       {"x-amz-target", "Kinesis_20131202." + op}};
  aws::SignRequest("POST", "/", "", &headers, crypto::Hex(crypto::Sha256(payload)), creds, region,
                   "kinesis", SystemClock::Default()->NowMillis());
  http::HttpClient client;
  auto r = client.Send({"POST", ep + "/", headers, payload, 60000});
  if (!r.ok()) {
    std::cerr << "icestream channels: " << r.status().message() << "\n";
    return 1;
  }
  auto out = nlohmann::json::parse(r->body, nullptr, false);
  std::string text = out.is_discarded() ? r->body : (r->body.empty() ? "" : out.dump(4));
  if (r->status != 200) {
    std::cerr << text << "\n";
    return 1;
  }
  if (!text.empty()) std::cout << text << "\n";
  return 0;
}

}  // namespace

void AddChannelsCommand(CLI::App* app) {
  auto* cmd = app->add_subcommand(
      "channels", "Channel API from the command line (AWS-shaped request JSON in, response out)");
  cmd->require_subcommand(1);
  struct Op {
    const char* name;
    const char* api;
    const char* help;
    bool arn_flag;
    bool body_optional;
  };
  for (const Op& op :
       {Op{"create", "CreateChannel", "CreateChannel request JSON", false, false},
        Op{"describe", "DescribeChannel", "DescribeChannel", true, true},
        Op{"list", "ListChannels", "ListChannels (request JSON optional)", false, true},
        Op{"update", "UpdateChannel", "UpdateChannel request JSON", true, false},
        Op{"delete", "DeleteChannel", "DeleteChannel", true, true}}) {
    auto flags = std::make_shared<ChannelFlags>();
    auto* sub = cmd->add_subcommand(op.name, op.help);
    sub->add_option("request", flags->input, "Request JSON: a file, file://path, or - for stdin");
    sub->add_option("--endpoint", flags->endpoint, "Server URL (default http://127.0.0.1:4567)");
    sub->add_option("--region", flags->region, "Signing region (default $AWS_REGION or us-east-1)");
    if (op.arn_flag) sub->add_option("--channel-arn", flags->channel_arn, "The channel's ARN");
    std::string api = op.api;
    bool optional = op.body_optional;
    sub->callback([flags, api, optional] { SetExitCode(Run(api, *flags, optional)); });
  }
}

}  // namespace icestream::server
