// Stream model helpers and the meta.db JSON document codec.
#include "stream/model.h"

#include <nlohmann/json.hpp>

#include "aws/arn.h"

namespace icestream::stream {

std::string_view StreamStatusName(StreamStatus s) {
  switch (s) {
    case StreamStatus::kCreating:
      return "CREATING";
    case StreamStatus::kActive:
      return "ACTIVE";
    case StreamStatus::kUpdating:
      return "UPDATING";
    case StreamStatus::kDeleting:
      return "DELETING";
  }
  return "ACTIVE";
}

std::string_view StreamModeName(StreamMode m) {
  return m == StreamMode::kOnDemand ? "ON_DEMAND" : "PROVISIONED";
}

std::string ShardIdString(uint32_t index) {
  std::string out;
  AppendShardId(&out, index);
  return out;
}

void AppendShardId(std::string* out, uint32_t index) {
  char buf[20] = {'s', 'h', 'a', 'r', 'd', 'I', 'd', '-'};
  for (int i = 19; i >= 8; --i) {
    buf[i] = static_cast<char>('0' + index % 10);
    index /= 10;
  }
  out->append(buf, sizeof buf);
}

std::optional<uint32_t> ParseShardId(std::string_view id) {
  // AWS resolves the piece between the first and second '-' (or the whole id when it has
  // none) as the shard's number, 0..2^31-1 (kinesalite's suite): "shardId-7", "shard-7"
  // and "7" name shard 7.
  size_t dash = id.find('-');
  std::string_view digits = id;
  if (dash != std::string_view::npos) {
    digits = id.substr(dash + 1);
    digits = digits.substr(0, digits.find('-'));
  }
  if (digits.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
    if (v > 2147483647) return std::nullopt;
  }
  return static_cast<uint32_t>(v);
}

const ShardInfo* StreamInfo::FindShard(uint32_t index) const {
  for (const auto& s : shards) {
    if (s.index == index) return &s;
  }
  return nullptr;
}

size_t StreamInfo::OpenShardCount() const {
  size_t n = 0;
  for (const auto& s : shards) n += s.open() ? 1 : 0;
  return n;
}

std::string StreamArn(std::string_view region, std::string_view account, std::string_view name) {
  return aws::Arn{"aws", "kinesis", std::string(region), std::string(account),
                  "stream/" + std::string(name)}
      .ToString();
}

Status ShardNotFoundError(std::string_view shard_id, std::string_view stream,
                          std::string_view account) {
  return NotFound("Shard " + std::string(shard_id) + " in stream " + std::string(stream) +
                  " under account " + std::string(account) + " does not exist");
}

Status CouldNotFindShardError(std::string_view shard_id, std::string_view stream,
                              std::string_view account) {
  return NotFound("Could not find shard " + std::string(shard_id) + " in stream " +
                  std::string(stream) + " under account " + std::string(account) + ".");
}

std::optional<StreamArnParts> ParseStreamArn(std::string_view text) {
  auto arn = aws::ParseArn(text);
  if (!arn || !arn->Is("kinesis", "stream")) return std::nullopt;
  std::string_view id = arn->ResourceId();
  std::string_view name = id.substr(0, id.find('/'));
  if (name.empty()) return std::nullopt;
  return StreamArnParts{arn->partition, arn->region, arn->account, std::string(name)};
}

namespace {
using nlohmann::json;

json ShardToJson(const ShardInfo& s) {
  json j = {{"index", s.index},
            {"start", ToDecimal(s.range.start)},
            {"end", ToDecimal(s.range.end)},
            {"created_ms", s.created_ms}};
  if (s.parent) j["parent"] = *s.parent;
  if (s.adjacent_parent) j["adjacent_parent"] = *s.adjacent_parent;
  if (s.closed_ms) j["closed_ms"] = *s.closed_ms;
  if (s.end_offset) j["end_offset"] = *s.end_offset;
  return j;
}

Result<ShardInfo> ShardFromJson(const json& j) {
  ShardInfo s;
  s.index = j.at("index").get<uint32_t>();
  auto start = ParseDecimal128(j.at("start").get<std::string>());
  auto end = ParseDecimal128(j.at("end").get<std::string>());
  if (!start || !end) return Corruption("bad hash range in stream metadata");
  s.range = {*start, *end};
  s.created_ms = j.at("created_ms").get<int64_t>();
  if (j.contains("parent")) s.parent = j["parent"].get<uint32_t>();
  if (j.contains("adjacent_parent")) s.adjacent_parent = j["adjacent_parent"].get<uint32_t>();
  if (j.contains("closed_ms")) s.closed_ms = j["closed_ms"].get<int64_t>();
  if (j.contains("end_offset")) s.end_offset = j["end_offset"].get<uint64_t>();
  return s;
}

}  // namespace

std::string StreamInfoToJson(const StreamInfo& info) {
  json shards = json::array();
  for (const auto& s : info.shards) shards.push_back(ShardToJson(s));
  json j = {{"name", info.name},
            {"uid", info.uid},
            {"arn", info.arn},
            {"status", StreamStatusName(info.status)},
            {"mode", StreamModeName(info.mode)},
            {"retention_hours", info.retention_hours},
            {"created_ms", info.created_ms},
            {"max_record_kib", info.max_record_kib},
            {"next_shard_index", info.next_shard_index},
            {"shards", shards},
            {"tags", info.tags},
            {"encryption_type", info.encryption_type},
            {"key_id", info.key_id},
            {"shard_level_metrics", info.shard_level_metrics},
            {"resource_policy", info.resource_policy},
            {"scaling_events_ms", info.scaling_events_ms}};
  if (info.warm_throughput_mibps) j["warm_throughput_mibps"] = *info.warm_throughput_mibps;
  if (!info.consumers.empty()) {
    json consumers = json::array();
    for (const auto& c : info.consumers) {
      json cj = {{"name", c.name}, {"created_ms", c.created_ms}, {"tags", c.tags}};
      if (c.deleting_since_ms) cj["deleting_since_ms"] = *c.deleting_since_ms;
      consumers.push_back(std::move(cj));
    }
    j["consumers"] = std::move(consumers);
  }
  return j.dump();
}

Result<StreamInfo> StreamInfoFromJson(std::string_view text) {
  try {
    json j = json::parse(text);
    StreamInfo info;
    info.name = j.at("name").get<std::string>();
    info.uid = j.at("uid").get<uint64_t>();
    info.arn = j.at("arn").get<std::string>();
    std::string status = j.at("status").get<std::string>();
    info.status = status == "CREATING"   ? StreamStatus::kCreating
                  : status == "UPDATING" ? StreamStatus::kUpdating
                  : status == "DELETING" ? StreamStatus::kDeleting
                                         : StreamStatus::kActive;
    info.mode = j.at("mode").get<std::string>() == "ON_DEMAND" ? StreamMode::kOnDemand
                                                               : StreamMode::kProvisioned;
    info.retention_hours = j.at("retention_hours").get<int>();
    info.created_ms = j.at("created_ms").get<int64_t>();
    info.max_record_kib = j.value("max_record_kib", 1024);
    info.next_shard_index = j.at("next_shard_index").get<uint32_t>();
    for (const auto& s : j.at("shards")) {
      ASSIGN_OR_RETURN(ShardInfo shard, ShardFromJson(s));
      info.shards.push_back(std::move(shard));
    }
    info.tags = j.value("tags", std::map<std::string, std::string>{});
    info.encryption_type = j.value("encryption_type", std::string("NONE"));
    info.key_id = j.value("key_id", std::string());
    info.shard_level_metrics = j.value("shard_level_metrics", std::vector<std::string>{});
    info.resource_policy = j.value("resource_policy", std::string());
    info.scaling_events_ms = j.value("scaling_events_ms", std::vector<int64_t>{});
    if (j.contains("warm_throughput_mibps")) {
      info.warm_throughput_mibps = j["warm_throughput_mibps"].get<int>();
    }
    for (const auto& cj : j.value("consumers", json::array())) {
      ConsumerInfo c;
      c.name = cj.at("name").get<std::string>();
      c.created_ms = cj.at("created_ms").get<int64_t>();
      if (cj.contains("deleting_since_ms"))
        c.deleting_since_ms = cj["deleting_since_ms"].get<int64_t>();
      c.tags = cj.value("tags", std::map<std::string, std::string>{});
      info.consumers.push_back(std::move(c));
    }
    return info;
  } catch (const std::exception& e) {
    return Corruption(std::string("stream metadata: ") + e.what());
  }
}

}  // namespace icestream::stream
