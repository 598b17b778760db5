// The data plane: PutRecord, PutRecords, GetShardIterator, GetRecords (aws-api.md §B.4,
// §B.5). PutRecords is the hot path: parsed with simdjson on-demand, base64 decoded once
// into one arena, appended with one group commit per shard, answered from an I/O thread.
#include <fmt/format.h>
#include <simdjson.h>

#include <cstring>
#include <deque>

#include "aws/cbor.h"
#include "common/base64.h"
#include "common/time_format.h"
#include "kinesis/context.h"
#include "metrics/stream_metrics.h"
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

metrics::PutOutcome PutOutcomeOf(const Status& st) {
  if (st.ok()) return metrics::PutOutcome::kOk;
  return st.code() == StatusCode::kThrottled ? metrics::PutOutcome::kThrottled
                                             : metrics::PutOutcome::kFailed;
}

}  // namespace

void PutRecord(Context& ctx, Call& call, aws::Params& p) {
  int64_t start_ns = MonotonicNanos();
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
  size_t data_size = data->size();
  Status st = ctx.streams->Put(
      *name, items, [call, post, name = *name, &ctx, data_size, start_ns](stream::PutResult r) {
        post([call, r = std::move(r), name, &ctx, data_size, start_ns] {
          const auto& item = r.items[0];
          if (ctx.metrics) {
            ctx.metrics->OnPutRecord(r.stream_uid, name, item.shard_index, data_size,
                                     PutOutcomeOf(item.error), MonotonicNanos() - start_ns);
          }
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

namespace {

// A PutRecords request as read from either wire format: the members the operation uses,
// with every payload already decoded. Views point into the request body (CBOR), into
// `arena` (payloads decoded from base64) or into `copies`; all live as long as the input.
struct PutRecordsInput {
  struct Entry {
    std::string_view data, pk, ehk;
    bool has_data = false, has_pk = false, has_ehk = false;
  };
  std::optional<std::string> name, arn;
  bool has_records = false;
  // The first kMaxKept records; `count` counts them all (more than 500 is a validation
  // error that names the count, and keeping them would let one body of tiny records
  // cost dozens of bytes each).
  std::vector<Entry> entries;
  size_t count = 0;
  std::unique_ptr<char[]> arena;
  std::deque<std::string> copies;
};

constexpr size_t kMaxKept = 501;

// What AWS says for a member holding another type (aws::Params::TypeMessage), for a CBOR
// item: the JSON value the generic CBOR transcoding would have handed the JSON path.
std::string CborFound(aws::CborReader::Kind k, aws::MemberType t) {
  using Kind = aws::CborReader::Kind;
  json like = k == Kind::kArray                       ? json::array()
              : k == Kind::kMap                       ? json::object()
              : k == Kind::kTrue || k == Kind::kFalse ? json(true)
              : k == Kind::kText                      ? json("")
                                                      : json(0);
  return aws::Params::TypeMessage(like, t);
}

// JSON 1.1: simdjson needs SIMDJSON_PADDING readable bytes after the document. The DOM API
// is used (not on-demand) because the packaged library dispatches it at run time to the
// best kernel for the CPU, while on-demand would be compiled for the baseline only.
// Returns the SerializationException message of a malformed body.
std::optional<std::string> ReadPutRecordsJson(std::string& body, PutRecordsInput* in) {
  size_t len = body.size();
  body.reserve(len + simdjson::SIMDJSON_PADDING);
  thread_local simdjson::dom::parser parser;
  struct Raw {
    std::string_view data_b64, pk, ehk;
    bool has_data = false, has_pk = false, has_ehk = false;
    size_t data_size = 0;
  };
  std::vector<Raw> raws;
  // simdjson string views point into the parser's buffer, valid until the next parse on
  // this thread: small strings are copied, payloads decoded before this function returns.
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
  if (parser.parse(body.data(), len, false).get(doc)) return std::string();
  simdjson::dom::object obj;
  if (doc.get_object().get(obj)) return std::string();
  for (auto field : obj) {
    std::string_view key = field.key;
    simdjson::dom::element v = field.value;
    if (v.is_null()) continue;
    if (key == "StreamName" || key == "StreamARN") {
      std::string_view sv;
      if (v.get_string().get(sv)) return found(v, aws::MemberType::kString);
      (key == "StreamName" ? in->name : in->arn) = std::string(sv);
    } else if (key == "Records") {
      simdjson::dom::array arr;
      if (v.get_array().get(arr)) return found(v, aws::MemberType::kList);
      in->has_records = true;
      in->count = 0;
      raws.clear();
      raws.reserve(std::min<size_t>(arr.size(), kMaxKept));
      for (auto elem : arr) {
        simdjson::dom::object rec;
        if (elem.get_object().get(rec)) return found(elem, aws::MemberType::kStructure);
        Raw e;
        for (auto rf : rec) {
          std::string_view rk = rf.key;
          if (rf.value.is_null()) continue;
          if (rk != "Data" && rk != "PartitionKey" && rk != "ExplicitHashKey") continue;
          std::string_view sv;
          if (rf.value.get_string().get(sv)) {
            return found(rf.value,
                         rk == "Data" ? aws::MemberType::kBlob : aws::MemberType::kString);
          }
          if (rk == "Data") {
            e.data_b64 = sv;  // decoded below, before the parser is reused
            e.has_data = true;
            auto sz = base64::DecodedSize(sv);
            if (!sz) return BlobDecodeError(sv);
            e.data_size = *sz;
          } else if (rk == "PartitionKey") {
            e.pk = sv;
            e.has_pk = true;
          } else {
            e.ehk = sv;
            e.has_ehk = true;
          }
        }
        if (++in->count <= kMaxKept) raws.push_back(e);
      }
    }
  }
  // Decode every payload into one arena (base64 is longer than its bytes, so the body size
  // bounds the arena) while the parser's strings are still alive.
  size_t total_data = 0;
  for (const auto& e : raws) total_data += e.data_size;
  in->arena.reset(new char[total_data + 1]);
  in->entries.resize(raws.size());
  size_t at = 0;
  for (size_t i = 0; i < raws.size(); ++i) {
    const auto& r = raws[i];
    auto& e = in->entries[i];
    if (r.has_data) {
      if (!base64::DecodeTo(r.data_b64, reinterpret_cast<uint8_t*>(in->arena.get() + at))) {
        return BlobDecodeError(r.data_b64);
      }
      e.data = std::string_view(in->arena.get() + at, r.data_size);
      at += r.data_size;
    }
    e.has_data = r.has_data;
    e.has_pk = r.has_pk;
    e.has_ehk = r.has_ehk;
    if (r.has_pk) e.pk = in->copies.emplace_back(r.pk);
    if (r.has_ehk) e.ehk = in->copies.emplace_back(r.ehk);
  }
  return std::nullopt;
}

// CBOR, read in place: payloads are byte strings, so `Data` is a view into the body (no
// base64, no copy). Checks and messages are those of the generic CBOR transcoding
// (aws/cbor.h) followed by the JSON path's: a member the operation does not read is
// checked as the transcoder would and skipped.
std::optional<std::string> ReadPutRecordsCbor(std::string_view body, PutRecordsInput* in) {
  using Kind = aws::CborReader::Kind;
  const aws::CborModel& model = KinesisApi::CborModel();
  const std::string kMalformed =
      "Request body is not a well-formed CBOR data item (or nests more than 64 levels).";
  if (auto e = aws::CborCheckRequest(body)) return e->message;
  aws::CborReader r(body);
  aws::CborReader::Item item;
  std::string scratch;
  auto bytes_error = [](std::string_view member) {
    return "A CBOR byte string is only allowed for blob members; '" + std::string(member) +
           "' is not one.";
  };
  // The body of a text item (chunks joined into a stable copy).
  auto text = [&](const aws::CborReader::Item& it,
                  std::string_view* out) -> std::optional<std::string> {
    std::string_view v;
    if (!r.StringBody(it, &scratch, &v)) return kMalformed;
    if (!IsValidUtf8(v)) return std::string("A CBOR text string is not valid UTF-8.");
    *out = it.indefinite ? std::string_view(in->copies.emplace_back(v)) : v;
    return std::nullopt;
  };
  auto skip = [&](const aws::CborReader::Item& it,
                  std::string_view member) -> std::optional<std::string> {
    if (auto e = aws::CborCheckValue(&r, it, member, model)) return e->message;
    return std::nullopt;
  };
  // Map entries: calls `member(key, value item)` for each; definite or indefinite.
  auto each_member = [&](const aws::CborReader::Item& map,
                         auto&& member) -> std::optional<std::string> {
    for (uint64_t i = 0; map.indefinite || i < map.length; ++i) {
      if (map.indefinite && r.TakeBreak()) break;
      aws::CborReader::Item k;
      if (!r.Next(&k)) return kMalformed;
      if (k.kind != Kind::kText)
        return std::string("Request body is not valid CBOR for this service.");
      std::string_view key;
      if (auto e = text(k, &key)) return e;
      aws::CborReader::Item v;
      if (!r.Next(&v)) return kMalformed;
      if (auto e = member(key, v)) return e;
    }
    return std::nullopt;
  };
  if (!r.Next(&item)) return kMalformed;
  if (item.kind != Kind::kMap) return std::string("Expected a CBOR map.");
  return each_member(
      item,
      [&](std::string_view key, const aws::CborReader::Item& v) -> std::optional<std::string> {
        if (v.kind == Kind::kNull) return std::nullopt;
        if (key == "StreamName" || key == "StreamARN") {
          if (v.kind == Kind::kBytes) return bytes_error(key);
          if (v.kind != Kind::kText) {
            if (auto e = skip(v, key)) return e;
            return CborFound(v.kind, aws::MemberType::kString);
          }
          std::string_view sv;
          if (auto e = text(v, &sv)) return e;
          (key == "StreamName" ? in->name : in->arn) = std::string(sv);
          return std::nullopt;
        }
        if (key != "Records") return skip(v, key);
        if (v.kind == Kind::kBytes) return bytes_error(key);
        if (v.kind != Kind::kArray) {
          if (auto e = skip(v, key)) return e;
          return CborFound(v.kind, aws::MemberType::kList);
        }
        in->has_records = true;
        in->entries.clear();  // a repeated member: the last one counts, as in a JSON object
        in->count = 0;
        if (!v.indefinite) in->entries.reserve(std::min<uint64_t>(v.length, kMaxKept));
        for (uint64_t i = 0; v.indefinite || i < v.length; ++i) {
          if (v.indefinite && r.TakeBreak()) break;
          aws::CborReader::Item rec;
          if (!r.Next(&rec)) return kMalformed;
          if (rec.kind == Kind::kBytes) return bytes_error("Records");
          if (rec.kind != Kind::kMap) {
            if (auto e = skip(rec, "Records")) return e;
            return CborFound(rec.kind, aws::MemberType::kStructure);
          }
          PutRecordsInput::Entry e;
          if (auto err = each_member(
                  rec,
                  [&](std::string_view rk,
                      const aws::CborReader::Item& rv) -> std::optional<std::string> {
                    if (rv.kind == Kind::kNull) return std::nullopt;
                    if (rk == "Data") {
                      if (rv.kind != Kind::kBytes) {
                        return "Member 'Data' is a blob: it must be a CBOR byte string.";
                      }
                      std::string_view d;
                      if (!r.StringBody(rv, &scratch, &d)) return kMalformed;
                      e.data = rv.indefinite ? std::string_view(in->copies.emplace_back(d)) : d;
                      e.has_data = true;
                      return std::nullopt;
                    }
                    if (rk != "PartitionKey" && rk != "ExplicitHashKey") return skip(rv, rk);
                    if (rv.kind == Kind::kBytes) return bytes_error(rk);
                    if (rv.kind != Kind::kText) {
                      if (auto err2 = skip(rv, rk)) return err2;
                      return CborFound(rv.kind, aws::MemberType::kString);
                    }
                    std::string_view sv;
                    if (auto err2 = text(rv, &sv)) return err2;
                    (rk == "PartitionKey" ? e.pk : e.ehk) = sv;
                    (rk == "PartitionKey" ? e.has_pk : e.has_ehk) = true;
                    return std::nullopt;
                  })) {
            return err;
          }
          if (++in->count <= kMaxKept) in->entries.push_back(e);
        }
        return std::nullopt;
      });
}

// The PutRecords answer, JSON 1.1 or CBOR (same members; CBOR needs no transcoding).
std::string PutRecordsAnswer(const stream::PutResult& r, const std::string& stream_name,
                             const std::string& account, bool cbor) {
  std::string out;
  int failed = 0;
  for (const auto& it : r.items) failed += it.error.ok() ? 0 : 1;
  auto error_text = [&](const stream::PutOutcome& it) {
    return it.error.code() == StatusCode::kThrottled
               ? ShardRateExceeded(account, it.shard_index, stream_name).message
               : (it.error.message().empty() ? std::string("Internal service failure.")
                                             : it.error.message());
  };
  auto error_code = [](const stream::PutOutcome& it) {
    return it.error.code() == StatusCode::kThrottled ? "ProvisionedThroughputExceededException"
                                                     : "InternalFailure";
  };
  if (cbor) {
    out.reserve(64 + r.items.size() * 80);
    std::string field;
    aws::CborAppendHead(&out, 5, 3);
    aws::CborAppendText(&out, "Records");
    aws::CborAppendHead(&out, 4, r.items.size());
    for (const auto& it : r.items) {
      aws::CborAppendHead(&out, 5, 2);
      if (it.error.ok()) {
        aws::CborAppendText(&out, "SequenceNumber");
        field.clear();
        SequenceNumber::ForRecord(r.stream_uid, it.shard_index, it.offset).AppendTo(&field);
        aws::CborAppendText(&out, field);
        aws::CborAppendText(&out, "ShardId");
        field.clear();
        stream::AppendShardId(&field, it.shard_index);
        aws::CborAppendText(&out, field);
      } else {
        aws::CborAppendText(&out, "ErrorCode");
        aws::CborAppendText(&out, error_code(it));
        aws::CborAppendText(&out, "ErrorMessage");
        aws::CborAppendText(&out, error_text(it));
      }
    }
    aws::CborAppendText(&out, "FailedRecordCount");
    aws::CborAppendInt(&out, failed);
    aws::CborAppendText(&out, "EncryptionType");
    aws::CborAppendText(&out, "NONE");
    return out;
  }
  out.reserve(40 + r.items.size() * 110);
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
      out += R"({"ErrorCode":")";
      out += error_code(it);
      out += R"(","ErrorMessage":)";
      AppendJsonString(&out, error_text(it));
      out += "}";
    }
  }
  out += R"(],"FailedRecordCount":)" + std::to_string(failed) + R"(,"EncryptionType":"NONE"})";
  return out;
}

}  // namespace

void PutRecordsRaw(Context& ctx, Call& call) {
  int64_t start_ns = MonotonicNanos();
  const bool cbor = RequestIsCbor(call);
  // Everything `items` points at below lives in `in` (or the body) until Put() returns:
  // Put copies the records into the log's write batch.
  PutRecordsInput in;
  std::optional<std::string> bad =
      cbor ? ReadPutRecordsCbor(call.req->body, &in) : ReadPutRecordsJson(call.req->body, &in);
  if (bad) return call.Fail(aws::SerializationError(std::move(*bad)));
  const auto& entries = in.entries;
  const auto& name = in.name;
  const auto& arn = in.arn;

  // Model validation (ValidationException), then service checks (InvalidArgument).
  json empty = json::object();
  aws::Params p(empty);
  p.SetAuthError(call.auth_error);
  // Members in the order AWS checks them: Records (each entry's PartitionKey,
  // ExplicitHashKey, Data), then the stream (kinesalite's validations, recorded against AWS).
  p.Required("records", in.has_records);
  if (in.has_records) {
    // AWS renders each entry by its Java class and hash (kinesalite's suite).
    std::string rendered = "[";
    for (size_t i = 0; i < in.count && i < 1000; ++i) {
      rendered += (i ? ", " : "") + std::string(kEntryName);
    }
    rendered += in.count > 1000 ? ", ...]" : "]";
    p.ListLength("records", in.count, rendered, 1, 500);
  }
  for (size_t i = 0; i < entries.size() && i < 500; ++i) {
    const auto& e = entries[i];
    // Most entries are plainly valid: skip building the member names for them. Anything
    // else (including a multi-byte key longer than 256 bytes) takes the exact checks.
    if (e.has_data && e.has_pk && !e.has_ehk && !e.pk.empty() &&
        e.pk.size() <= kPartitionKeyMaxChars && e.data.size() <= (10u << 20)) {
      continue;
    }
    std::string base = fmt::format("records.{}.member.", i + 1);
    p.Required(base + "partitionKey", e.has_pk);
    if (e.has_pk) p.Length(base + "partitionKey", e.pk, 1, kPartitionKeyMaxChars);
    if (e.has_ehk) {
      p.Pattern(base + "explicitHashKey", e.ehk, aws::MatchesDecimal(e.ehk, 39),
                "0|([1-9]\\d{0,38})");
    }
    p.Required(base + "data", e.has_data);
    if (e.data.size() > (10u << 20)) {
      p.AddViolation(fmt::format(
          "Value 'java.nio.HeapByteBuffer[pos=0 lim={0} cap={0}]' at '{1}data' failed to satisfy "
          "constraint: Member must have length less than or equal to 10485760",
          e.data.size(), base));
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
  std::vector<uint32_t> sizes(ctx.metrics ? entries.size() : 0);  // data bytes, for metrics
  size_t total = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    if (e.data.size() + e.pk.size() > limits->max_record_bytes) {
      return call.Fail(aws::InvalidArgumentError(
          RecordTooLarge(e.data.size() + e.pk.size(), limits->max_record_bytes)));
    }
    total += e.data.size() + e.pk.size();
    uint128 hash;
    if (e.has_ehk) {
      auto h = ParseDecimal128(e.ehk);
      if (!h) return call.Fail(aws::InvalidArgumentError(HashKeyRangeError(e.ehk)));
      hash = *h;
    } else {
      hash = stream::PartitionKeyHash(e.pk);
    }
    items[i] = {e.pk, e.data, hash};
    if (ctx.metrics) sizes[i] = static_cast<uint32_t>(e.data.size());
  }
  if (total > limits->max_request_bytes) {
    return call.Fail(aws::InvalidArgumentError(
        fmt::format("Records size exceeds {} MB limit", limits->max_request_bytes >> 20)));
  }

  auto post = ctx.post;
  std::string account = ctx.options.account;
  Status st = ctx.streams->Put(
      stream_name, items,
      [call, post, stream_name, account, cbor, metrics = ctx.metrics, sizes = std::move(sizes),
       start_ns](stream::PutResult r) mutable {
        post([call, r = std::move(r), stream_name, account, cbor, metrics, sizes = std::move(sizes),
              start_ns] {
          if (metrics) {
            metrics::PutTally tally;
            for (size_t i = 0; i < r.items.size(); ++i) {
              tally.Add(r.items[i].shard_index, sizes[i], PutOutcomeOf(r.items[i].error));
            }
            metrics->OnPutRecords(r.stream_uid, stream_name, tally, MonotonicNanos() - start_ns);
          }
          // Every record refused because the disk is full (or the log cannot be written for
          // a reason that passes): the whole call is retryable, so answer it as such.
          bool all_unavailable = !r.items.empty();
          for (const auto& it : r.items) {
            all_unavailable &= it.error.code() == StatusCode::kUnavailable;
          }
          if (all_unavailable) return call.Fail(r.items[0].error);
          std::string out = PutRecordsAnswer(r, stream_name, account, cbor);
          cbor ? call.ReplyCbor(std::move(out)) : call.ReplyRaw(std::move(out));
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
  int64_t start_ns = MonotonicNanos();
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
    if (ctx.metrics) ctx.metrics->OnReadThrottled(t->stream_uid, t->stream_name, t->shard_index);
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
  if (ctx.metrics) {
    uint64_t data_bytes = 0;
    for (const auto& rec : r->records) data_bytes += rec.data.size();
    ctx.metrics->OnGetRecords(t->stream_uid, t->stream_name, t->shard_index, r->records.size(),
                              data_bytes, r->millis_behind_latest, MonotonicNanos() - start_ns);
  }
  std::string next_iterator;
  if (!r->shard_end) {
    IteratorToken next = *t;
    next.offset = r->next_offset;
    next.issued_ms = now;
    next_iterator = ctx.tokens.EncodeIterator(next);
  }
  if (RequestIsCbor(call)) {
    // Straight to CBOR: the records' bytes are copied once, with no base64 and no JSON
    // tree in between (up to 10 MB per answer).
    std::string out;
    aws::CborAppendHead(&out, 5, 3);
    AppendRecordsCbor(&out, *r, t->stream_uid, t->shard_index);
    if (!r->shard_end) {
      aws::CborAppendText(&out, "NextShardIterator");
      aws::CborAppendText(&out, next_iterator);
    } else {
      aws::CborAppendText(&out, "ChildShards");
      out += aws::JsonResponseToCbor(ChildShardsJson(r->children).dump(), KinesisApi::CborModel());
    }
    aws::CborAppendText(&out, "MillisBehindLatest");
    aws::CborAppendInt(&out, r->millis_behind_latest);
    return call.ReplyCbor(std::move(out));
  }
  std::string out = "{";
  AppendRecordsJson(&out, *r, t->stream_uid, t->shard_index);
  if (!r->shard_end) {
    out += R"(,"NextShardIterator":")" + next_iterator + "\"";
  } else {
    out += R"(,"ChildShards":)" + ChildShardsJson(r->children).dump();
  }
  out += R"(,"MillisBehindLatest":)" + std::to_string(r->millis_behind_latest) + "}";
  call.ReplyRaw(std::move(out));
}

}  // namespace icestream::kinesis
