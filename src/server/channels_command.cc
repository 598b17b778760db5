// `icestream channels create|describe|list|update|delete|resume|redrive|describe-redrive`:
// the channel API from the command line (the AWS CLI v1 on many machines has no
// create-channel), with icestream's extensions. Each subcommand sends the
// AWS-shaped request JSON (a file, file://path, or stdin) as a SigV4-signed JSON 1.1 call
// and prints the AWS-shaped response; an error prints the server's error body on stderr
// and exits 1. The server is --endpoint-url (or AWS_ENDPOINT_URL, cli_client.h); a
// channel is named by --channel-arn or --channel-name (looked up with ListChannels).
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "common/fs.h"
#include "delivery/redrive.h"
#include "server/cli_client.h"
#include "server/commands.h"
#include "server/pool_channels.h"

namespace icestream::server {
namespace {

struct ChannelFlags {
  ClientFlags client;
  PoolChannelFlags pool;  // --pg: the pool's database instead of a server's API
  std::string input;
  std::string channel_arn;
  std::string channel_name;
  std::string stream_name;  // list: only this stream's channels (StreamFilter)
  // redrive / describe-redrive
  std::vector<std::string> error_codes;
  std::string start_time;
  std::string end_time;
  std::string redrive_id;
};

// Epoch seconds of "1764547200" or "2026-12-01T00:00:00Z".
std::optional<double> EpochSeconds(const std::string& text) {
  if (auto ms = delivery::ParseIso8601Ms(text)) return static_cast<double>(*ms) / 1000.0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0') return std::nullopt;
  return v;
}

Result<std::string> ReadInput(const std::string& input) {
  if (input.empty() || input == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  std::string path = input.rfind("file://", 0) == 0 ? input.substr(7) : input;
  return fs::ReadFile(path);
}

// Prints a failed call's body (the AWS error JSON) on stderr; returns the exit code.
int Failed(const http::ClientResponse& r) {
  auto out = nlohmann::json::parse(r.body, nullptr, false);
  std::cerr << (out.is_discarded() ? (r.body.empty() ? "HTTP " + std::to_string(r.status) : r.body)
                                   : out.dump(4))
            << "\n";
  return 1;
}

// A call to a server's API or, with --pg, to the pool's database (pool_channels.h).
class Caller {
 public:
  virtual ~Caller() = default;
  virtual Result<http::ClientResponse> Call(std::string_view target,
                                            const nlohmann::json& body) = 0;
  virtual std::string endpoint() const = 0;
};

template <typename Client>
class CallerOf final : public Caller {
 public:
  explicit CallerOf(std::unique_ptr<Client> c) : c_(std::move(c)) {}
  Result<http::ClientResponse> Call(std::string_view target, const nlohmann::json& body) override {
    return c_->Call(target, body);
  }
  std::string endpoint() const override { return c_->endpoint(); }

 private:
  std::unique_ptr<Client> c_;
};

// The ARN of the channel called `name` (ListChannels, every page).
Result<std::string> ArnOfName(Caller& client, const std::string& name, int* exit_code) {
  nlohmann::json req = nlohmann::json::object();
  for (int page = 0; page < 1000; ++page) {
    ASSIGN_OR_RETURN(auto r, client.Call("Kinesis_20131202.ListChannels", req));
    if (r.status != 200) {
      *exit_code = Failed(r);
      return InvalidArgument("ListChannels failed");
    }
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    for (const auto& c : j.value("ChannelSummaries", nlohmann::json::array())) {
      if (c.value("ChannelName", "") == name) return c.value("ChannelARN", "");
    }
    if (!j.contains("NextToken") || !j["NextToken"].is_string()) break;
    req["NextToken"] = j["NextToken"];
  }
  return NotFound("no channel named " + name + " on " + client.endpoint());
}

int Run(const std::string& op, const ChannelFlags& f, bool body_optional) {
  nlohmann::json body = nlohmann::json::object();
  bool named = !f.channel_arn.empty() || !f.channel_name.empty();
  if (!f.input.empty() || (!body_optional && !named)) {
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
  std::unique_ptr<Caller> caller;
  PoolChannelApi* pool_api = nullptr;
  // The pool's flags (--config included: only the pool reads it) mean the pool's database.
  if (!f.pool.pg.empty() || !f.pool.source.empty() || !f.pool.config_file.empty()) {
    auto pool = PoolChannelApi::Open(f.pool);
    if (!pool.ok()) {
      std::cerr << "icestream channels: " << pool.status().message() << "\n";
      return pool.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
    }
    pool_api = pool->get();
    caller = std::make_unique<CallerOf<PoolChannelApi>>(std::move(*pool));
  } else {
    caller = std::make_unique<CallerOf<ApiClient>>(std::make_unique<ApiClient>(f.client));
  }
  Caller& client = *caller;
  int code = 1;
  if (!f.channel_arn.empty()) {
    body["ChannelARN"] = f.channel_arn;
  } else if (!f.channel_name.empty()) {
    auto arn = ArnOfName(client, f.channel_name, &code);
    if (!arn.ok()) {
      if (arn.status().code() != StatusCode::kInvalidArgument) {
        std::cerr << "icestream channels: " << arn.status().message() << "\n";
      }
      return code;
    }
    body["ChannelARN"] = *arn;
  }
  if (!f.error_codes.empty()) body["ErrorCodes"] = f.error_codes;
  if (!f.redrive_id.empty()) body["RedriveId"] = f.redrive_id;
  for (const auto& [name, text] :
       {std::pair<const char*, const std::string*>{"StartTimestamp", &f.start_time},
        {"EndTimestamp", &f.end_time}}) {
    if (text->empty()) continue;
    auto secs = EpochSeconds(*text);
    if (!secs) {
      std::cerr << "icestream channels: " << *text
                << " is neither epoch seconds nor an ISO 8601 time (2026-11-30T00:00:00Z)\n";
      return 2;
    }
    body[name] = *secs;
  }
  if (!f.stream_name.empty() && pool_api != nullptr) {
    auto arn = pool_api->StreamArn(f.stream_name);
    if (!arn.ok()) {
      std::cerr << "icestream channels: " << arn.status().message() << "\n";
      return 1;
    }
    body["StreamFilter"] = {{{"StreamARN", *arn}}};
  } else if (!f.stream_name.empty()) {
    auto s = client.Call("Kinesis_20131202.DescribeStreamSummary", {{"StreamName", f.stream_name}});
    if (!s.ok()) {
      std::cerr << "icestream channels: " << s.status().message() << "\n";
      return 1;
    }
    if (s->status != 200) return Failed(*s);
    auto j = nlohmann::json::parse(s->body, nullptr, false);
    body["StreamFilter"] = {{{"StreamARN", j["StreamDescriptionSummary"]["StreamARN"]}}};
  }
  auto r = client.Call("Kinesis_20131202." + op, body);
  if (!r.ok()) {
    std::cerr << "icestream channels: " << client.endpoint() << ": " << r.status().message()
              << "\n";
    return 1;
  }
  if (r->status != 200) return Failed(*r);
  auto out = nlohmann::json::parse(r->body, nullptr, false);
  std::string text = out.is_discarded() ? r->body : (r->body.empty() ? "" : out.dump(4));
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
    bool names_channel;
    bool body_optional;
  };
  for (const Op& op :
       {Op{"create", "CreateChannel", "CreateChannel request JSON", false, false},
        Op{"describe", "DescribeChannel", "DescribeChannel", true, true},
        Op{"list", "ListChannels", "ListChannels (request JSON optional)", false, true},
        Op{"update", "UpdateChannel", "UpdateChannel request JSON", true, false},
        Op{"delete", "DeleteChannel", "DeleteChannel", true, true},
        Op{"resume", "ResumeChannel",
           "ResumeChannel (icestream): a FAILED channel delivers again from its checkpoints", true,
           true},
        Op{"redrive", "StartChannelRedrive",
           "StartChannelRedrive (icestream): deliver the channel's DLQ lines again", true, true},
        Op{"describe-redrive", "DescribeChannelRedrive",
           "DescribeChannelRedrive (icestream): a redrive's progress (the latest unless "
           "--redrive-id)",
           true, true}}) {
    auto flags = std::make_shared<ChannelFlags>();
    auto* sub = cmd->add_subcommand(op.name, op.help);
    sub->add_option("request", flags->input, "Request JSON: a file, file://path, or - for stdin");
    AddClientFlags(sub, &flags->client, false);
    sub->add_option("--pg", flags->pool.pg,
                    "The pool's PostgreSQL conninfo: act on its database directly, for pools "
                    "whose source is not an icestream server ([scaleout] pg of --config)");
    sub->add_option("--source", flags->pool.source,
                    "With --pg: the Kinesis endpoint URL the pool reads the streams from "
                    "([scaleout] source; needed by create, used by describe for the lag)");
    sub->add_option("--source-ca-file", flags->pool.source_ca_file,
                    "With --pg: PEM bundle the source's TLS certificate is checked against");
    sub->add_option("--registry", flags->pool.registry,
                    "With --pg: the Glue Schema Registry endpoint ([scaleout] registry; default: "
                    "--source)");
    sub->add_option("--s3-endpoint", flags->pool.s3_endpoint,
                    "With --pg: the S3 store of the buckets and table buckets");
    sub->add_option("--config", flags->pool.config_file,
                    "The pool's TOML configuration ([scaleout] pg, source, registry; region, "
                    "account): implies --pg");
    if (op.names_channel) {
      auto* arn = sub->add_option("--channel-arn", flags->channel_arn, "The channel's ARN");
      sub->add_option("--channel-name", flags->channel_name,
                      "The channel's name (instead of its ARN)")
          ->excludes(arn);
    }
    if (std::string(op.name) == "list") {
      sub->add_option("--stream-name", flags->stream_name,
                      "Only the channels of this stream (ListChannels' StreamFilter)");
    }
    if (std::string_view(op.name) == "redrive") {
      sub->add_option("--error-code", flags->error_codes,
                      "Only DLQ lines with this errorCode (repeatable; default: every code)");
      sub->add_option(
          "--start-time", flags->start_time,
          "Only records that arrived at or after this time (epoch seconds or ISO 8601)");
      sub->add_option("--end-time", flags->end_time,
                      "Only records that arrived before this time (epoch seconds or ISO 8601)");
    }
    if (std::string_view(op.name) == "describe-redrive") {
      sub->add_option("--redrive-id", flags->redrive_id, "The redrive (default: the latest)");
    }
    std::string api = op.api;
    bool optional = op.body_optional;
    sub->callback([flags, api, optional] { SetExitCode(Run(api, *flags, optional)); });
  }
}

}  // namespace icestream::server
