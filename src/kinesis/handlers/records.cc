// The data plane: PutRecord, PutRecords, GetShardIterator, GetRecords (aws-api.md §B.4,
// §B.5). PutRecords is the hot path: parsed with simdjson on-demand, base64 decoded once
// into one arena, appended with one group commit per shard, answered from an I/O thread.
#include <fmt/format.h>
#include <simdjson.h>

#include <cstring>

#include "common/base64.h"
#include "common/time_format.h"
#include "kinesis/context.h"
#include "stream/hash_key.h"
#include "stream/sequence_number.h"

namespace icestream::kinesis {

using nlohmann::json;
using stream::SequenceNumber;
using stream::ShardIdString;

namespace {

constexpr size_t kMaxGetRecordsBytes = 10u << 20;
// ShardIteratorType's values in the order AWS's validation message lists them.
}  // namespace

const std::string_view kIteratorTypes[5] = {"AFTER_SEQUENCE_NUMBER", "LATEST", "AT_TIMESTAMP",
                                            "AT_SEQUENCE_NUMBER", "TRIM_HORIZON"};

namespace {
// How AWS shows a PutRecordsRequestEntry inside a validation message (Java's toString).
constexpr const char* kEntryName =
    "com.amazonaws.kinesis.v20131202.PutRecordsRequestEntry@c965e310";
constexpr size_t kPartitionKeyMaxChars = 256;

// Limits that depend on the stream (MaxRecordSizeInKiB).
struct StreamLimits {
  size_t max_record_bytes = 1u << 20;
  size_t max_request_bytes = 5u << 20;
};

Result<StreamLimits> LimitsFor(Context& ctx, const std::string& name) {
  ASSIGN_OR_RETURN(int kib, ctx.streams->MaxRecordKib(name));
  StreamLimits l;
  l.max_record_bytes = static_cast<size_t>(kib) * 1024;
  l.max_request_bytes = kib > 1024 ? (10u << 20) : (5u << 20);
  return l;
}

std::string HashKeyRangeError(std::string_view v) {
  return fmt::format(
      "Invalid ExplicitHashKey. ExplicitHashKey must be in the range: [0, 2^128-1]. Specified "
      "value was {}",
      v);
}

// A record — its data blob (before base64) plus its partition key's UTF-8 bytes — may be
// up to the stream's MaxRecordSizeInKiB (1 MiB by default) (aws-api.md §B.4, §C.4).
std::string RecordTooLarge(size_t size, size_t max) {
  return fmt::format(
      "Record size of {} bytes (data plus partition key) exceeds the stream's maximum record "
      "size of {} bytes.",
      size, max);
}

// AWS's data-plane throttle (a full write queue; with --aws-strict also the per-shard
// rates of stream::ShardLimiter), for a whole call or as a PutRecords entry's message.
aws::ApiError ShardRateExceeded(std::string_view account, uint32_t shard, std::string_view stream) {
  return aws::ApiError{"ProvisionedThroughputExceededException",
                       fmt::format("Rate exceeded for shard {} in stream {} under account {}.",
                                   ShardIdString(shard), stream, account),
                       400};
}

// AWS's SerializationException texts for a Blob member (kinesalite's suite, recorded
// against AWS).
std::string BlobDecodeError(std::string_view text) {
  return fmt::format("'{}' can not be converted to a Blob: {}", text.substr(0, 64),
                     base64::DecodeError(text));
}

}  // namespace

void PutRecord(Context& ctx, Call& call, aws::Params& p) {
  // Members in the order AWS checks them, types first, then constraints
  // (kinesalite's validations, recorded against AWS).
  auto order = p.Str("SequenceNumberForOrdering");
  auto pk = p.Str("PartitionKey");
  auto ehk = p.Str("ExplicitHashKey");
  std::optional<std::string> data_b64;
  if (const auto& obj = p.object(); obj.contains("Data") && !obj["Data"].is_null()) {
    if (const json& d = obj["Data"]; d.is_string()) {
      data_b64 = d.get<std::string>();
    } else {
      p.AddSerializationError(aws::Params::TypeMessage(d, aws::MemberType::kBlob));
    }
  }
  std::optional<std::string> data;
  if (data_b64) {
    data = base64::Decode(*data_b64);
    if (!data) p.AddSerializationError(BlobDecodeError(*data_b64));
  }
  if (order) {
    p.Pattern("sequenceNumberForOrdering", *order, aws::MatchesDecimal(*order, 129),
              "0|([1-9]\\d{0,128})");
  }
  p.Required("partitionKey", pk.has_value());
  if (pk) p.Length("partitionKey", *pk, 1, kPartitionKeyMaxChars);
  if (ehk) p.Pattern("explicitHashKey", *ehk, aws::MatchesDecimal(*ehk, 39), "0|([1-9]\\d{0,38})");
  p.Required("data", p.object().contains("Data") && !p.object()["Data"].is_null());
  if (data && data->size() > (10u << 20)) {
    p.AddViolation(fmt::format(
        "Value 'java.nio.HeapByteBuffer[pos=0 lim={0} cap={0}]' at 'data' failed to satisfy "
        "constraint: Member must have length less than or equal to 10485760",
        data->size()));
  }
  auto name = StreamSelector(ctx, p);
  if (auto e = p.Error()) return call.Fail(*e);
  uint128 hash;
  if (ehk) {
    auto h = ParseDecimal128(*ehk);
    if (!h) return call.Fail(aws::InvalidArgumentError(HashKeyRangeError(*ehk)));
    hash = *h;
  } else {
    hash = stream::PartitionKeyHash(*pk);
  }
  auto limits = LimitsFor(ctx, *name);
  if (!limits.ok()) return call.Fail(limits.status());
  size_t size = data->size() + pk->size();
  if (size > limits->max_record_bytes) {
    return call.Fail(aws::InvalidArgumentError(RecordTooLarge(size, limits->max_record_bytes)));
  }
  if (order) {
    auto info = ctx.streams->Describe(*name);
    auto sn = SequenceNumber::Parse(*order);
    if (*order != "0" && (!sn || !info.ok() || sn->stream_uid != info->uid)) {
      return call.Fail(aws::InvalidArgumentError(fmt::format(
          "ExclusiveMinimumSequenceNumber {} used in PutRecord on stream {} under account {} is "
          "invalid.",
          *order, *name, ctx.options.account)));
    }
    // Within a shard our sequence numbers only grow, so every new record is already greater.
  }
  std::vector<stream::PutItem> items = {{*pk, *data, hash}};
  auto post = ctx.post;
  Status st = ctx.streams->Put(*name, items, [call, post, name = *name, &ctx](stream::PutResult r) {
    post([call, r = std::move(r), name, &ctx] {
      const auto& item = r.items[0];
      if (!item.error.ok()) {
        if (item.error.code() == StatusCode::kThrottled) {
          return call.Fail(ShardRateExceeded(ctx.options.account, item.shard_index, name));
        }
        // A full disk is 503 ServiceUnavailable (the SDKs retry it); the message says what
        // failed and never where.
        return call.Fail(item.error);
      }
      std::string body =
          R"({"ShardId":")" + ShardIdString(item.shard_index) + R"(","SequenceNumber":")" +
          SequenceNumber::ForRecord(r.stream_uid, item.shard_index, item.offset).ToString() +
          R"(","EncryptionType":"NONE"})";
      call.ReplyRaw(std::move(body));
    });
  });
  if (!st.ok()) call.Fail(st);
}

void PutRecordsRaw(Context& ctx, Call& call) {
  // simdjson needs SIMDJSON_PADDING readable bytes after the document. The DOM API is
  // used (not on-demand) because the packaged library dispatches it at run time to the
  // best kernel for the CPU, while on-demand would be compiled for the baseline only.
  std::string& body = call.req->body;
  size_t len = body.size();
  body.reserve(len + simdjson::SIMDJSON_PADDING);
  thread_local simdjson::dom::parser parser;

  std::optional<std::string> name, arn;
  struct Entry {
    std::string_view data_b64;
    std::string_view pk;
    std::string_view ehk;
    bool has_data = false, has_pk = false, has_ehk = false;
    size_t data_size = 0;
  };
  std::vector<Entry> entries;
  bool has_records = false;
  // simdjson string views point into the parser's buffer, valid until the next parse on
  // this thread: small strings are copied, payloads decoded before this function returns.
  auto fail_ser = [&](std::string msg) { call.Fail(aws::SerializationError(std::move(msg))); };

  // What AWS says for a member holding another JSON type (aws::Params::TypeMessage).
  auto found = [](simdjson::dom::element v, aws::MemberType t) {
    simdjson::dom::element_type k = v.type();
    json like = k == simdjson::dom::element_type::ARRAY    ? json::array()
                : k == simdjson::dom::element_type::OBJECT ? json::object()
                : k == simdjson::dom::element_type::BOOL   ? json(true)
                : k == simdjson::dom::element_type::STRING ? json("")
                                                           : json(0);
    return aws::Params::TypeMessage(like, t);
  };

  simdjson::dom::element doc;
  // A body that is not a JSON object: no message (as AWS answers).
  if (parser.parse(body.data(), len, false).get(doc)) return fail_ser("");
  simdjson::dom::object obj;
  if (doc.get_object().get(obj)) return fail_ser("");
  for (auto field : obj) {
    std::string_view key = field.key;
    simdjson::dom::element v = field.value;
    if (v.is_null()) continue;
    if (key == "StreamName" || key == "StreamARN") {
      std::string_view sv;
      if (v.get_string().get(sv)) return fail_ser(found(v, aws::MemberType::kString));
      (key == "StreamName" ? name : arn) = std::string(sv);
    } else if (key == "Records") {
      simdjson::dom::array arr;
      if (v.get_array().get(arr)) return fail_ser(found(v, aws::MemberType::kList));
      has_records = true;
      entries.reserve(arr.size());
      for (auto elem : arr) {
        simdjson::dom::object rec;
        if (elem.get_object().get(rec)) return fail_ser(found(elem, aws::MemberType::kStructure));
        Entry e;
        for (auto rf : rec) {
          std::string_view rk = rf.key;
          if (rf.value.is_null()) continue;
          if (rk != "Data" && rk != "PartitionKey" && rk != "ExplicitHashKey") continue;
          std::string_view sv;
          if (rf.value.get_string().get(sv)) {
            return fail_ser(
                found(rf.value, rk == "Data" ? aws::MemberType::kBlob : aws::MemberType::kString));
          }
          if (rk == "Data") {
            e.data_b64 = sv;  // decoded below, before the parser is reused
            e.has_data = true;
            auto sz = base64::DecodedSize(sv);
            if (!sz) return fail_ser(BlobDecodeError(sv));
            e.data_size = *sz;
          } else if (rk == "PartitionKey") {
            e.pk = sv;
            e.has_pk = true;
          } else {
            e.ehk = sv;
            e.has_ehk = true;
          }
        }
        entries.push_back(e);
      }
    }
  }

  // Decode every payload into one arena (base64 is longer than its bytes, so the body size
  // bounds the arena) while the parser's strings are still alive.
  size_t total_data = 0;
  for (const auto& e : entries) total_data += e.data_size;
  std::unique_ptr<char[]> arena(new char[total_data + 1]);
  std::vector<std::string_view> data(entries.size());
  std::vector<std::string> pks(entries.size());
  std::vector<std::string> ehks(entries.size());
  size_t at = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    auto& e = entries[i];
    if (e.has_data) {
      if (!base64::DecodeTo(e.data_b64, reinterpret_cast<uint8_t*>(arena.get() + at))) {
        return fail_ser(BlobDecodeError(e.data_b64));
      }
      data[i] = std::string_view(arena.get() + at, e.data_size);
      at += e.data_size;
    }
    pks[i] = std::string(e.pk);
    ehks[i] = std::string(e.ehk);
  }

  // Model validation (ValidationException), then service checks (InvalidArgument).
  json empty = json::object();
  aws::Params p(empty);
  p.SetAuthError(call.auth_error);
  // Members in the order AWS checks them: Records (each entry's PartitionKey,
  // ExplicitHashKey, Data), then the stream (kinesalite's validations, recorded against AWS).
  p.Required("records", has_records);
  if (has_records) {
    // AWS renders each entry by its Java class and hash (kinesalite's suite).
    std::string rendered = "[";
    for (size_t i = 0; i < entries.size() && i < 1000; ++i) {
      rendered += (i ? ", " : "") + std::string(kEntryName);
    }
    rendered += entries.size() > 1000 ? ", ...]" : "]";
    p.ListLength("records", entries.size(), rendered, 1, 500);
  }
  for (size_t i = 0; i < entries.size() && i < 500; ++i) {
    const auto& e = entries[i];
    // Most entries are plainly valid: skip building the member names for them. Anything
    // else (including a multi-byte key longer than 256 bytes) takes the exact checks.
    if (e.has_data && e.has_pk && !e.has_ehk && !pks[i].empty() &&
        pks[i].size() <= kPartitionKeyMaxChars && e.data_size <= (10u << 20)) {
      continue;
    }
    std::string base = fmt::format("records.{}.member.", i + 1);
    p.Required(base + "partitionKey", e.has_pk);
    if (e.has_pk) p.Length(base + "partitionKey", pks[i], 1, kPartitionKeyMaxChars);
    if (e.has_ehk) {
      p.Pattern(base + "explicitHashKey", ehks[i], aws::MatchesDecimal(ehks[i], 39),
                "0|([1-9]\\d{0,38})");
    }
    p.Required(base + "data", e.has_data);
    if (e.data_size > (10u << 20)) {
      p.AddViolation(fmt::format(
          "Value 'java.nio.HeapByteBuffer[pos=0 lim={0} cap={0}]' at '{1}data' failed to satisfy "
          "constraint: Member must have length less than or equal to 10485760",
          e.data_size, base));
    }
  }
  if (name) {
    p.Pattern("streamName", *name, aws::MatchesNameChars(*name), "[a-zA-Z0-9_.-]+");
    p.Length("streamName", *name, 1, 128);
  }
  std::optional<std::string> arn_name;
  if (arn) arn_name = StreamNameFromArn(ctx, p, "streamARN", *arn);
  if (!name && !arn)
    p.Defer(aws::InvalidArgumentError("Neither StreamARN nor StreamName was provided."));
  if (auto err = p.Error()) return call.Fail(*err);
  std::string stream_name = name ? *name : *arn_name;
  if (name && arn_name && *arn_name != stream_name) {
    return call.Fail(
        aws::InvalidArgumentError("StreamARN and StreamName do not name the same stream."));
  }
  auto limits = LimitsFor(ctx, stream_name);
  if (!limits.ok()) return call.Fail(limits.status());
  std::vector<stream::PutItem> items(entries.size());
  size_t total = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (data[i].size() + pks[i].size() > limits->max_record_bytes) {
      return call.Fail(aws::InvalidArgumentError(
          RecordTooLarge(data[i].size() + pks[i].size(), limits->max_record_bytes)));
    }
    total += data[i].size() + pks[i].size();
    uint128 hash;
    if (entries[i].has_ehk) {
      auto h = ParseDecimal128(ehks[i]);
      if (!h) return call.Fail(aws::InvalidArgumentError(HashKeyRangeError(ehks[i])));
      hash = *h;
    } else {
      hash = stream::PartitionKeyHash(pks[i]);
    }
    items[i] = {pks[i], data[i], hash};
  }
  if (total > limits->max_request_bytes) {
    return call.Fail(aws::InvalidArgumentError(
        fmt::format("Records size exceeds {} MB limit", limits->max_request_bytes >> 20)));
  }

  auto post = ctx.post;
  std::string account = ctx.options.account;
  Status st =
      ctx.streams->Put(stream_name, items, [call, post, stream_name, account](stream::PutResult r) {
        post([call, r = std::move(r), stream_name, account] {
          // Every record refused because the disk is full (or the log cannot be written for
          // a reason that passes): the whole call is retryable, so answer it as such.
          bool all_unavailable = !r.items.empty();
          for (const auto& it : r.items) {
            all_unavailable &= it.error.code() == StatusCode::kUnavailable;
          }
          if (all_unavailable) return call.Fail(r.items[0].error);
          std::string out;
          out.reserve(40 + r.items.size() * 110);
          int failed = 0;
          out += R"({"Records":[)";
          for (size_t i = 0; i < r.items.size(); ++i) {
            const auto& it = r.items[i];
            if (i) out.push_back(',');
            if (it.error.ok()) {
              out += R"({"SequenceNumber":")";
              SequenceNumber::ForRecord(r.stream_uid, it.shard_index, it.offset).AppendTo(&out);
              out += R"(","ShardId":")";
              stream::AppendShardId(&out, it.shard_index);
              out += "\"}";
            } else {
              ++failed;
              if (it.error.code() == StatusCode::kThrottled) {
                out += R"({"ErrorCode":"ProvisionedThroughputExceededException","ErrorMessage":)";
                AppendJsonString(&out,
                                 ShardRateExceeded(account, it.shard_index, stream_name).message);
                out += "}";
              } else {
                out += R"({"ErrorCode":"InternalFailure","ErrorMessage":)";
                AppendJsonString(&out, it.error.message().empty() ? "Internal service failure."
                                                                  : it.error.message());
                out += "}";
              }
            }
          }
          out +=
              R"(],"FailedRecordCount":)" + std::to_string(failed) + R"(,"EncryptionType":"NONE"})";
          call.ReplyRaw(std::move(out));
        });
      });
  if (!st.ok()) call.Fail(st);
}

void GetShardIterator(Context& ctx, Call& call, aws::Params& p) {
  auto shard_id = p.Str("ShardId");
  p.Required("shardId", shard_id.has_value());
  if (shard_id) CheckShardIdMember(p, "shardId", *shard_id);
  auto type = p.Str("ShardIteratorType");
  p.Required("shardIteratorType", type.has_value());
  // The enum in the order AWS lists it (kinesalite's suite).
  if (type) p.Enum("shardIteratorType", *type, kIteratorTypes);
  auto seq = p.Str("StartingSequenceNumber");
  if (seq) {
    p.Pattern("startingSequenceNumber", *seq, aws::MatchesDecimal(*seq, 129),
              "0|([1-9]\\d{0,128})");
  }
  auto name = StreamSelector(ctx, p);
  auto ts = p.TimestampMs("Timestamp");
  if (auto e = p.Error()) return call.Fail(*e);
  // AWS's order and texts (kinesalite's suite): a shard id that names no shard at all,
  // then the stream and the shard (both reported as the shard, named canonically), then
  // the iterator type's rules.
  auto idx = stream::ParseShardId(*shard_id);
  if (!idx) {
    return call.Fail(stream::CouldNotFindShardError(*shard_id, *name, ctx.options.account));
  }
  Status not_found = stream::ShardNotFoundError(ShardIdString(*idx), *name, ctx.options.account);
  auto info = ctx.streams->Describe(*name);
  if (!info.ok()) {
    if (info.status().code() == StatusCode::kNotFound) return call.Fail(not_found);
    return call.Fail(info.status());
  }
  if (!info->FindShard(*idx)) return call.Fail(not_found);
  bool by_seq = *type == "AT_SEQUENCE_NUMBER" || *type == "AFTER_SEQUENCE_NUMBER";
  if (by_seq && !seq) {
    return call.Fail(aws::InvalidArgumentError(fmt::format(
        "Must either specify (1) AT_SEQUENCE_NUMBER or AFTER_SEQUENCE_NUMBER and "
        "StartingSequenceNumber or (2) TRIM_HORIZON or LATEST and no StartingSequenceNumber. "
        "Request specified {} and no StartingSequenceNumber.",
        *type)));
  }
  if (!by_seq && seq) {
    return call.Fail(aws::InvalidArgumentError(fmt::format(
        "Must either specify (1) AT_SEQUENCE_NUMBER or AFTER_SEQUENCE_NUMBER and "
        "StartingSequenceNumber or (2) TRIM_HORIZON or LATEST and no StartingSequenceNumber. "
        "Request specified {} and also a StartingSequenceNumber.",
        *type)));
  }
  int64_t now = ctx.clock->NowMillis();
  if (*type == "AT_TIMESTAMP") {
    if (!ts) {
      return call.Fail(aws::InvalidArgumentError(
          "Must specify timestampInMillis parameter for iterator of type AT_TIMESTAMP. Current "
          "request has no timestamp parameter."));
    }
    if (*ts > now) {
      return call.Fail(aws::InvalidArgumentError(fmt::format(
          "The timestampInMillis parameter cannot be greater than the currentTimestampInMillis. "
          "timestampInMillis: {}, currentTimestampInMillis: {}",
          *ts, now)));
    }
  }
  auto bounds = ctx.streams->Bounds(*name, info->uid, *idx);
  if (!bounds.ok()) return call.Fail(bounds.status());
  if (auto* limiter = ctx.streams->limiter(); limiter && !limiter->AdmitIterator(info->uid, *idx)) {
    return call.Fail(ShardRateExceeded(ctx.options.account, *idx, *name));
  }
  uint64_t offset = 0;
  if (*type == "TRIM_HORIZON") {
    offset = bounds->trim_horizon;
  } else if (*type == "LATEST") {
    offset = bounds->end;
  } else if (*type == "AT_TIMESTAMP") {
    auto o = ctx.streams->OffsetAtTime(*name, info->uid, *idx, *ts);
    if (!o.ok()) return call.Fail(o.status());
    offset = *o;
  } else {
    auto sn = SequenceNumber::Parse(*seq);
    if (!sn || sn->stream_uid != info->uid) {
      return call.Fail(aws::InvalidArgumentError(fmt::format(
          "StartingSequenceNumber {} used in GetShardIterator on shard {} in stream {} under "
          "account {} is invalid because it did not come from this stream.",
          *seq, ShardIdString(*idx), *name, ctx.options.account)));
    }
    if (sn->shard_index != *idx) {
      return call.Fail(aws::InvalidArgumentError(fmt::format(
          "Invalid StartingSequenceNumber. It encodes {}, while it was used in a call to a shard "
          "with {}",
          ShardIdString(sn->shard_index), ShardIdString(*idx))));
    }
    // position p names record p-1; position 0 is the shard's start.
    uint64_t pos = sn->position;
    offset = *type == "AT_SEQUENCE_NUMBER" ? (pos == 0 ? 0 : pos - 1) : pos;
  }
  IteratorToken t{*name, info->uid, *idx, offset, now};
  call.Reply({{"ShardIterator", ctx.tokens.EncodeIterator(t)}});
}

void GetRecords(Context& ctx, Call& call, aws::Params& p) {
  auto limit = p.Int("Limit");
  if (limit) p.Range("limit", *limit, 1, 10000);
  auto it_text = p.Str("ShardIterator");
  p.Required("shardIterator", it_text.has_value());
  if (it_text) p.Length("shardIterator", *it_text, 1, 512);
  auto arn = p.Str("StreamARN");
  std::optional<std::string> arn_name;
  if (arn) arn_name = StreamNameFromArn(ctx, p, "streamARN", *arn);
  if (auto e = p.Error()) return call.Fail(*e);
  auto t = ctx.tokens.DecodeIterator(*it_text);
  if (!t) return call.Fail(aws::InvalidArgumentError("Invalid ShardIterator."));
  if (arn_name && *arn_name != t->stream_name) {
    return call.Fail(aws::InvalidArgumentError(fmt::format(
        "Invalid ShardIterator: it belongs to stream {}, not to {}.", t->stream_name, *arn)));
  }
  int64_t now = ctx.clock->NowMillis();
  if (now - t->issued_ms > ctx.options.iterator_ttl_ms) {
    return call.Fail(aws::ApiError{
        "ExpiredIteratorException",
        fmt::format("Iterator expired. The iterator was created at time {} while right now it is "
                    "{} which is further in the future than the tolerated delay of {} "
                    "milliseconds.",
                    FormatJavaDate(t->issued_ms), FormatJavaDate(now), ctx.options.iterator_ttl_ms),
        400});
  }
  size_t max_records = static_cast<size_t>(limit.value_or(10000));
  auto* limiter = ctx.streams->limiter();
  if (limiter && !limiter->AdmitRead(t->stream_uid, t->shard_index)) {
    return call.Fail(ShardRateExceeded(ctx.options.account, t->shard_index, t->stream_name));
  }
  // Over HTTP/2 an answer stays in memory until the peer reads it: the connection grants
  // how many bytes this one may take (http::Request::reserve_response), and fewer records
  // come back when it grants less — as AWS's GetRecords may return fewer records than are
  // there; clients call again with NextShardIterator.
  size_t max_bytes = kMaxGetRecordsBytes;
  size_t granted = SIZE_MAX;
  if (call.req->reserve_response) {
    granted = call.req->reserve_response(base64::EncodedSize(kMaxGetRecordsBytes) + (1u << 20));
    max_bytes = std::min(kMaxGetRecordsBytes, granted / 4 * 3);
  }
  auto r = ctx.streams->Read(t->stream_name, t->stream_uid, t->shard_index, t->offset, max_records,
                             max_bytes);
  if (!r.ok()) {
    // A stream deleted (or re-created) since: AWS names the shard (kinesalite's suite).
    if (r.status().code() == StatusCode::kNotFound) {
      return call.Fail(stream::ShardNotFoundError(ShardIdString(t->shard_index), t->stream_name,
                                                  ctx.options.account));
    }
    return call.Fail(r.status());
  }
  if (granted != SIZE_MAX) {
    // The log hands out at least one record; within a grant, even that one must fit.
    size_t answer = 256, kept = 0;
    for (const auto& rec : r->records) {
      answer += base64::EncodedSize(rec.data.size()) + 2 * rec.partition_key.size() + 160;
      if (answer > granted) break;
      ++kept;
    }
    if (kept < r->records.size()) {
      r->next_offset = r->records[kept].offset;
      r->records.resize(kept);
      r->shard_end = false;
    }
  }
  if (limiter) {
    size_t bytes = 0;
    for (const auto& rec : r->records) bytes += rec.data.size() + rec.partition_key.size();
    limiter->ChargeRead(t->stream_uid, t->shard_index, bytes);
  }
  std::string out = "{";
  AppendRecordsJson(&out, *r, t->stream_uid, t->shard_index);
  if (!r->shard_end) {
    IteratorToken next = *t;
    next.offset = r->next_offset;
    next.issued_ms = now;
    out += R"(,"NextShardIterator":")" + ctx.tokens.EncodeIterator(next) + "\"";
  } else {
    out += R"(,"ChildShards":)" + ChildShardsJson(r->children).dump();
  }
  out += R"(,"MillisBehindLatest":)" + std::to_string(r->millis_behind_latest) + "}";
  call.ReplyRaw(std::move(out));
}

}  // namespace icestream::kinesis
