// Enhanced fan-out control plane: RegisterStreamConsumer, DeregisterStreamConsumer,
// DescribeStreamConsumer, ListStreamConsumers (aws-api.md §B.0, §B.1, §C limits).
// Consumers live in the stream's metadata (stream::ConsumerInfo). A consumer is CREATING
// for kTransitionMs after registration, then ACTIVE; DELETING for kTransitionMs after
// deregistration, then gone (purged at the stream's next consumer change).
// SubscribeToShard is not served yet.
#include <fmt/format.h>

#include "kinesis/context.h"

namespace icestream::kinesis {

using nlohmann::json;
using stream::ConsumerInfo;
using stream::StreamInfo;

namespace {

constexpr int64_t kTransitionMs = 500;
constexpr size_t kMaxConsumersPerStream = 20;  // AWS's quota (aws-api.md §C)
// AWS's model pattern; AWS accepts any ARN this matches a prefix of.
const Pattern kConsumerArn = Pattern::MustCompile(
    R"(^(arn):aws.*:kinesis:.*:\d{12}:.*stream\/[a-zA-Z0-9_.-]+\/consumer\/[a-zA-Z0-9_.-]+:[0-9]+)");

bool Gone(const ConsumerInfo& c, int64_t now) {
  return c.deleting_since_ms && now - *c.deleting_since_ms >= kTransitionMs;
}

std::string_view ConsumerStatus(const ConsumerInfo& c, int64_t now) {
  if (c.deleting_since_ms) return "DELETING";
  return now - c.created_ms < kTransitionMs ? "CREATING" : "ACTIVE";
}

std::string ConsumerArn(const std::string& stream_arn, const ConsumerInfo& c) {
  return fmt::format("{}/consumer/{}:{}", stream_arn, c.name, c.created_ms / 1000);
}

json ConsumerJson(const std::string& stream_arn, const ConsumerInfo& c, int64_t now) {
  return {{"ConsumerName", c.name},
          {"ConsumerARN", ConsumerArn(stream_arn, c)},
          {"ConsumerStatus", ConsumerStatus(c, now)},
          {"ConsumerCreationTimestamp", EpochSeconds(c.created_ms)}};
}

void CheckConsumerName(aws::Params& p, const std::string& name) {
  p.Pattern("consumerName", name, aws::MatchesNameChars(name), "[a-zA-Z0-9_.-]+");
  p.Length("consumerName", name, 1, 128);
}

std::string ConsumerNotFound(const Context& ctx, std::string_view consumer,
                             std::string_view stream) {
  return fmt::format("Consumer {} under stream {} under account {} not found.", consumer, stream,
                     ctx.options.account);
}

// Which consumer a Deregister/Describe call names: ConsumerARN, or StreamARN +
// ConsumerName. Violations and the deferred "neither" error go to `p`.
struct ConsumerRef {
  std::string stream;                // stream name
  std::string name;                  // consumer name
  std::optional<int64_t> created_s;  // from an ARN: the incarnation it names
};

ConsumerRef ReadConsumerRef(Context& ctx, aws::Params& p) {
  ConsumerRef ref;
  auto stream_arn = p.Str("StreamARN");
  auto name = p.Str("ConsumerName");
  auto consumer_arn = p.Str("ConsumerARN");
  if (stream_arn) ref.stream = StreamNameFromArn(ctx, p, "streamARN", *stream_arn).value_or("");
  if (name) {
    CheckConsumerName(p, *name);
    ref.name = *name;
  }
  if (consumer_arn) {
    p.Length("consumerARN", *consumer_arn, 1, 2048);
    bool ok = kConsumerArn.MatchesPrefix(*consumer_arn);
    p.Pattern("consumerARN", *consumer_arn, ok, kConsumerArn.source());
    auto at = consumer_arn->rfind("/consumer/");
    auto colon = consumer_arn->rfind(':');
    if (ok && at != std::string::npos && colon != std::string::npos && colon > at) {
      aws::Params scratch(p.object());  // the ARN's stream part was checked by the pattern
      std::string stream_part = consumer_arn->substr(0, at);
      ref.stream = StreamNameFromArn(ctx, scratch, "consumerARN", stream_part).value_or("");
      if (scratch.failed())
        p.AddViolation(fmt::format(
            "Value '{}' at 'consumerARN' failed to satisfy constraint: Member must satisfy regular "
            "expression pattern: {}",
            *consumer_arn, kConsumerArn.source()));
      ref.name = consumer_arn->substr(at + 10, colon - at - 10);
      try {
        ref.created_s = std::stoll(consumer_arn->substr(colon + 1));
      } catch (const std::exception&) {
        ref.created_s = -1;  // cannot match any incarnation
      }
    }
  } else if (!stream_arn || !name) {
    p.Defer(aws::InvalidArgumentError(
        "Either ConsumerARN or both ConsumerName and StreamARN must be provided."));
  }
  return ref;
}

// The live consumer named by `ref` in `info`, or null.
const ConsumerInfo* FindConsumer(const StreamInfo& info, const ConsumerRef& ref, int64_t now) {
  for (const auto& c : info.consumers) {
    if (c.name != ref.name || Gone(c, now)) continue;
    if (ref.created_s && *ref.created_s != c.created_ms / 1000) continue;
    return &c;
  }
  return nullptr;
}

}  // namespace

ConsumerArnParts ReadConsumerArn(Context& ctx, aws::Params& p) {
  aws::Params probe(p.object());
  ConsumerRef ref = ReadConsumerRef(ctx, probe);
  p.Absorb(probe);
  return {ref.stream, ref.name, ref.created_s.value_or(-1)};
}

std::optional<std::string> ConsumerStatusOf(const StreamInfo& info, const ConsumerArnParts& c,
                                            int64_t now) {
  ConsumerRef ref{c.stream, c.name, c.created_s};
  const ConsumerInfo* found = FindConsumer(info, ref, now);
  if (!found) return std::nullopt;
  return std::string(ConsumerStatus(*found, now));
}

size_t LiveConsumerCount(const StreamInfo& info, int64_t now) {
  size_t n = 0;
  for (const auto& c : info.consumers) n += Gone(c, now) ? 0 : 1;
  return n;
}

void RegisterStreamConsumer(Context& ctx, Call& call, aws::Params& p) {
  auto arn = p.Str("StreamARN");
  auto name = p.Str("ConsumerName");
  const json* tags = p.Map("Tags");
  p.Required("streamARN", arn.has_value());
  p.Required("consumerName", name.has_value());
  std::string stream;
  if (arn) stream = StreamNameFromArn(ctx, p, "streamARN", *arn).value_or("");
  if (name) CheckConsumerName(p, *name);
  if (tags) CheckTagMap(p, "tags", *tags, 200);
  if (auto e = p.Error()) return call.Fail(*e);
  int64_t now = ctx.clock->NowMillis();
  ConsumerInfo created;
  std::string stream_arn;
  Status st = ctx.streams->Mutate(stream, [&](StreamInfo& info) -> Status {
    std::erase_if(info.consumers, [&](const ConsumerInfo& c) { return Gone(c, now); });
    for (const auto& c : info.consumers) {
      if (c.name == *name) {
        return AlreadyExists(
            fmt::format("Consumer {} under stream {} under account {} already exists.", *name,
                        info.name, ctx.options.account));
      }
    }
    if (info.consumers.size() >= kMaxConsumersPerStream) {
      return ResourceExhausted(fmt::format(
          "Stream {} under account {} already has {} registered consumers, the maximum; "
          "deregister one first.",
          info.name, ctx.options.account, kMaxConsumersPerStream));
    }
    if (tags && tags->size() > 50) {
      return InvalidArgument("A consumer can have at most 50 tags.");
    }
    created.name = *name;
    created.created_ms = now;
    if (tags) {
      for (auto it = tags->begin(); it != tags->end(); ++it) {
        created.tags[it.key()] = it.value().is_string() ? it.value().get<std::string>() : "";
      }
    }
    info.consumers.push_back(created);
    stream_arn = info.arn;
    return Status::OK();
  });
  if (!st.ok()) return call.Fail(st);
  call.Reply({{"Consumer", ConsumerJson(stream_arn, created, now)}});
}

void DeregisterStreamConsumer(Context& ctx, Call& call, aws::Params& p) {
  ConsumerRef ref = ReadConsumerRef(ctx, p);
  if (auto e = p.Error()) return call.Fail(*e);
  int64_t now = ctx.clock->NowMillis();
  Status st = ctx.streams->Mutate(ref.stream, [&](StreamInfo& info) -> Status {
    std::erase_if(info.consumers, [&](const ConsumerInfo& c) { return Gone(c, now); });
    for (auto& c : info.consumers) {
      if (&c != FindConsumer(info, ref, now)) continue;
      if (!c.deleting_since_ms) c.deleting_since_ms = now;
      return Status::OK();
    }
    return NotFound(ConsumerNotFound(ctx, ref.name, info.name));
  });
  if (!st.ok()) return call.Fail(st);
  call.ReplyEmpty();
}

void DescribeStreamConsumer(Context& ctx, Call& call, aws::Params& p) {
  ConsumerRef ref = ReadConsumerRef(ctx, p);
  if (auto e = p.Error()) return call.Fail(*e);
  auto info = ctx.streams->Describe(ref.stream);
  if (!info.ok()) return call.Fail(info.status());
  int64_t now = ctx.clock->NowMillis();
  const ConsumerInfo* c = FindConsumer(*info, ref, now);
  if (!c) return call.Fail(NotFound(ConsumerNotFound(ctx, ref.name, info->name)));
  json d = ConsumerJson(info->arn, *c, now);
  d["StreamARN"] = info->arn;
  call.Reply({{"ConsumerDescription", d}});
}

void ListStreamConsumers(Context& ctx, Call& call, aws::Params& p) {
  auto arn = p.Str("StreamARN");
  auto token = p.Str("NextToken");
  auto max = p.Int("MaxResults");
  auto created = p.TimestampMs("StreamCreationTimestamp");
  p.Required("streamARN", arn.has_value());
  std::string stream;
  if (arn) stream = StreamNameFromArn(ctx, p, "streamARN", *arn).value_or("");
  if (token) p.Length("nextToken", *token, 1, 1048576);
  if (max) p.Range("maxResults", *max, 1, 10000);
  if (auto e = p.Error()) return call.Fail(*e);
  auto info = ctx.streams->Describe(stream);
  if (!info.ok()) return call.Fail(info.status());
  if (created && *created / 1000 != info->created_ms / 1000) {
    return call.Fail(NotFound(
        fmt::format("Stream {} under account {} not found.", stream, ctx.options.account)));
  }
  int64_t now = ctx.clock->NowMillis();
  size_t skip = 0;
  if (token) {
    auto t = ctx.tokens.DecodeNextToken(*token);
    if (!t || !t->payload.contains("consumers_after") || t->payload.value("stream", "") != stream) {
      return call.Fail(aws::InvalidArgumentError("Invalid NextToken."));
    }
    if (now - t->issued_ms > ctx.options.next_token_ttl_ms) {
      return call.Fail(
          aws::ApiError{"ExpiredNextTokenException", "The NextToken has expired.", 400});
    }
    skip = t->payload["consumers_after"].get<size_t>();
  }
  size_t limit = static_cast<size_t>(std::min<int64_t>(max.value_or(100), 100));
  json list = json::array();
  size_t index = 0;
  bool more = false;
  for (const auto& c : info->consumers) {
    if (Gone(c, now)) continue;
    if (index++ < skip) continue;
    if (list.size() == limit) {
      more = true;
      break;
    }
    list.push_back(ConsumerJson(info->arn, c, now));
  }
  json out = {{"Consumers", list}};
  if (more) {
    out["NextToken"] = ctx.tokens.EncodeNextToken(
        {{"stream", stream}, {"consumers_after", skip + list.size()}}, now);
  }
  call.Reply(out);
}

}  // namespace icestream::kinesis
