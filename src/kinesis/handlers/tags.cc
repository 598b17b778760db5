// Tags and resource policies: AddTagsToStream, RemoveTagsFromStream, ListTagsForStream,
// TagResource, UntagResource, ListTagsForResource, Put/Get/DeleteResourcePolicy
// (aws-api.md §B.8).
#include <fmt/format.h>

#include "aws/arn.h"
#include "delivery/channel_manager.h"
#include "kinesis/context.h"

namespace icestream::kinesis {

using nlohmann::json;
using stream::StreamInfo;

namespace {

constexpr size_t kMaxTagsPerStream = 50;

// Tag keys and values (AWS's tag pattern): Unicode letters, separators and digits, and
// _ . : / = + - @ %. Control characters (tab, newline, C1) and other ASCII punctuation
// are refused; non-ASCII code points other than C1 controls are taken as letters.
bool ValidTagText(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      // U+0080..U+009F (C1 controls) are encoded C2 80..C2 9F.
      if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9f)
        return false;
      continue;
    }
    if (std::isalnum(c) || c == ' ') continue;
    if (std::string_view("_.:/=+-@%").find(static_cast<char>(c)) != std::string_view::npos)
      continue;
    return false;
  }
  return true;
}

// AWS's texts (recorded by kinesalite's suite against AWS).
constexpr const char* kInvalidTagChars =
    "Some tags contain invalid characters. Valid characters: Unicode letters, digits, white "
    "space, _ . / = + - % @.";

Status AddTags(Context& ctx, const std::string& name, const json& tags) {
  return ctx.streams->Mutate(name, [&](StreamInfo& info) -> Status {
    for (auto it = tags.begin(); it != tags.end(); ++it) {
      std::string value = it.value().is_string() ? it.value().get<std::string>() : "";
      if (!ValidTagText(it.key()) || !ValidTagText(value)) return InvalidArgument(kInvalidTagChars);
    }
    for (auto it = tags.begin(); it != tags.end(); ++it) {
      std::string value = it.value().is_string() ? it.value().get<std::string>() : "";
      if (it.key().find('%') != std::string::npos || value.find('%') != std::string::npos) {
        return InvalidArgument(fmt::format(
            "Failed to add tags to stream {} under account {} because some tags contained "
            "illegal characters. The allowed characters are Unicode letters, white-spaces, "
            "'_',',','/','=','+','-','@'.",
            info.name, ctx.options.account));
      }
      if (it.key().rfind("aws:", 0) == 0) {
        return InvalidArgument("Tag keys starting with 'aws:' are reserved for AWS use.");
      }
    }
    for (auto it = tags.begin(); it != tags.end(); ++it) {
      info.tags[it.key()] = it.value().is_string() ? it.value().get<std::string>() : "";
    }
    if (info.tags.size() > kMaxTagsPerStream) {
      return InvalidArgument(fmt::format(
          "Failed to add tags to stream {} under account {} because a given stream cannot have "
          "more than {} tags associated with it.",
          info.name, ctx.options.account, kMaxTagsPerStream));
    }
    return Status::OK();
  });
}

Status RemoveTags(Context& ctx, const std::string& name, const json& keys) {
  return ctx.streams->Mutate(name, [&](StreamInfo& info) -> Status {
    for (const auto& k : keys) {
      if (!ValidTagText(k.get<std::string>())) return InvalidArgument(kInvalidTagChars);
    }
    // '%' passes the character check but not the service's own (as for AddTagsToStream).
    for (const auto& k : keys) {
      if (k.get<std::string>().find('%') != std::string::npos) {
        return InvalidArgument(fmt::format(
            "Failed to remove tags from stream {} under account {} because some tags contained "
            "illegal characters. The allowed characters are Unicode letters, white-spaces, "
            "'_',',','/','=','+','-','@'.",
            info.name, ctx.options.account));
      }
    }
    for (const auto& k : keys) info.tags.erase(k.get<std::string>());
    return Status::OK();
  });
}

// A TagKeys list: every element a string (else SerializationException, as for any
// string member), 1–50 of them, each 1–128 characters (reported on the list, as AWS does).
void CheckTagKeyList(aws::Params& p, std::string_view path, const json& keys) {
  for (const auto& k : keys) {
    if (!k.is_string()) {
      p.AddSerializationError(
          k.is_null() ? std::string("Unexpected value type in TagKeys: expected a string.")
                      : aws::Params::TypeMessage(k, aws::MemberType::kString));
      return;
    }
  }
  p.ListLength(path, keys.size(), aws::Params::RenderList(keys), 1, 50);
  p.ListMemberLengths(path, keys, 1, 128);
}

// ResourceARN: a stream ARN (consumers are not supported). Records violations and the
// deferred not-found of a consumer ARN in `p`; returns the stream name or "".
std::string StreamFromResourceArn(Context& ctx, aws::Params& p) {
  auto arn = p.Str("ResourceARN");
  p.Required("resourceARN", arn.has_value());
  if (!arn) return "";
  p.Length("resourceARN", *arn, 1, 2048);
  if (arn->find("/consumer/") != std::string::npos) {
    p.Defer(aws::KinesisError(NotFound(
        fmt::format("Consumer {} under account {} not found.", *arn, ctx.options.account))));
    return "";
  }
  return StreamNameFromArn(ctx, p, "resourceARN", *arn).value_or("");
}

// A channel ARN (arn:aws:kinesis:<region>:<account>:channel/<id>), handled by the
// delivery engine. Returns true when it answered the call.
bool ChannelTagCall(Context& ctx, Call& call, aws::Params& p,
                    const std::function<void(const std::string& arn)>& fn) {
  const auto& obj = p.object();
  auto it = obj.find("ResourceARN");
  if (it == obj.end() || !it->is_string()) return false;
  std::string arn = it->get<std::string>();
  auto parsed = aws::ParseArn(arn);
  if (!parsed || !parsed->Is("kinesis", "channel")) return false;
  if (!ctx.channels) {
    call.Fail(
        NotFound(fmt::format("Channel {} under account {} not found.", arn, ctx.options.account)));
    return true;
  }
  fn(arn);
  return true;
}

json TagList(const StreamInfo& info) {
  json out = json::array();
  for (const auto& [k, v] : info.tags) out.push_back({{"Key", k}, {"Value", v}});
  return out;
}

}  // namespace

void AddTagsToStream(Context& ctx, Call& call, aws::Params& p) {
  const json* tags = p.Map("Tags");
  p.Required("tags", tags != nullptr);
  if (tags) CheckTagMap(p, "tags", *tags, 200);
  auto name = StreamSelector(ctx, p);
  if (auto e = p.Error()) return call.Fail(*e);
  Status st = AddTags(ctx, *name, *tags);
  if (!st.ok()) return call.Fail(st);
  call.ReplyEmpty();
}

void RemoveTagsFromStream(Context& ctx, Call& call, aws::Params& p) {
  const json* keys = p.List("TagKeys");
  p.Required("tagKeys", keys != nullptr);
  if (keys) CheckTagKeyList(p, "tagKeys", *keys);
  auto name = StreamSelector(ctx, p);
  if (auto e = p.Error()) return call.Fail(*e);
  Status st = RemoveTags(ctx, *name, *keys);
  if (!st.ok()) return call.Fail(st);
  call.ReplyEmpty();
}

void ListTagsForStream(Context& ctx, Call& call, aws::Params& p) {
  auto limit = p.Int("Limit");
  if (limit) p.Range("limit", *limit, 1, 50);
  auto start = p.Str("ExclusiveStartTagKey");
  if (start) p.Length("exclusiveStartTagKey", *start, 1, 128);
  auto name = StreamSelector(ctx, p);
  if (auto e = p.Error()) return call.Fail(*e);
  auto info = ctx.streams->Describe(*name);
  if (!info.ok()) return call.Fail(info.status());
  size_t max = static_cast<size_t>(limit.value_or(50));
  json tags = json::array();
  bool more = false;
  for (const auto& [k, v] : info->tags) {
    if (start && k <= *start) continue;
    if (tags.size() == max) {
      more = true;
      break;
    }
    tags.push_back({{"Key", k}, {"Value", v}});
  }
  call.Reply({{"Tags", tags}, {"HasMoreTags", more}});
}

void TagResource(Context& ctx, Call& call, aws::Params& p) {
  if (ChannelTagCall(ctx, call, p, [&](const std::string& arn) {
        const json* tags = p.Map("Tags");
        p.Required("tags", tags != nullptr);
        if (tags) CheckTagMap(p, "tags", *tags, 200);
        if (auto e = p.Error()) return call.Fail(*e);
        std::map<std::string, std::string> m;
        for (auto it = tags->begin(); it != tags->end(); ++it) {
          if (it.key().rfind("aws:", 0) == 0) {
            return call.Fail(aws::InvalidArgumentError(
                "Tag keys starting with 'aws:' are reserved for AWS use."));
          }
          m[it.key()] = it.value().is_string() ? it.value().get<std::string>() : "";
        }
        Status st = ctx.channels->Tag(arn, m);
        if (!st.ok()) return call.Fail(st);
        call.ReplyEmpty();
      })) {
    return;
  }
  auto name = StreamFromResourceArn(ctx, p);
  const json* tags = p.Map("Tags");
  p.Required("tags", tags != nullptr);
  if (tags) CheckTagMap(p, "tags", *tags, 200);
  if (auto e = p.Error()) return call.Fail(*e);
  Status st = AddTags(ctx, name, *tags);
  if (!st.ok()) return call.Fail(st);
  call.ReplyEmpty();
}

void UntagResource(Context& ctx, Call& call, aws::Params& p) {
  if (ChannelTagCall(ctx, call, p, [&](const std::string& arn) {
        const json* keys = p.List("TagKeys");
        p.Required("tagKeys", keys != nullptr);
        if (keys) CheckTagKeyList(p, "tagKeys", *keys);
        if (auto e = p.Error()) return call.Fail(*e);
        std::vector<std::string> ks;
        for (const auto& k : *keys) {
          if (k.is_string()) ks.push_back(k.get<std::string>());
        }
        Status st = ctx.channels->Untag(arn, ks);
        if (!st.ok()) return call.Fail(st);
        call.ReplyEmpty();
      })) {
    return;
  }
  auto name = StreamFromResourceArn(ctx, p);
  const json* keys = p.List("TagKeys");
  p.Required("tagKeys", keys != nullptr);
  if (keys) CheckTagKeyList(p, "tagKeys", *keys);
  if (auto e = p.Error()) return call.Fail(*e);
  Status st = RemoveTags(ctx, name, *keys);
  if (!st.ok()) return call.Fail(st);
  call.ReplyEmpty();
}

void ListTagsForResource(Context& ctx, Call& call, aws::Params& p) {
  if (ChannelTagCall(ctx, call, p, [&](const std::string& arn) {
        if (auto e = p.Error()) return call.Fail(*e);
        auto tags = ctx.channels->Tags(arn);
        if (!tags.ok()) return call.Fail(tags.status());
        json out = json::array();
        for (const auto& [k, v] : *tags) out.push_back({{"Key", k}, {"Value", v}});
        call.Reply({{"Tags", out}});
      })) {
    return;
  }
  auto name = StreamFromResourceArn(ctx, p);
  if (auto e = p.Error()) return call.Fail(*e);
  auto info = ctx.streams->Describe(name);
  if (!info.ok()) return call.Fail(info.status());
  call.Reply({{"Tags", TagList(*info)}});
}

void PutResourcePolicy(Context& ctx, Call& call, aws::Params& p) {
  auto name = StreamFromResourceArn(ctx, p);
  auto policy = p.Str("Policy");
  p.Required("policy", policy.has_value());
  if (auto e = p.Error()) return call.Fail(*e);
  if (json::parse(*policy, nullptr, false).is_discarded()) {
    return call.Fail(aws::InvalidArgumentError("Policy is not a valid JSON document."));
  }
  Status st = ctx.streams->Mutate(name, [&](StreamInfo& info) {
    info.resource_policy = *policy;
    return Status::OK();
  });
  if (!st.ok()) return call.Fail(st);
  call.ReplyEmpty();
}

void GetResourcePolicy(Context& ctx, Call& call, aws::Params& p) {
  auto name = StreamFromResourceArn(ctx, p);
  if (auto e = p.Error()) return call.Fail(*e);
  auto info = ctx.streams->Describe(name);
  if (!info.ok()) return call.Fail(info.status());
  call.Reply({{"Policy", info->resource_policy.empty() ? "{}" : info->resource_policy}});
}

void DeleteResourcePolicy(Context& ctx, Call& call, aws::Params& p) {
  auto name = StreamFromResourceArn(ctx, p);
  if (auto e = p.Error()) return call.Fail(*e);
  Status st = ctx.streams->Mutate(name, [&](StreamInfo& info) {
    info.resource_policy.clear();
    return Status::OK();
  });
  if (!st.ok()) return call.Fail(st);
  call.ReplyEmpty();
}

}  // namespace icestream::kinesis
