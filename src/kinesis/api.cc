// Kinesis API dispatch, the Call helpers and the shared member checks.
#include "kinesis/api.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <thread>
#include <unordered_map>

#include "aws/arn.h"
#include "aws/json_request.h"
#include "common/base64.h"
#include "common/crypto.h"
#include "kinesis/context.h"
#include "stream/sequence_number.h"

namespace icestream::kinesis {

using nlohmann::json;

void Call::Reply(const json& body) const { ReplyRaw(body.dump()); }
void Call::ReplyRaw(std::string body) const {
  if (auth_error) {
    // Every handler calls Params::Error() before touching state; reaching here means one
    // did not. Refuse rather than answer an unauthenticated caller.
    spdlog::error("request {}: a handler answered an unauthenticated call; refused", request_id);
    return Fail(*auth_error);
  }
  respond(aws::JsonResponse(std::move(body), request_id));
}
void Call::ReplyCbor(std::string body) const {
  if (auth_error) {
    spdlog::error("request {}: a handler answered an unauthenticated call; refused", request_id);
    return Fail(*auth_error);
  }
  respond(aws::CborResponse(std::move(body), request_id));
}
void Call::ReplyEmpty() const { ReplyRaw(""); }

bool RequestIsCbor(const Call& call) {
  std::string_view ctype = call.req->GetHeader("content-type");
  // As the router compares it: parameters and trailing blanks aside.
  ctype = ctype.substr(0, ctype.find(';'));
  while (!ctype.empty() && ctype.back() == ' ') ctype.remove_suffix(1);
  return ctype == aws::kCborContentType;
}
void Call::Fail(const aws::ApiError& e) const { respond(aws::ErrorResponse(e, request_id)); }
void Call::Fail(const Status& st) const { Fail(aws::KinesisError(st)); }

double EpochSeconds(int64_t ms) { return static_cast<double>(ms) / 1000.0; }

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (u < 0x20) {
      *out += fmt::format("\\u{:04x}", u);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

void AppendRecordsJson(std::string* out, const stream::ShardReadResult& r, uint64_t uid,
                       uint32_t shard) {
  size_t est = 16;
  for (const auto& rec : r.records) {
    est += base64::EncodedSize(rec.data.size()) + rec.partition_key.size() + 160;
  }
  out->reserve(out->size() + est);
  *out += R"("Records":[)";
  stream::ShardSequenceWriter sequences(uid, shard);
  for (size_t i = 0; i < r.records.size(); ++i) {
    const auto& rec = r.records[i];
    if (i) out->push_back(',');
    *out += R"({"SequenceNumber":")";
    sequences.AppendRecord(rec.offset, out);
    // Epoch seconds with milliseconds, as AWS writes them.
    fmt::format_to(std::back_inserter(*out),
                   R"(","ApproximateArrivalTimestamp":{}.{:03d},"Data":")", rec.arrival_ms / 1000,
                   static_cast<int>(rec.arrival_ms % 1000));
    base64::EncodeAppend(rec.data.data(), rec.data.size(), out);
    *out += R"(","PartitionKey":)";
    AppendJsonString(out, rec.partition_key);
    out->push_back('}');
  }
  out->push_back(']');
}

void AppendRecordsCbor(std::string* out, const stream::ShardReadResult& r, uint64_t uid,
                       uint32_t shard) {
  // Each record's map besides its data and key is at most 139 bytes (the head 1,
  // "SequenceNumber" 15 and its 56 digits 58, "ApproximateArrivalTimestamp" 29 and the
  // tagged millis 10, "Data" 5 and a head of up to 5, "PartitionKey" 13 and a head of up to
  // 3), and the answer's tail (NextShardIterator, MillisBehindLatest) fits in the 4 KiB
  // after them. Reserved short (110 a record, as it was), a 10 MB answer grew once at its
  // end: a copy of all of it into fresh pages (2.5% of a two-worker pool's CPU).
  size_t est = 4096;
  for (const auto& rec : r.records) est += rec.data.size() + rec.partition_key.size() + 139;
  out->reserve(out->size() + est);
  aws::CborAppendText(out, "Records");
  aws::CborAppendHead(out, 4, r.records.size());
  std::string seq;
  stream::ShardSequenceWriter sequences(uid, shard);
  for (const auto& rec : r.records) {
    aws::CborAppendHead(out, 5, 4);
    aws::CborAppendText(out, "SequenceNumber");
    seq.clear();
    sequences.AppendRecord(rec.offset, &seq);
    aws::CborAppendText(out, seq);
    aws::CborAppendText(out, "ApproximateArrivalTimestamp");
    aws::CborAppendEpochMillis(out, rec.arrival_ms);
    aws::CborAppendText(out, "Data");
    aws::CborAppendBytes(out, rec.data);
    aws::CborAppendText(out, "PartitionKey");
    aws::CborAppendText(out, rec.partition_key);
  }
}

const Pattern& StreamArnPattern() {
  static const Pattern kArn = Pattern::MustCompile(R"(arn:aws.*:kinesis:.*:\d{12}:stream/\S+)");
  return kArn;
}

std::optional<std::string> StreamNameFromArn(const Context& ctx, aws::Params& p,
                                             std::string_view path, const std::string& arn) {
  p.Length(path, arn, 1, 2048);
  bool ok = StreamArnPattern().Matches(arn);
  p.Pattern(path, arn, ok, StreamArnPattern().source());
  if (!ok) return std::nullopt;
  auto parts = stream::ParseStreamArn(arn);
  if (!parts) return arn;  // matches the pattern yet names no stream: cannot exist here
  if (parts->region != ctx.options.region || parts->account != ctx.options.account) {
    // Another region's or account's stream: it does not exist here. The ARN itself is
    // returned as the name: it can never name a stream (':' and '/' are not allowed), and
    // StreamManager's not-found message names the ARN's stream and account from it.
    return aws::Arn{parts->partition, "kinesis", parts->region, parts->account,
                    "stream/" + parts->name}
        .ToString();
  }
  return parts->name;
}

std::optional<std::string> StreamSelector(const Context& ctx, aws::Params& p) {
  auto name = p.Str("StreamName");
  auto arn = p.Str("StreamARN");
  if (name) {
    p.Pattern("streamName", *name, aws::MatchesNameChars(*name), "[a-zA-Z0-9_.-]+");
    p.Length("streamName", *name, 1, 128);
  }
  std::optional<std::string> from_arn;
  if (arn) from_arn = StreamNameFromArn(ctx, p, "streamARN", *arn);
  // AWS checks the selector's presence and consistency last, after the whole model
  // (aws-api.md §A.7): deferred until Params::Error().
  if (!name && !arn) {
    p.Defer(aws::InvalidArgumentError("Neither StreamARN nor StreamName was provided."));
    return std::string();
  }
  if (name && from_arn && *name != *from_arn) {
    p.Defer(aws::InvalidArgumentError(
        fmt::format("StreamARN {} and StreamName {} do not name the same stream.", *arn, *name)));
  }
  if (name) return name;
  return from_arn ? from_arn : std::string();
}

void CheckShardIdMember(aws::Params& p, std::string_view path, const std::string& value) {
  p.Pattern(path, value, aws::MatchesNameChars(value), "[a-zA-Z0-9_.-]+");
  p.Length(path, value, 1, 128);
}

void CheckTagMap(aws::Params& p, std::string_view path, const json& map, size_t max_entries) {
  // Maps are rendered as Java prints them ({key=value, ...}), as AWS's messages show them.
  std::string rendered = aws::Params::RenderMap(map);
  if (map.size() > max_entries || map.empty()) {
    p.AddViolation(fmt::format(
        "Value '{}' at '{}' failed to satisfy constraint: Member must have length {} {}", rendered,
        path, map.empty() ? "greater than or equal to" : "less than or equal to",
        map.empty() ? 1 : max_entries));
  }
  bool bad_key = false, bad_value = false;
  for (auto it = map.begin(); it != map.end(); ++it) {
    size_t klen = aws::Utf8Length(it.key());
    bad_key |= klen < 1 || klen > 128;
    if (!it.value().is_string()) {
      // A tag value is a string member: another JSON type is a type error.
      if (it.value().is_null()) {
        bad_value = true;
      } else {
        p.AddSerializationError(aws::Params::TypeMessage(it.value(), aws::MemberType::kString));
      }
      continue;
    }
    bad_value |= aws::Utf8Length(it.value().get<std::string>()) > 256;
  }
  if (bad_key) {
    p.AddViolation(fmt::format(
        "Value '{}' at '{}' failed to satisfy constraint: Map keys must satisfy constraint: "
        "[Member must have length less than or equal to 128, Member must have length greater "
        "than or equal to 1]",
        rendered, path));
  }
  if (bad_value) {
    p.AddViolation(fmt::format(
        "Value '{}' at '{}' failed to satisfy constraint: Map value must satisfy constraint: "
        "[Member must have length less than or equal to 256, Member must have length greater "
        "than or equal to 0]",
        rendered, path));
  }
}

json ShardJson(const stream::StreamInfo& info, const stream::ShardInfo& s) {
  json j = {
      {"ShardId", stream::ShardIdString(s.index)},
      {"HashKeyRange",
       {{"StartingHashKey", ToDecimal(s.range.start)}, {"EndingHashKey", ToDecimal(s.range.end)}}}};
  if (s.parent) j["ParentShardId"] = stream::ShardIdString(*s.parent);
  if (s.adjacent_parent) j["AdjacentParentShardId"] = stream::ShardIdString(*s.adjacent_parent);
  json range = {
      {"StartingSequenceNumber", stream::SequenceNumber::ShardStart(info.uid, s.index).ToString()}};
  if (s.end_offset) {
    range["EndingSequenceNumber"] =
        stream::SequenceNumber{info.uid, s.index, *s.end_offset}.ToString();
  }
  j["SequenceNumberRange"] = range;
  return j;
}

json ChildShardsJson(const std::vector<stream::ShardInfo>& children) {
  json out = json::array();
  for (const auto& c : children) {
    json parents = json::array();
    if (c.parent) parents.push_back(stream::ShardIdString(*c.parent));
    if (c.adjacent_parent) parents.push_back(stream::ShardIdString(*c.adjacent_parent));
    out.push_back({{"ShardId", stream::ShardIdString(c.index)},
                   {"ParentShards", parents},
                   {"HashKeyRange",
                    {{"StartingHashKey", ToDecimal(c.range.start)},
                     {"EndingHashKey", ToDecimal(c.range.end)}}}});
  }
  return out;
}

namespace {

// Operations of the Kinesis model that this server does not offer (yet). They get a
// clear error instead of UnknownOperationException, which would suggest a typo.
constexpr std::string_view kUnsupported[] = {"UpdateStreamRecordDistributionStrategy"};

const std::unordered_map<std::string_view, HandlerFn>& Handlers() {
  static const std::unordered_map<std::string_view, HandlerFn> kHandlers = {
      {"CreateStream", CreateStream},
      {"DeleteStream", DeleteStream},
      {"DescribeStream", DescribeStream},
      {"DescribeStreamSummary", DescribeStreamSummary},
      {"ListStreams", ListStreams},
      {"DescribeLimits", DescribeLimits},
      {"IncreaseStreamRetentionPeriod", IncreaseStreamRetentionPeriod},
      {"DecreaseStreamRetentionPeriod", DecreaseStreamRetentionPeriod},
      {"UpdateStreamMode", UpdateStreamMode},
      {"EnableEnhancedMonitoring", EnableEnhancedMonitoring},
      {"DisableEnhancedMonitoring", DisableEnhancedMonitoring},
      {"StartStreamEncryption", StartStreamEncryption},
      {"StopStreamEncryption", StopStreamEncryption},
      {"UpdateMaxRecordSize", UpdateMaxRecordSize},
      {"UpdateStreamWarmThroughput", UpdateStreamWarmThroughput},
      {"DescribeAccountSettings", DescribeAccountSettings},
      {"UpdateAccountSettings", UpdateAccountSettings},
      {"ListShards", ListShards},
      {"SplitShard", SplitShard},
      {"MergeShards", MergeShards},
      {"UpdateShardCount", UpdateShardCount},
      {"PutRecord", PutRecord},
      {"GetShardIterator", GetShardIterator},
      {"GetRecords", GetRecords},
      {"RegisterStreamConsumer", RegisterStreamConsumer},
      {"DeregisterStreamConsumer", DeregisterStreamConsumer},
      {"DescribeStreamConsumer", DescribeStreamConsumer},
      {"ListStreamConsumers", ListStreamConsumers},
      {"SubscribeToShard", SubscribeToShard},
      {"AddTagsToStream", AddTagsToStream},
      {"RemoveTagsFromStream", RemoveTagsFromStream},
      {"ListTagsForStream", ListTagsForStream},
      {"TagResource", TagResource},
      {"UntagResource", UntagResource},
      {"ListTagsForResource", ListTagsForResource},
      {"PutResourcePolicy", PutResourcePolicy},
      {"GetResourcePolicy", GetResourcePolicy},
      {"DeleteResourcePolicy", DeleteResourcePolicy},
      {"CreateChannel", CreateChannel},
      {"DescribeChannel", DescribeChannel},
      {"ListChannels", ListChannels},
      {"UpdateChannel", UpdateChannel},
      {"DeleteChannel", DeleteChannel},
      {"ResumeChannel", ResumeChannel},
      {"StartChannelRedrive", StartChannelRedrive},
      {"DescribeChannelRedrive", DescribeChannelRedrive},
  };
  return kHandlers;
}

// AWS's documented control-plane rates per account and Region (aws-api.md §B.1's list,
// kds-delivery-spec.md §1.1 for channels), enforced only with --aws-strict. Each
// operation has a token bucket that holds one second's calls.
double StrictRatePerSecond(std::string_view op) {
  static const std::unordered_map<std::string_view, double> kRates = {
      {"CreateStream", 5},
      {"DeleteStream", 5},
      {"SplitShard", 5},
      {"MergeShards", 5},
      {"AddTagsToStream", 5},
      {"RemoveTagsFromStream", 5},
      {"ListTagsForStream", 5},
      {"ListStreams", 5},
      {"DescribeStream", 10},
      {"DescribeStreamSummary", 20},
      {"DescribeLimits", 1},
      {"UpdateShardCount", 10},
      {"DescribeAccountSettings", 5},
      {"UpdateAccountSettings", 5},
      {"UpdateStreamWarmThroughput", 5},
      {"CreateChannel", 5},
      {"RegisterStreamConsumer", 5},
      {"DescribeChannel", 5},
      {"ListChannels", 5},
      {"UpdateChannel", 5},
      {"DeleteChannel", 5},
      {"ResumeChannel", 5},
      {"StartChannelRedrive", 5},
      {"DescribeChannelRedrive", 5},
  };
  auto it = kRates.find(op);
  return it == kRates.end() ? 0 : it->second;
}

bool AllowStrictRate(Context& ctx, std::string_view op) {
  double rate = StrictRatePerSecond(op);
  if (rate <= 0) return true;
  int64_t now = ctx.clock->NowMillis();
  std::lock_guard lock(ctx.rate_mu);
  auto it = ctx.rate_buckets.find(op);
  if (it == ctx.rate_buckets.end()) {
    it = ctx.rate_buckets.emplace(std::string(op), TokenBucket::Full(rate, now)).first;
  }
  return it->second.TakeOne(now);
}

}  // namespace

KinesisApi::KinesisApi(KinesisOptions options, stream::StreamManager* streams, const Clock* clock,
                       std::string token_secret, std::function<void(std::function<void()>)> post)
    // The other members keep their defaults (no channels, no metrics, DISABLED).
    : ctx_(new Context{std::move(options), streams, clock, TokenCodec(std::move(token_secret)),
                       std::move(post)}) {
  size_t threads = ctx_->options.subscription_threads;
  if (threads == 0) threads = std::max<size_t>(2, std::thread::hardware_concurrency());
  ctx_->subscriptions = MakeSubscriptionHub(threads);
}

KinesisApi::~KinesisApi() { StopSubscriptions(); }

void KinesisApi::StopSubscriptions() { kinesis::StopSubscriptions(*ctx_->subscriptions); }

void KinesisApi::SetChannels(delivery::ChannelManager* channels) { ctx_->channels = channels; }

void KinesisApi::SetMetrics(metrics::StreamMetrics* metrics) { ctx_->metrics = metrics; }

bool KinesisApi::Knows(std::string_view op) const {
  if (op == "PutRecords" || Handlers().count(op)) return true;
  for (auto u : kUnsupported) {
    if (u == op) return true;
  }
  return false;
}

bool KinesisApi::DecodesCborItself(std::string_view op) { return op == "PutRecords"; }

const aws::CborModel& KinesisApi::CborModel() {
  // Kinesis_20131202 model: `Data` is the only blob member; these are its timestamp
  // members (requests and answers; ChannelCreationTimestamp from the channel shapes).
  static const aws::CborModel kModel{
      {"Data"},
      {"Timestamp", "StreamCreationTimestamp", "ApproximateArrivalTimestamp",
       "ConsumerCreationTimestamp", "ChannelCreationTimestamp", "StartedAt", "EndedAt",
       "EarliestAllowedEndAt",
       // icestream's channel extensions (StartChannelRedrive, DescribeChannelRedrive).
       "StartTimestamp", "EndTimestamp", "CreationTimestamp", "CompletionTimestamp"}};
  return kModel;
}

void KinesisApi::Handle(std::string_view op, std::shared_ptr<http::Request> req,
                        http::Responder respond, std::optional<aws::ApiError> auth_error) {
  Call call{std::move(req), std::move(respond), crypto::RandomUuid(), std::move(auth_error)};
  for (auto u : kUnsupported) {
    if (u == op) {
      if (call.auth_error) return call.Fail(*call.auth_error);
      call.Fail(
          aws::InvalidArgumentError(fmt::format("{} is not supported by this server yet.", op)));
      return;
    }
  }
  if (op == "PutRecords") return PutRecordsRaw(*ctx_, call);
  auto it = Handlers().find(op);
  if (it == Handlers().end()) return call.Fail(aws::UnknownOperationError());
  if (!call.auth_error && ctx_->options.aws_strict && !AllowStrictRate(*ctx_, op)) {
    return call.Fail(aws::ApiError{
        "LimitExceededException",
        fmt::format("Rate exceeded for {} under account {}.", op, ctx_->options.account), 400});
  }
  if (auto e = aws::ServeJsonRequest(op, call.req->body, call.auth_error,
                                     [&](aws::Params& p) { it->second(*ctx_, call, p); })) {
    call.Fail(*e);
  }
}

}  // namespace icestream::kinesis
