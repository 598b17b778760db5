// `icestream status`: one screen of a running server — health, streams, channels (state,
// lag, last error) and tables (rows, files, snapshots) — from its public APIs (Kinesis,
// the channel API, the Iceberg REST catalog, /health). Tables are looked for in the
// catalog's default warehouse, the table buckets of table channels and every --warehouse.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "iceberg/rest/rest_json.h"
#include "server/cli_client.h"
#include "server/commands.h"

namespace icestream::server {
namespace {

using nlohmann::json;

struct StatusFlags {
  ClientFlags client;
  std::vector<std::string> warehouses;
};

std::string Cut(std::string s, size_t n) {
  if (s.size() > n) s = s.substr(0, n - 1) + "~";
  return s;
}

std::string Age(double seconds) {
  if (seconds < 120) return fmt::format("{:.0f}s", seconds);
  if (seconds < 7200) return fmt::format("{:.0f}m", seconds / 60);
  return fmt::format("{:.1f}h", seconds / 3600);
}

// A JSON 1.1 call's answer; kFailedPrecondition with the server's error otherwise.
Result<json> Call(ApiClient& c, const std::string& op, const json& body,
                  const char* service = "kinesis") {
  std::string target = std::string(service) == "glue" ? "AWSGlue." + op : "Kinesis_20131202." + op;
  ASSIGN_OR_RETURN(auto r, c.Call(target, body, service));
  if (r.status != 200) return FailedPrecondition(op + ": " + ErrorText(r));
  return json::parse(r.body, nullptr, false);
}

Result<json> Get(ApiClient& c, const std::string& path, const std::string& query = "") {
  ASSIGN_OR_RETURN(auto r, c.Get(path, query));
  if (r.status != 200) return FailedPrecondition("GET " + path + ": " + ErrorText(r));
  return json::parse(r.body, nullptr, false);
}

int Run(const StatusFlags& f) {
  ApiClient c(f.client);
  auto health = Get(c, "/health");
  if (!health.ok()) {
    std::cerr << "icestream status: " << c.endpoint() << ": " << health.status().message() << "\n";
    return 1;
  }
  std::cout << "icestream at " << c.endpoint() << ": " << (*health)["status"].get<std::string>()
            << "\n";
  for (const auto& s : health->value("shards", json::array())) {
    std::cout << "  degraded: " << s.value("stream", "") << " " << s.value("shard", "") << ": "
              << s.value("reason", "") << "\n";
  }
  int rc = 0;
  auto report = [&](const Status& st) {
    std::cout << "  error: " << st.message() << "\n";
    rc = 1;
  };

  std::cout << "\nSTREAMS\n";
  auto streams = Call(c, "ListStreams", json::object());
  if (!streams.ok()) {
    report(streams.status());
  } else {
    std::cout << fmt::format("  {:<32} {:<9} {:<12} {:>6} {:>9} {:>9}\n", "NAME", "STATUS", "MODE",
                             "SHARDS", "RETENTION", "CONSUMERS");
    for (const auto& n : streams->value("StreamNames", json::array())) {
      auto d = Call(c, "DescribeStreamSummary", {{"StreamName", n}});
      if (!d.ok()) continue;
      const json& s = (*d)["StreamDescriptionSummary"];
      std::cout << fmt::format("  {:<32} {:<9} {:<12} {:>6} {:>8}h {:>9}\n",
                               Cut(n.get<std::string>(), 32), s.value("StreamStatus", ""),
                               s["StreamModeDetails"].value("StreamMode", ""),
                               s.value("OpenShardCount", 0), s.value("RetentionPeriodHours", 0),
                               s.value("ConsumerCount", 0));
    }
    if (streams->value("StreamNames", json::array()).empty()) std::cout << "  (none)\n";
  }

  std::set<std::string> warehouses(f.warehouses.begin(), f.warehouses.end());
  std::cout << "\nCHANNELS\n";
  auto channels = Call(c, "ListChannels", json::object());
  if (!channels.ok()) {
    report(channels.status());
  } else {
    std::cout << fmt::format("  {:<24} {:<6} {:<20} {:<9} {:>10} {:>8} {:>10} {:>8}  {}\n", "NAME",
                             "TO", "STREAM", "STATE", "LAG", "AGE", "DELIVERED", "DLQ",
                             "LAST ERROR");
    for (const auto& sum : channels->value("ChannelSummaries", json::array())) {
      auto d = Call(c, "DescribeChannel", {{"ChannelARN", sum["ChannelARN"]}});
      if (!d.ok()) continue;
      const json& ch = (*d)["ChannelDescription"];
      json st = ch.value("IcestreamStatus", json::object());
      int64_t lag = 0;
      double age = 0;
      for (const auto& sh : st.value("Shards", json::array())) {
        lag += sh.value("LagRecords", int64_t{0});
        age = std::max(age, sh.value("LagSeconds", 0.0));
      }
      std::string stream = ch["StreamConfigurationList"][0].value("StreamARN", "");
      stream = stream.substr(stream.rfind('/') + 1);
      std::string error = ch.value("ChannelStatusReason", "");
      if (error.empty() && st.contains("LastError") && !st["LastError"].is_null()) {
        error = st["LastError"].is_string() ? st["LastError"].get<std::string>()
                                            : st["LastError"].dump();
      }
      bool table = ch.contains("S3TablesDestinationConfiguration");
      if (table) {
        for (const auto& t : ch["S3TablesDestinationConfiguration"].value(
                 "S3TablesConfigurationList", json::array())) {
          std::string arn = t.value("TableBucketARN", "");
          warehouses.insert(arn.substr(arn.rfind('/') + 1));
        }
      }
      std::cout << fmt::format("  {:<24} {:<6} {:<20} {:<9} {:>10} {:>8} {:>10} {:>8}  {}\n",
                               Cut(ch.value("ChannelName", ""), 24), table ? "table" : "S3",
                               Cut(stream, 20), ch.value("ChannelStatus", ""), lag, Age(age),
                               st.value("DeliveredRecordCount", 0), st.value("DLQRecordCount", 0),
                               Cut(error, 60));
    }
    if (channels->value("ChannelSummaries", json::array()).empty()) std::cout << "  (none)\n";
  }

  std::cout << "\nTABLES\n";
  auto cfg0 = Get(c, "/iceberg/v1/config");
  if (!cfg0.ok()) {
    report(cfg0.status());
    return rc;
  }
  if ((*cfg0).contains("defaults") && (*cfg0)["defaults"].contains("prefix")) {
    warehouses.insert((*cfg0)["defaults"]["prefix"].get<std::string>());
  }
  if (warehouses.empty()) warehouses.insert("default");
  std::cout << fmt::format("  {:<16} {:<36} {:>12} {:>7} {:>10}  {}\n", "WAREHOUSE", "TABLE",
                           "ROWS", "FILES", "SNAPSHOTS", "LAST UPDATE");
  int tables = 0;
  for (const auto& w : warehouses) {
    auto cfg = Get(c, "/iceberg/v1/config", "warehouse=" + UriEncode(w));
    if (!cfg.ok()) continue;
    std::string prefix = cfg->contains("overrides") && (*cfg)["overrides"].contains("prefix")
                             ? (*cfg)["overrides"]["prefix"].get<std::string>()
                             : w;
    std::string base = "/iceberg/v1/" + UriEncode(prefix);
    auto nss = Get(c, base + "/namespaces");
    if (!nss.ok()) continue;
    for (const auto& ns : nss->value("namespaces", json::array())) {
      iceberg::Namespace levels = ns.get<std::vector<std::string>>();
      auto ids = Get(c, base + "/namespaces/" + iceberg::rest::EncodeNamespace(levels) + "/tables");
      if (!ids.ok()) continue;
      for (const auto& id : ids->value("identifiers", json::array())) {
        std::string name = id.value("name", "");
        auto t = Get(c, base + "/namespaces/" + iceberg::rest::EncodeNamespace(levels) +
                            "/tables/" + UriEncode(name));
        if (!t.ok()) continue;
        const json& md = (*t)["metadata"];
        json summary = json::object();
        for (const auto& s : md.value("snapshots", json::array())) {
          if (md.contains("current-snapshot-id") && s["snapshot-id"] == md["current-snapshot-id"])
            summary = s["summary"];
        }
        std::string updated;
        if (md.contains("last-updated-ms")) {
          time_t secs = md["last-updated-ms"].get<int64_t>() / 1000;
          char buf[32];
          std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&secs));
          updated = buf;
        }
        ++tables;
        std::cout << fmt::format("  {:<16} {:<36} {:>12} {:>7} {:>10}  {}\n", Cut(w, 16),
                                 Cut(iceberg::NamespaceName(levels) + "." + name, 36),
                                 summary.value("total-records", "0"),
                                 summary.value("total-data-files", "0"),
                                 md.value("snapshots", json::array()).size(), updated);
      }
    }
  }
  if (tables == 0) std::cout << "  (none)\n";
  return rc;
}

}  // namespace

void AddStatusCommand(CLI::App* app) {
  auto f = std::make_shared<StatusFlags>();
  auto* cmd = app->add_subcommand(
      "status", "One screen of a running server: health, streams, channels, tables");
  AddClientFlags(cmd, &f->client, true);
  cmd->add_option("--warehouse", f->warehouses,
                  "Also list the tables of this table bucket (repeatable)");
  cmd->callback([f] { SetExitCode(Run(*f)); });
}

}  // namespace icestream::server
