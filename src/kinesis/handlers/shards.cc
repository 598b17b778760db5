// Shards: ListShards (with ShardFilter and NextToken) and resharding — SplitShard,
// MergeShards, UpdateShardCount (aws-api.md §B.3, §B.6).
#include <fmt/format.h>

#include "kinesis/context.h"

namespace icestream::kinesis {

using nlohmann::json;
using stream::ShardInfo;
using stream::StreamInfo;

namespace {

// Resharding is for PROVISIONED streams only; AWS answers ValidationException.
bool RejectOnDemand(Context& ctx, Call& call, const std::string& name, std::string_view op) {
  auto info = ctx.streams->Describe(name);
  if (!info.ok()) {
    call.Fail(info.status());
    return true;
  }
  if (info->mode == stream::StreamMode::kOnDemand) {
    call.Fail(aws::ValidationError(fmt::format(
        "{} is not supported for stream {} under account {} because its capacity mode is "
        "ON_DEMAND.",
        op, name, ctx.options.account)));
    return true;
  }
  return false;
}

// Which shards a ShardFilter keeps (aws-api.md §B.3).
bool FilterKeeps(const std::string& type, const ShardInfo& s, std::optional<uint32_t> after,
                 int64_t ts, int64_t trim_horizon_ms) {
  if (type == "AFTER_SHARD_ID") return after && s.index > *after;
  if (type == "AT_TRIM_HORIZON") {
    return s.created_ms <= trim_horizon_ms && (s.open() || *s.closed_ms >= trim_horizon_ms);
  }
  if (type == "FROM_TRIM_HORIZON") return true;
  if (type == "AT_LATEST") return s.open();
  if (type == "AT_TIMESTAMP") return s.created_ms <= ts && (s.open() || *s.closed_ms >= ts);
  if (type == "FROM_TIMESTAMP") return s.open() || *s.closed_ms >= ts;
  return true;
}

}  // namespace

void ListShards(Context& ctx, Call& call, aws::Params& p) {
  // Members in the order AWS checks them (kinesalite's validations, recorded against AWS).
  auto start = p.Str("ExclusiveStartShardId");
  if (start) CheckShardIdMember(p, "exclusiveStartShardId", *start);
  auto max_results = p.Int("MaxResults");
  if (max_results) p.Range("maxResults", *max_results, 1, 10000);
  auto token = p.Str("NextToken");
  if (token) p.Length("nextToken", *token, 1, 1048576);
  auto created = p.TimestampMs("StreamCreationTimestamp");
  auto name = p.Str("StreamName");
  if (name) {
    p.Pattern("streamName", *name, aws::MatchesNameChars(*name), "[a-zA-Z0-9_.-]+");
    p.Length("streamName", *name, 1, 128);
  }
  auto arn = p.Str("StreamARN");
  std::optional<std::string> arn_name;
  if (arn) arn_name = StreamNameFromArn(ctx, p, "streamARN", *arn);
  const json* filter = p.Struct("ShardFilter");
  std::string ftype = "FROM_TRIM_HORIZON";
  std::optional<std::string> fshard;
  std::optional<int64_t> fts;
  if (filter) {
    aws::Params f(*filter);
    auto t = f.Str("Type");
    fshard = f.Str("ShardId");
    fts = f.TimestampMs("Timestamp");
    p.Absorb(f);
    p.Required("shardFilter.type", t.has_value());
    if (t) {
      p.Enum("shardFilter.type", *t,
             {"AFTER_SHARD_ID", "AT_TRIM_HORIZON", "FROM_TRIM_HORIZON", "AT_LATEST", "AT_TIMESTAMP",
              "FROM_TIMESTAMP"});
      ftype = *t;
    }
    if (fshard) CheckShardIdMember(p, "shardFilter.shardId", *fshard);
  }
  if (auto e = p.Error()) return call.Fail(*e);

  bool has_stream = name || arn;
  if (token && has_stream) {
    return call.Fail(
        aws::InvalidArgumentError("NextToken and StreamName cannot be provided together."));
  }
  if (!token && !has_stream) {
    return call.Fail(
        aws::InvalidArgumentError("Either NextToken or StreamName should be provided."));
  }
  if (token && (start || created)) {
    return call.Fail(aws::InvalidArgumentError(
        "NextToken cannot be provided together with ExclusiveStartShardId or "
        "StreamCreationTimestamp."));
  }
  if (name && arn_name && *name != *arn_name) {
    return call.Fail(
        aws::InvalidArgumentError("StreamARN and StreamName do not name the same stream."));
  }
  if (filter && ftype == "AFTER_SHARD_ID" && !fshard) {
    return call.Fail(
        aws::InvalidArgumentError("ShardFilter type AFTER_SHARD_ID requires a ShardId."));
  }
  if (filter && (ftype == "AT_TIMESTAMP" || ftype == "FROM_TIMESTAMP") && !fts) {
    return call.Fail(
        aws::InvalidArgumentError(fmt::format("ShardFilter type {} requires a Timestamp.", ftype)));
  }
  if (filter && ftype != "AFTER_SHARD_ID" && fshard) {
    return call.Fail(aws::InvalidArgumentError(
        fmt::format("ShardFilter type {} does not take a ShardId.", ftype)));
  }

  std::string stream_name = name ? *name : arn_name.value_or("");
  std::optional<uint32_t> after;
  int64_t limit = max_results.value_or(1000);
  if (token) {
    auto t = ctx.tokens.DecodeNextToken(*token);
    if (!t || !t->payload.contains("stream")) {
      return call.Fail(aws::InvalidArgumentError("Invalid NextToken."));
    }
    if (ctx.clock->NowMillis() - t->issued_ms > ctx.options.next_token_ttl_ms) {
      return call.Fail(aws::ApiError{"ExpiredNextTokenException",
                                     "The NextToken has expired; list the shards again.", 400});
    }
    const json& pl = t->payload;
    stream_name = pl["stream"].get<std::string>();
    after = pl["after"].get<uint32_t>();
    ftype = pl.value("ftype", std::string("FROM_TRIM_HORIZON"));
    if (pl.contains("fshard")) fshard = pl["fshard"].get<std::string>();
    if (pl.contains("fts")) fts = pl["fts"].get<int64_t>();
    if (!max_results) limit = pl.value("max", 1000);
  } else if (start) {
    after = stream::ParseShardId(*start);
    if (!after) after = UINT32_MAX;
  }
  limit = std::min<int64_t>(limit, 1000);

  auto info = ctx.streams->Describe(stream_name);
  if (!info.ok()) return call.Fail(info.status());
  if (created && *created / 1000 != info->created_ms / 1000) {
    // Another incarnation of the stream of that name.
    return call.Fail(NotFound(
        fmt::format("Stream {} under account {} not found.", stream_name, ctx.options.account)));
  }
  std::optional<uint32_t> filter_after;
  if (fshard) filter_after = stream::ParseShardId(*fshard);
  int64_t now = ctx.clock->NowMillis();
  // The trim horizon as a time: nothing is older than the stream itself.
  int64_t trim_ms =
      std::max<int64_t>(now - info->retention_hours * 3600 * 1000LL, info->created_ms);
  int64_t ts = fts.value_or(0);
  if (ftype == "FROM_TIMESTAMP" || ftype == "AT_TIMESTAMP") ts = std::max(ts, trim_ms);

  json shards = json::array();
  bool more = false;
  uint32_t last = 0;
  for (const auto& s : info->shards) {
    if (after && s.index <= *after) continue;
    if (!FilterKeeps(ftype, s, filter_after, ts, trim_ms)) continue;
    if (static_cast<int64_t>(shards.size()) == limit) {
      more = true;
      break;
    }
    shards.push_back(ShardJson(*info, s));
    last = s.index;
  }
  json out = {{"Shards", shards}};
  if (more) {
    json pl = {{"stream", stream_name}, {"after", last}, {"ftype", ftype}, {"max", limit}};
    if (fshard) pl["fshard"] = *fshard;
    if (fts) pl["fts"] = *fts;
    out["NextToken"] = ctx.tokens.EncodeNextToken(pl, now);
  }
  call.Reply(out);
}

void SplitShard(Context& ctx, Call& call, aws::Params& p) {
  auto key = p.Str("NewStartingHashKey");
  p.Required("newStartingHashKey", key.has_value());
  if (key)
    p.Pattern("newStartingHashKey", *key, aws::MatchesDecimal(*key, 39), "0|([1-9]\\d{0,38})");
  auto name = StreamSelector(ctx, p);
  auto shard = p.Str("ShardToSplit");
  p.Required("shardToSplit", shard.has_value());
  if (shard) CheckShardIdMember(p, "shardToSplit", *shard);
  if (auto e = p.Error()) return call.Fail(*e);
  if (RejectOnDemand(ctx, call, *name, "SplitShard")) return;
  auto k = ParseDecimal128(*key);
  if (!k) {
    return call.Fail(aws::InvalidArgumentError(fmt::format(
        "NewStartingHashKey {} used in SplitShard() is not a valid hash key: it must be in the "
        "range [0, 2^128-1].",
        *key)));
  }
  auto idx = stream::ParseShardId(*shard);
  if (!idx) {
    return call.Fail(stream::CouldNotFindShardError(*shard, *name, ctx.options.account));
  }
  Status st = ctx.streams->SplitShard(*name, *idx, *k);
  if (!st.ok()) return call.Fail(st);
  call.ReplyEmpty();
}

void MergeShards(Context& ctx, Call& call, aws::Params& p) {
  auto a = p.Str("ShardToMerge");
  p.Required("shardToMerge", a.has_value());
  if (a) CheckShardIdMember(p, "shardToMerge", *a);
  auto b = p.Str("AdjacentShardToMerge");
  p.Required("adjacentShardToMerge", b.has_value());
  if (b) CheckShardIdMember(p, "adjacentShardToMerge", *b);
  auto name = StreamSelector(ctx, p);
  if (auto e = p.Error()) return call.Fail(*e);
  if (RejectOnDemand(ctx, call, *name, "MergeShards")) return;
  auto ia = stream::ParseShardId(*a);
  auto ib = stream::ParseShardId(*b);
  for (auto [parsed, text] : {std::pair{ia, *a}, std::pair{ib, *b}}) {
    if (!parsed) {
      return call.Fail(stream::CouldNotFindShardError(text, *name, ctx.options.account));
    }
  }
  Status st = ctx.streams->MergeShards(*name, *ia, *ib);
  if (!st.ok()) return call.Fail(st);
  call.ReplyEmpty();
}

void UpdateShardCount(Context& ctx, Call& call, aws::Params& p) {
  auto name = StreamSelector(ctx, p);
  auto target = p.Int("TargetShardCount");
  auto scaling = p.Str("ScalingType");
  p.Required("targetShardCount", target.has_value());
  p.Required("scalingType", scaling.has_value());
  if (target) p.Range("targetShardCount", *target, 1, INT32_MAX);
  if (scaling) p.Enum("scalingType", *scaling, {"UNIFORM_SCALING"});
  if (auto e = p.Error()) return call.Fail(*e);
  if (RejectOnDemand(ctx, call, *name, "UpdateShardCount")) return;
  auto before = ctx.streams->UpdateShardCount(*name, static_cast<uint32_t>(*target));
  if (!before.ok()) return call.Fail(before.status());
  call.Reply({{"StreamName", *name},
              {"StreamARN", ctx.streams->ArnFor(*name)},
              {"CurrentShardCount", *before},
              {"TargetShardCount", *target}});
}

}  // namespace icestream::kinesis
