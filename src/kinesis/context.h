// Shared state and helpers of the Kinesis handlers (internal to kinesis/).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "aws/error.h"
#include "aws/params.h"
#include "common/clock.h"
#include "common/pattern.h"
#include "common/token_bucket.h"
#include "http/message.h"
#include "kinesis/api.h"
#include "kinesis/tokens.h"
#include "stream/stream_manager.h"

namespace icestream::delivery {
class ChannelManager;
}
namespace icestream::metrics {
class StreamMetrics;
}

namespace icestream::kinesis {

// One API call: the request and the way to answer it (exactly once).
//
// `auth_error` is the request's authentication verdict; handlers never see it directly:
// Params::Error() reports it in AWS's order. As a safety net, a success reply of a call
// whose authentication failed is turned into that error (and logged as a bug).
struct Call {
  std::shared_ptr<http::Request> req;
  http::Responder respond;
  std::string request_id;
  std::optional<aws::ApiError> auth_error;

  void Reply(const nlohmann::json& body) const;
  void ReplyRaw(std::string body) const;
  // A body already encoded as CBOR (the data-plane direct paths); passes the router's
  // JSON-to-CBOR step untouched.
  void ReplyCbor(std::string body) const;
  void ReplyEmpty() const;
  void Fail(const aws::ApiError& e) const;
  void Fail(const Status& st) const;
};

class SubscriptionHub;

struct Context {
  KinesisOptions options;
  stream::StreamManager* streams;
  const Clock* clock;
  TokenCodec tokens;
  std::function<void(std::function<void()>)> post;
  delivery::ChannelManager* channels = nullptr;  // null when delivery is not wired
  metrics::StreamMetrics* metrics = nullptr;     // null: the data plane counts nothing
  // UpdateAccountSettings' MinimumThroughputBillingCommitment, echoed by
  // DescribeAccountSettings (billing does not exist here; kept in memory).
  std::mutex account_mu;
  std::string commitment_status = "DISABLED";
  // --aws-strict: per-operation token buckets for AWS's control-plane rates.
  std::mutex rate_mu;
  std::map<std::string, TokenBucket, std::less<>> rate_buckets;
  std::shared_ptr<SubscriptionHub> subscriptions;  // set by KinesisApi
};

// Reads the «S» stream selector (StreamName and/or StreamARN, aws-api.md §B.0) and
// records its violations and (deferred) service errors in `p`. Always returns a value:
// the stream name, or "" when there is none; use it only after `p.Error()` is empty.
std::optional<std::string> StreamSelector(const Context& ctx, aws::Params& p);
// The StreamARN member pattern of every operation that takes one (matched in linear
// time: common/pattern.h).
const Pattern& StreamArnPattern();
// Checks a StreamARN value; returns the stream name or nullopt (violation recorded).
std::optional<std::string> StreamNameFromArn(const Context& ctx, aws::Params& p,
                                             std::string_view path, const std::string& arn);
// ShardIteratorType's values in the order AWS's validation message lists them
// (kinesalite's suite).
extern const std::string_view kIteratorTypes[5];
// Validates a ShardId member (1–128, [a-zA-Z0-9_.-]+).
void CheckShardIdMember(aws::Params& p, std::string_view path, const std::string& value);
// Validates a Tags-style map (keys 1–128, values 0–256).
void CheckTagMap(aws::Params& p, std::string_view path, const nlohmann::json& map,
                 size_t max_entries);

// JSON shapes.
nlohmann::json ShardJson(const stream::StreamInfo& info, const stream::ShardInfo& shard);
// The ChildShards member of GetRecords and of SubscribeToShard events at a shard's end.
nlohmann::json ChildShardsJson(const std::vector<stream::ShardInfo>& children);
double EpochSeconds(int64_t ms);
// A JSON string literal of `s` (quotes, backslashes and control characters escaped).
void AppendJsonString(std::string* out, std::string_view s);
// `"Records":[…]` of GetRecords and of SubscribeToShard events, written straight into
// `out` (no JSON tree: this is the read path's hot loop).
void AppendRecordsJson(std::string* out, const stream::ShardReadResult& r, uint64_t uid,
                       uint32_t shard);
// The same member in CBOR (text key "Records", then the array): Data as byte strings,
// ApproximateArrivalTimestamp as tag 1 + epoch milliseconds (aws/cbor.h).
void AppendRecordsCbor(std::string* out, const stream::ShardReadResult& r, uint64_t uid,
                       uint32_t shard);
// Whether the client sent CBOR (and so wants CBOR back). Only the operations that decode
// CBOR themselves (KinesisApi::DecodesCborItself) still see a CBOR body; the others get
// the transcoded JSON but may answer in CBOR directly.
bool RequestIsCbor(const Call& call);

// Handlers, named after the operation. `p` wraps the parsed body object.
using HandlerFn = void (*)(Context&, Call&, aws::Params&);
void CreateStream(Context&, Call&, aws::Params&);
void DeleteStream(Context&, Call&, aws::Params&);
void DescribeStream(Context&, Call&, aws::Params&);
void DescribeStreamSummary(Context&, Call&, aws::Params&);
void ListStreams(Context&, Call&, aws::Params&);
void DescribeLimits(Context&, Call&, aws::Params&);
void IncreaseStreamRetentionPeriod(Context&, Call&, aws::Params&);
void DecreaseStreamRetentionPeriod(Context&, Call&, aws::Params&);
void UpdateStreamMode(Context&, Call&, aws::Params&);
void EnableEnhancedMonitoring(Context&, Call&, aws::Params&);
void DisableEnhancedMonitoring(Context&, Call&, aws::Params&);
void StartStreamEncryption(Context&, Call&, aws::Params&);
void StopStreamEncryption(Context&, Call&, aws::Params&);
void UpdateMaxRecordSize(Context&, Call&, aws::Params&);
void UpdateStreamWarmThroughput(Context&, Call&, aws::Params&);
void DescribeAccountSettings(Context&, Call&, aws::Params&);
void UpdateAccountSettings(Context&, Call&, aws::Params&);

void ListShards(Context&, Call&, aws::Params&);
void SplitShard(Context&, Call&, aws::Params&);
void MergeShards(Context&, Call&, aws::Params&);
void UpdateShardCount(Context&, Call&, aws::Params&);

void PutRecord(Context&, Call&, aws::Params&);
void GetShardIterator(Context&, Call&, aws::Params&);
void GetRecords(Context&, Call&, aws::Params&);
// PutRecords parses its own body (simdjson; the hot path); it checks call.auth_error
// itself, after its model validation.
void PutRecordsRaw(Context&, Call&);

void CreateChannel(Context&, Call&, aws::Params&);
void DescribeChannel(Context&, Call&, aws::Params&);
void ListChannels(Context&, Call&, aws::Params&);
void UpdateChannel(Context&, Call&, aws::Params&);
void DeleteChannel(Context&, Call&, aws::Params&);
// icestream extensions of the channel API (docs/channels.md).
void ResumeChannel(Context&, Call&, aws::Params&);
void StartChannelRedrive(Context&, Call&, aws::Params&);
void DescribeChannelRedrive(Context&, Call&, aws::Params&);

void RegisterStreamConsumer(Context&, Call&, aws::Params&);
void DeregisterStreamConsumer(Context&, Call&, aws::Params&);
void DescribeStreamConsumer(Context&, Call&, aws::Params&);
void ListStreamConsumers(Context&, Call&, aws::Params&);
// Consumers of `info` that are not yet purged (DescribeStreamSummary's ConsumerCount).
size_t LiveConsumerCount(const stream::StreamInfo& info, int64_t now_ms);
// The consumer a request's ConsumerARN member names (violations recorded in `p`).
struct ConsumerArnParts {
  std::string stream;  // stream name
  std::string name;    // consumer name
  int64_t created_s = -1;
};
ConsumerArnParts ReadConsumerArn(Context& ctx, aws::Params& p);
// "CREATING" / "ACTIVE" / "DELETING", or nullopt when that consumer does not exist.
std::optional<std::string> ConsumerStatusOf(const stream::StreamInfo& info,
                                            const ConsumerArnParts& consumer, int64_t now_ms);

// SubscribeToShard (handlers/subscribe.cc): the running subscriptions, pushed by a pool
// of `threads` threads. StopSubscriptions ends them all and joins the threads.
class SubscriptionHub;
std::shared_ptr<SubscriptionHub> MakeSubscriptionHub(size_t threads);
void StopSubscriptions(SubscriptionHub& hub);
void SubscribeToShard(Context&, Call&, aws::Params&);

void AddTagsToStream(Context&, Call&, aws::Params&);
void RemoveTagsFromStream(Context&, Call&, aws::Params&);
void ListTagsForStream(Context&, Call&, aws::Params&);
void TagResource(Context&, Call&, aws::Params&);
void UntagResource(Context&, Call&, aws::Params&);
void ListTagsForResource(Context&, Call&, aws::Params&);
void PutResourcePolicy(Context&, Call&, aws::Params&);
void GetResourcePolicy(Context&, Call&, aws::Params&);
void DeleteResourcePolicy(Context&, Call&, aws::Params&);

}  // namespace icestream::kinesis
