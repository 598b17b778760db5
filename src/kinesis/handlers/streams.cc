// Stream lifecycle and description: CreateStream, DeleteStream, DescribeStream,
// DescribeStreamSummary, ListStreams, DescribeLimits, retention, mode, monitoring,
// encryption, record size, warm throughput, account settings (aws-api.md §B.1–§B.3, §B.8).
#include <fmt/format.h>

#include <algorithm>

#include "delivery/channel_manager.h"
#include "kinesis/context.h"

namespace icestream::kinesis {

using nlohmann::json;
using stream::StreamInfo;
using stream::StreamMode;

namespace {

constexpr int kMinRetention = 24;
constexpr int kMaxRetention = 8760;

json EnhancedMonitoring(const StreamInfo& info) {
  return json::array({{{"ShardLevelMetrics", info.shard_level_metrics}}});
}

json ModeDetails(const StreamInfo& info) {
  return {{"StreamMode", stream::StreamModeName(info.mode)}};
}

void AddEncryption(const StreamInfo& info, json* out) {
  (*out)["EncryptionType"] = info.encryption_type;
  if (info.encryption_type == "KMS") (*out)["KeyId"] = info.key_id;
}

std::optional<StreamMode> ReadModeDetails(aws::Params& p, const char* member) {
  const json* md = p.Struct(member);
  if (!md) return std::nullopt;
  aws::Params inner(*md);
  auto mode = inner.Str("StreamMode");
  std::string path = aws::Params::PathOf(member) + ".streamMode";
  inner.Required(path, mode.has_value());
  if (mode) inner.Enum(path, *mode, {"PROVISIONED", "ON_DEMAND"});
  p.Absorb(inner);
  if (inner.failed()) return std::nullopt;
  return *mode == "ON_DEMAND" ? StreamMode::kOnDemand : StreamMode::kProvisioned;
}

std::map<std::string, std::string> TagsFrom(const json& map) {
  std::map<std::string, std::string> out;
  for (auto it = map.begin(); it != map.end(); ++it) {
    out[it.key()] = it.value().is_string() ? it.value().get<std::string>() : "";
  }
  return out;
}

void ChangeRetention(Context& ctx, Call& call, aws::Params& p, bool increase) {
  // Members in the order AWS checks them (kinesalite's validations, recorded against AWS).
  auto hours = p.Int("RetentionPeriodHours");
  p.Required("retentionPeriodHours", hours.has_value());
  auto name = StreamSelector(ctx, p);
  if (auto e = p.Error()) return call.Fail(*e);
  int h = static_cast<int>(*hours);
  if (h < kMinRetention) {
    return call.Fail(aws::InvalidArgumentError(fmt::format(
        "Minimum allowed retention period is {} hours. Requested retention period ({} hours) is "
        "too short.",
        kMinRetention, h)));
  }
  if (h > kMaxRetention) {
    return call.Fail(aws::InvalidArgumentError(fmt::format(
        "Maximum allowed retention period is {} hours. Requested retention period ({} hours) is "
        "too long.",
        kMaxRetention, h)));
  }
  Status st = ctx.streams->Mutate(*name, [&](StreamInfo& info) -> Status {
    if (info.status != stream::StreamStatus::kActive) {
      return FailedPrecondition(
          fmt::format("Stream {} under account {} not ACTIVE, instead in state {}", info.name,
                      ctx.options.account, stream::StreamStatusName(info.status)));
    }
    if (increase && h < info.retention_hours) {
      return InvalidArgument(fmt::format(
          "Requested retention period ({} hours) for stream {} can not be shorter than existing "
          "retention period ({} hours). Use DecreaseRetentionPeriod API.",
          h, info.name, info.retention_hours));
    }
    if (!increase && h > info.retention_hours) {
      return InvalidArgument(fmt::format(
          "Requested retention period ({} hours) for stream {} can not be longer than existing "
          "retention period ({} hours). Use IncreaseRetentionPeriod API.",
          h, info.name, info.retention_hours));
    }
    info.retention_hours = h;
    return Status::OK();
  });
  if (!st.ok()) return call.Fail(st);
  call.ReplyEmpty();
}

const std::vector<std::string> kAllMetrics = {"IncomingBytes",
                                              "IncomingRecords",
                                              "OutgoingBytes",
                                              "OutgoingRecords",
                                              "WriteProvisionedThroughputExceeded",
                                              "ReadProvisionedThroughputExceeded",
                                              "IteratorAgeMilliseconds"};

void ChangeMonitoring(Context& ctx, Call& call, aws::Params& p, bool enable) {
  auto name = StreamSelector(ctx, p);
  const json* metrics = p.List("ShardLevelMetrics");
  p.Required("shardLevelMetrics", metrics != nullptr);
  std::vector<std::string> wanted;
  if (metrics) {
    p.ListLength("shardLevelMetrics", metrics->size(), aws::Params::RenderList(*metrics), 1, 7);
    for (size_t i = 0; i < metrics->size(); ++i) {
      const json& m = (*metrics)[i];
      std::string v = m.is_string() ? m.get<std::string>() : m.dump();
      p.Enum(fmt::format("shardLevelMetrics.{}.member", i + 1), v,
             {"IncomingBytes", "IncomingRecords", "OutgoingBytes", "OutgoingRecords",
              "WriteProvisionedThroughputExceeded", "ReadProvisionedThroughputExceeded",
              "IteratorAgeMilliseconds", "ALL"});
      if (v == "ALL") {
        wanted = kAllMetrics;
      } else if (std::find(wanted.begin(), wanted.end(), v) == wanted.end()) {
        wanted.push_back(v);
      }
    }
  }
  if (auto e = p.Error()) return call.Fail(*e);
  std::vector<std::string> before, after;
  Status st = ctx.streams->Mutate(*name, [&](StreamInfo& info) -> Status {
    before = info.shard_level_metrics;
    std::vector<std::string> next;
    for (const auto& m : kAllMetrics) {
      bool had = std::find(before.begin(), before.end(), m) != before.end();
      bool in = std::find(wanted.begin(), wanted.end(), m) != wanted.end();
      if (enable ? (had || in) : (had && !in)) next.push_back(m);
    }
    info.shard_level_metrics = next;
    after = next;
    return Status::OK();
  });
  if (!st.ok()) return call.Fail(st);
  call.Reply({{"StreamName", *name},
              {"StreamARN", ctx.streams->ArnFor(*name)},
              {"CurrentShardLevelMetrics", before},
              {"DesiredShardLevelMetrics", after}});
}

}  // namespace

void CreateStream(Context& ctx, Call& call, aws::Params& p) {
  auto shard_count = p.Int("ShardCount");
  if (shard_count) p.Range("shardCount", *shard_count, 1, INT32_MAX);
  auto name = p.Str("StreamName");
  auto mode = ReadModeDetails(p, "StreamModeDetails");
  const json* tags = p.Map("Tags");
  auto max_kib = p.Int("MaxRecordSizeInKiB");
  auto warm = p.Int("WarmThroughputMiBps");
  p.Required("streamName", name.has_value());
  if (name) {
    p.Pattern("streamName", *name, aws::MatchesNameChars(*name), "[a-zA-Z0-9_.-]+");
    p.Length("streamName", *name, 1, 128);
  }
  if (tags) CheckTagMap(p, "tags", *tags, 200);
  if (max_kib) p.Range("maxRecordSizeInKiB", *max_kib, 1024, 10240);
  if (warm) p.Range("warmThroughputMiBps", *warm, 0, INT32_MAX);
  if (auto e = p.Error()) return call.Fail(*e);

  stream::CreateStreamRequest req;
  req.name = *name;
  // Without StreamModeDetails a ShardCount means PROVISIONED (as the CLI's --shard-count
  // always did); with neither, the stream is ON_DEMAND.
  req.mode = mode.value_or(shard_count ? StreamMode::kProvisioned : StreamMode::kOnDemand);
  if (req.mode == StreamMode::kProvisioned && !shard_count) {
    return call.Fail(
        aws::InvalidArgumentError("ShardCount is required when StreamMode is PROVISIONED."));
  }
  if (req.mode == StreamMode::kOnDemand && shard_count) {
    return call.Fail(
        aws::InvalidArgumentError("ShardCount is not expected when StreamMode=ON_DEMAND"));
  }
  if (warm && req.mode != StreamMode::kOnDemand) {
    return call.Fail(
        aws::InvalidArgumentError("WarmThroughputMiBps can only be set for ON_DEMAND streams."));
  }
  req.shard_count = shard_count ? static_cast<uint32_t>(*shard_count) : 0;
  if (tags) {
    if (tags->size() > 50) {
      return call.Fail(
          aws::InvalidArgumentError("Failed to create stream: a stream can have at most 50 tags."));
    }
    req.tags = TagsFrom(*tags);
  }
  req.max_record_kib = max_kib ? static_cast<int>(*max_kib) : 1024;
  if (warm) req.warm_throughput_mibps = static_cast<int>(*warm);
  auto r = ctx.streams->CreateStream(req);
  if (!r.ok()) return call.Fail(r.status());
  call.ReplyEmpty();
}

void DeleteStream(Context& ctx, Call& call, aws::Params& p) {
  auto name = StreamSelector(ctx, p);
  auto enforce = p.Bool("EnforceConsumerDeletion");
  if (auto e = p.Error()) return call.Fail(*e);
  if (!enforce.value_or(false)) {
    // AWS: a stream with registered consumers is deleted only with EnforceConsumerDeletion.
    auto info = ctx.streams->Describe(*name);
    if (info.ok() && LiveConsumerCount(*info, ctx.clock->NowMillis()) > 0) {
      return call.Fail(FailedPrecondition(
          fmt::format("Stream {} under account {} has registered consumers; deregister them or set "
                      "EnforceConsumerDeletion.",
                      *name, ctx.options.account)));
    }
  }
  if (ctx.channels && ctx.channels->CountForStream(*name) > 0) {
    return call.Fail(FailedPrecondition(fmt::format(
        "Stream {} under account {} has channels; delete them first (ListChannels with a "
        "StreamFilter finds them).",
        *name, ctx.options.account)));
  }
  Status st = ctx.streams->DeleteStream(*name);
  if (!st.ok()) return call.Fail(st);
  call.ReplyEmpty();
}

void DescribeStream(Context& ctx, Call& call, aws::Params& p) {
  auto limit = p.Int("Limit");
  if (limit) p.Range("limit", *limit, 1, 10000);
  auto start = p.Str("ExclusiveStartShardId");
  if (start) CheckShardIdMember(p, "exclusiveStartShardId", *start);
  auto name = StreamSelector(ctx, p);
  if (auto e = p.Error()) return call.Fail(*e);
  auto info = ctx.streams->Describe(*name);
  if (!info.ok()) return call.Fail(info.status());
  size_t max = static_cast<size_t>(std::min<int64_t>(limit.value_or(100), 100));
  std::optional<uint32_t> after;
  if (start) after = stream::ParseShardId(*start);
  json shards = json::array();
  bool more = false;
  // A stream still CREATING lists no shards yet (as AWS answers; kinesalite's suite).
  bool creating = info->status == stream::StreamStatus::kCreating;
  for (const auto& s : info->shards) {
    if (creating) break;
    if (start && (!after || s.index <= *after)) continue;
    if (shards.size() == max) {
      more = true;
      break;
    }
    shards.push_back(ShardJson(*info, s));
  }
  json d = {{"StreamName", info->name},
            {"StreamARN", info->arn},
            {"StreamStatus", stream::StreamStatusName(info->status)},
            {"StreamModeDetails", ModeDetails(*info)},
            {"Shards", shards},
            {"HasMoreShards", more},
            {"RetentionPeriodHours", info->retention_hours},
            {"StreamCreationTimestamp", EpochSeconds(info->created_ms)},
            {"EnhancedMonitoring", EnhancedMonitoring(*info)}};
  AddEncryption(*info, &d);
  call.Reply({{"StreamDescription", d}});
}

void DescribeStreamSummary(Context& ctx, Call& call, aws::Params& p) {
  auto name = StreamSelector(ctx, p);
  if (auto e = p.Error()) return call.Fail(*e);
  auto info = ctx.streams->Describe(*name);
  if (!info.ok()) return call.Fail(info.status());
  json d = {{"StreamName", info->name},
            {"StreamARN", info->arn},
            {"StreamStatus", stream::StreamStatusName(info->status)},
            {"StreamModeDetails", ModeDetails(*info)},
            {"RetentionPeriodHours", info->retention_hours},
            {"StreamCreationTimestamp", EpochSeconds(info->created_ms)},
            {"EnhancedMonitoring", EnhancedMonitoring(*info)},
            {"OpenShardCount", info->OpenShardCount()},
            {"ConsumerCount", LiveConsumerCount(*info, ctx.clock->NowMillis())},
            {"ChannelCount", ctx.channels ? ctx.channels->CountForStream(info->name) : 0},
            {"MaxRecordSizeInKiB", info->max_record_kib}};
  if (info->warm_throughput_mibps) {
    d["WarmThroughput"] = {{"TargetMiBps", *info->warm_throughput_mibps},
                           {"CurrentMiBps", *info->warm_throughput_mibps}};
  }
  AddEncryption(*info, &d);
  call.Reply({{"StreamDescriptionSummary", d}});
}

void ListStreams(Context& ctx, Call& call, aws::Params& p) {
  auto limit = p.Int("Limit");
  auto start = p.Str("ExclusiveStartStreamName");
  auto token = p.Str("NextToken");
  if (limit) p.Range("limit", *limit, 1, 10000);
  if (start) {
    p.Pattern("exclusiveStartStreamName", *start, aws::MatchesNameChars(*start), "[a-zA-Z0-9_.-]+");
    p.Length("exclusiveStartStreamName", *start, 1, 128);
  }
  if (token) p.Length("nextToken", *token, 1, 1048576);
  if (auto e = p.Error()) return call.Fail(*e);
  std::optional<std::string> after = start;
  if (token) {
    auto t = ctx.tokens.DecodeNextToken(*token);
    if (!t || !t->payload.contains("after")) {
      return call.Fail(aws::InvalidArgumentError("Invalid NextToken."));
    }
    if (ctx.clock->NowMillis() - t->issued_ms > ctx.options.next_token_ttl_ms) {
      return call.Fail(
          aws::ApiError{"ExpiredNextTokenException", "The NextToken has expired.", 400});
    }
    after = t->payload["after"].get<std::string>();
  }
  size_t max = static_cast<size_t>(std::min<int64_t>(limit.value_or(100), 100));
  json names = json::array(), summaries = json::array();
  bool more = false;
  for (const auto& info : ctx.streams->ListStreams()) {
    if (after && info.name <= *after) continue;
    if (names.size() == max) {
      more = true;
      break;
    }
    names.push_back(info.name);
    summaries.push_back({{"StreamName", info.name},
                         {"StreamARN", info.arn},
                         {"StreamStatus", stream::StreamStatusName(info.status)},
                         {"StreamModeDetails", ModeDetails(info)},
                         {"StreamCreationTimestamp", EpochSeconds(info.created_ms)}});
  }
  json out = {{"StreamNames", names}, {"HasMoreStreams", more}, {"StreamSummaries", summaries}};
  if (more) {
    out["NextToken"] = ctx.tokens.EncodeNextToken({{"after", names.back().get<std::string>()}},
                                                  ctx.clock->NowMillis());
  }
  call.Reply(out);
}

void DescribeLimits(Context& ctx, Call& call, aws::Params& p) {
  if (auto e = p.Error()) return call.Fail(*e);
  auto totals = ctx.streams->Totals();
  const auto& o = ctx.streams->options();
  call.Reply({{"ShardLimit", o.shard_limit},
              {"OpenShardCount", totals.open_shards},
              {"OnDemandStreamCount", totals.on_demand_streams},
              {"OnDemandStreamCountLimit", o.on_demand_stream_limit},
              {"ChannelCount", ctx.channels ? ctx.channels->Count() : 0},
              {"ChannelCountLimit", ctx.channels ? ctx.channels->Limit() : 0}});
}

void IncreaseStreamRetentionPeriod(Context& ctx, Call& call, aws::Params& p) {
  ChangeRetention(ctx, call, p, true);
}

void DecreaseStreamRetentionPeriod(Context& ctx, Call& call, aws::Params& p) {
  ChangeRetention(ctx, call, p, false);
}

void UpdateStreamMode(Context& ctx, Call& call, aws::Params& p) {
  auto arn = p.Str("StreamARN");
  auto mode = ReadModeDetails(p, "StreamModeDetails");
  auto warm = p.Int("WarmThroughputMiBps");
  p.Required("streamARN", arn.has_value());
  p.Required("streamModeDetails", p.Has("StreamModeDetails"));
  std::optional<std::string> name;
  if (arn) name = StreamNameFromArn(ctx, p, "streamARN", *arn);
  if (warm) p.Range("warmThroughputMiBps", *warm, 0, INT32_MAX);
  if (auto e = p.Error()) return call.Fail(*e);
  if (!mode || !name) return call.Fail(aws::InvalidArgumentError("StreamModeDetails is required."));
  if (warm && *mode != StreamMode::kOnDemand) {
    return call.Fail(aws::InvalidArgumentError(
        "WarmThroughputMiBps can only be specified when switching a stream to ON_DEMAND."));
  }
  Status st = ctx.streams->UpdateStreamMode(*name, *mode);
  if (!st.ok()) return call.Fail(st);
  if (warm && *mode == StreamMode::kOnDemand) {
    (void)ctx.streams->Mutate(*name, [&](StreamInfo& info) {
      info.warm_throughput_mibps = static_cast<int>(*warm);
      return Status::OK();
    });
  }
  call.ReplyEmpty();
}

void EnableEnhancedMonitoring(Context& ctx, Call& call, aws::Params& p) {
  ChangeMonitoring(ctx, call, p, true);
}

void DisableEnhancedMonitoring(Context& ctx, Call& call, aws::Params& p) {
  ChangeMonitoring(ctx, call, p, false);
}

void StartStreamEncryption(Context& ctx, Call& call, aws::Params& p) {
  auto name = StreamSelector(ctx, p);
  auto type = p.Str("EncryptionType");
  auto key = p.Str("KeyId");
  p.Required("encryptionType", type.has_value());
  p.Required("keyId", key.has_value());
  if (type) p.Enum("encryptionType", *type, {"NONE", "KMS"});
  if (key) p.Length("keyId", *key, 1, 2048);
  if (auto e = p.Error()) return call.Fail(*e);
  if (*type != "KMS") {
    return call.Fail(aws::InvalidArgumentError("EncryptionType must be KMS to start encryption."));
  }
  Status st = ctx.streams->Mutate(*name, [&](StreamInfo& info) {
    info.encryption_type = "KMS";
    info.key_id = *key;
    return Status::OK();
  });
  if (!st.ok()) return call.Fail(st);
  call.ReplyEmpty();
}

void StopStreamEncryption(Context& ctx, Call& call, aws::Params& p) {
  auto name = StreamSelector(ctx, p);
  auto type = p.Str("EncryptionType");
  auto key = p.Str("KeyId");
  p.Required("encryptionType", type.has_value());
  p.Required("keyId", key.has_value());
  if (type) p.Enum("encryptionType", *type, {"NONE", "KMS"});
  if (auto e = p.Error()) return call.Fail(*e);
  Status st = ctx.streams->Mutate(*name, [&](StreamInfo& info) {
    info.encryption_type = "NONE";
    info.key_id.clear();
    return Status::OK();
  });
  if (!st.ok()) return call.Fail(st);
  call.ReplyEmpty();
}

void UpdateMaxRecordSize(Context& ctx, Call& call, aws::Params& p) {
  auto name = StreamSelector(ctx, p);
  auto kib = p.Int("MaxRecordSizeInKiB");
  p.Required("maxRecordSizeInKiB", kib.has_value());
  if (kib) p.Range("maxRecordSizeInKiB", *kib, 1024, 10240);
  if (auto e = p.Error()) return call.Fail(*e);
  Status st = ctx.streams->Mutate(*name, [&](StreamInfo& info) {
    info.max_record_kib = static_cast<int>(*kib);
    return Status::OK();
  });
  if (!st.ok()) return call.Fail(st);
  call.ReplyEmpty();
}

void UpdateStreamWarmThroughput(Context& ctx, Call& call, aws::Params& p) {
  auto name = StreamSelector(ctx, p);
  auto mib = p.Int("WarmThroughputMiBps");
  p.Required("warmThroughputMiBps", mib.has_value());
  if (mib) p.Range("warmThroughputMiBps", *mib, 0, INT32_MAX);
  if (auto e = p.Error()) return call.Fail(*e);
  Status st = ctx.streams->Mutate(*name, [&](StreamInfo& info) -> Status {
    if (info.mode != StreamMode::kOnDemand) {
      return InvalidArgument("Warm throughput applies to ON_DEMAND streams only.");
    }
    info.warm_throughput_mibps = static_cast<int>(*mib);
    return Status::OK();
  });
  if (!st.ok()) return call.Fail(st);
  call.Reply({{"StreamName", *name},
              {"StreamARN", ctx.streams->ArnFor(*name)},
              {"WarmThroughput", {{"TargetMiBps", *mib}, {"CurrentMiBps", *mib}}}});
}

void DescribeAccountSettings(Context& ctx, Call& call, aws::Params& p) {
  if (auto e = p.Error()) return call.Fail(*e);
  std::lock_guard lock(ctx.account_mu);
  call.Reply({{"MinimumThroughputBillingCommitment", {{"Status", ctx.commitment_status}}}});
}

void UpdateAccountSettings(Context& ctx, Call& call, aws::Params& p) {
  const json* c = p.Struct("MinimumThroughputBillingCommitment");
  p.Required("minimumThroughputBillingCommitment", c != nullptr);
  std::string status = "DISABLED";
  if (c) {
    aws::Params inner(*c);
    auto s = inner.Str("Status");
    if (!s) p.Required("minimumThroughputBillingCommitment.status", false);
    if (s) {
      p.Enum("minimumThroughputBillingCommitment.status", *s, {"ENABLED", "DISABLED"});
      status = *s;
    }
    p.Absorb(inner);
  }
  if (auto e = p.Error()) return call.Fail(*e);
  {
    std::lock_guard lock(ctx.account_mu);
    ctx.commitment_status = status;
  }
  call.Reply({{"MinimumThroughputBillingCommitment", {{"Status", status}}}});
}

}  // namespace icestream::kinesis
