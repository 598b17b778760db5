// DLQ redrive: the model, its codecs, preparing the worklist and reading it back.
#include "delivery/redrive.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include "common/base64.h"
#include "common/time_format.h"
#include "delivery/position.h"

namespace icestream::delivery {

using nlohmann::json;

std::string_view RedriveStatusName(RedriveStatus s) {
  switch (s) {
    case RedriveStatus::kPreparing:
      return "PREPARING";
    case RedriveStatus::kInProgress:
      return "IN_PROGRESS";
    case RedriveStatus::kCompleted:
      return "COMPLETED";
    case RedriveStatus::kFailed:
      return "FAILED";
  }
  return "FAILED";
}

namespace {

RedriveStatus ParseRedriveStatus(std::string_view s) {
  if (s == "PREPARING") return RedriveStatus::kPreparing;
  if (s == "IN_PROGRESS") return RedriveStatus::kInProgress;
  if (s == "COMPLETED") return RedriveStatus::kCompleted;
  return RedriveStatus::kFailed;
}

double Seconds(int64_t ms) { return static_cast<double>(ms) / 1000.0; }

// Splits `body` into its lines (without the '\n'); a last line without one counts too.
std::vector<std::string_view> Lines(std::string_view body) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < body.size()) {
    size_t nl = body.find('\n', start);
    if (nl == std::string_view::npos) nl = body.size();
    out.push_back(body.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

json EntryToJson(const RedriveEntry& e) {
  json j = {{"object", e.object},
            {"line", e.line},
            {"shardId", e.shard_id},
            {"sequenceNumber", e.sequence_number}};
  if (e.sub_sequence) j["subSequenceNumber"] = *e.sub_sequence;
  j["approximateArrivalTimestamp"] = FormatIso8601Ms(e.arrival_ms);
  j["errorCode"] = e.error_code;
  if (e.data) {
    j["data"] = base64::Encode(*e.data);
    j["partitionKey"] = e.partition_key;
  }
  return j;
}

Result<RedriveEntry> EntryFromJson(const json& j) {
  if (!j.is_object()) return Corruption("a worklist entry is not a JSON object");
  RedriveEntry e;
  try {
    e.object = j.at("object");
    e.line = j.at("line");
    e.shard_id = j.at("shardId");
    e.sequence_number = j.at("sequenceNumber");
    if (j.contains("subSequenceNumber")) e.sub_sequence = j["subSequenceNumber"].get<uint32_t>();
    auto at = ParseIso8601Ms(j.at("approximateArrivalTimestamp").get<std::string>());
    if (!at) return Corruption("a worklist entry has no valid approximateArrivalTimestamp");
    e.arrival_ms = *at;
    e.error_code = j.at("errorCode");
    if (j.contains("data")) {
      auto data = base64::Decode(j["data"].get<std::string>());
      if (!data) return Corruption("a worklist entry's data is not base64");
      e.data = std::move(*data);
      e.partition_key = j.value("partitionKey", "");
    }
  } catch (const std::exception& ex) {
    return Corruption(std::string("a worklist entry: ") + ex.what());
  }
  return e;
}

}  // namespace

bool RedriveFilter::Matches(std::string_view error_code, int64_t arrival_ms) const {
  if (!error_codes.empty() && !error_codes.count(std::string(error_code))) return false;
  if (start_ms && arrival_ms < *start_ms) return false;
  if (end_ms && arrival_ms >= *end_ms) return false;
  return true;
}

std::strong_ordering RecordId::operator<=>(const RecordId& o) const {
  if (auto c = shard <=> o.shard; c != 0) return c;
  int s = CompareSequenceNumbers(sequence, o.sequence);
  if (s != 0) return s < 0 ? std::strong_ordering::less : std::strong_ordering::greater;
  // A whole record (no sub-sequence) before the user records of an aggregate.
  if (sub.has_value() != o.sub.has_value()) {
    return sub.has_value() ? std::strong_ordering::greater : std::strong_ordering::less;
  }
  return sub.value_or(0) <=> o.sub.value_or(0);
}

std::string RedriveProgressText(const RedriveProgress& p) {
  return json{{"id", p.id},
              {"next", p.next},
              {"delivered", p.delivered},
              {"failedAgain", p.failed_again},
              {"expired", p.expired}}
      .dump();
}

std::optional<RedriveProgress> ParseRedriveProgress(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  try {
    RedriveProgress p;
    p.id = j.at("id");
    p.next = j.at("next");
    p.delivered = j.at("delivered");
    p.failed_again = j.at("failedAgain");
    p.expired = j.at("expired");
    return p;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

json RedriveStateToJson(const RedriveState& s) {
  json filter = {{"error_codes", s.filter.error_codes}};
  if (s.filter.start_ms) filter["start_ms"] = *s.filter.start_ms;
  if (s.filter.end_ms) filter["end_ms"] = *s.filter.end_ms;
  json j = {{"id", s.id},
            {"filter", filter},
            {"status", RedriveStatusName(s.status)},
            {"status_reason", s.status_reason},
            {"created_ms", s.created_ms},
            {"completed_ms", s.completed_ms},
            {"objects", s.objects},
            {"lines_read", s.lines_read},
            {"lines_skipped", s.lines_skipped},
            {"lines_unreadable", s.lines_unreadable},
            {"total", s.total},
            {"progress", json::parse(RedriveProgressText(s.progress))}};
  if (s.plan) {
    j["plan"] = {{"from", s.plan->from}, {"to", s.plan->to}, {"attempt_ms", s.plan->attempt_ms}};
  }
  return j;
}

Result<RedriveState> RedriveStateFromJson(const json& j) {
  try {
    RedriveState s;
    s.id = j.at("id");
    const json& f = j.at("filter");
    s.filter.error_codes = f.at("error_codes").get<std::set<std::string>>();
    if (f.contains("start_ms")) s.filter.start_ms = f["start_ms"].get<int64_t>();
    if (f.contains("end_ms")) s.filter.end_ms = f["end_ms"].get<int64_t>();
    s.status = ParseRedriveStatus(j.at("status").get<std::string>());
    s.status_reason = j.value("status_reason", "");
    s.created_ms = j.at("created_ms");
    s.completed_ms = j.value("completed_ms", int64_t{0});
    s.objects = j.value("objects", uint64_t{0});
    s.lines_read = j.value("lines_read", uint64_t{0});
    s.lines_skipped = j.value("lines_skipped", uint64_t{0});
    s.lines_unreadable = j.value("lines_unreadable", uint64_t{0});
    s.total = j.value("total", uint64_t{0});
    auto p = ParseRedriveProgress(j.at("progress").dump());
    if (!p) return Corruption("redrive document: bad progress");
    s.progress = *p;
    if (j.contains("plan")) {
      const json& pl = j["plan"];
      s.plan = RedrivePlan{pl.at("from"), pl.at("to"), pl.at("attempt_ms")};
    }
    return s;
  } catch (const std::exception& e) {
    return Corruption(std::string("redrive document: ") + e.what());
  }
}

json RedriveDescription(const RedriveState& s, const ChannelConfig& c) {
  json filter = {{"ErrorCodes", s.filter.error_codes}};
  if (s.filter.start_ms) filter["StartTimestamp"] = Seconds(*s.filter.start_ms);
  if (s.filter.end_ms) filter["EndTimestamp"] = Seconds(*s.filter.end_ms);
  json d = {{"RedriveId", s.id},
            {"ChannelARN", c.arn},
            {"Status", RedriveStatusName(s.status)},
            {"Filter", filter},
            {"CreationTimestamp", Seconds(s.created_ms)},
            {"DLQObjectsRead", s.objects},
            {"LinesRead", s.lines_read},
            {"LinesMatched", s.total},
            {"LinesSkipped", s.lines_skipped},
            {"LinesUnreadable", s.lines_unreadable},
            {"LinesDone", s.progress.next},
            {"RecordsDelivered", s.progress.delivered},
            {"RecordsFailedAgain", s.progress.failed_again},
            {"RecordsExpired", s.progress.expired}};
  if (!s.status_reason.empty()) d["StatusReason"] = s.status_reason;
  if (s.completed_ms > 0) d["CompletionTimestamp"] = Seconds(s.completed_ms);
  auto bucket = objectstore::BucketFromArn(c.dlq.bucket_arn);
  if (bucket.ok()) d["ReportLocation"] = "s3://" + *bucket + "/" + RedrivePrefix(c, s.id);
  return d;
}

std::string RedrivePrefix(const ChannelConfig& c, const std::string& redrive_id) {
  return c.dlq.error_output_prefix + "redrive/" + redrive_id + "/";
}

std::string WorklistKey(const ChannelConfig& c, const std::string& redrive_id, uint64_t part) {
  return RedrivePrefix(c, redrive_id) + fmt::format("worklist-{:06d}.jsonl", part);
}

std::string ReportKey(const ChannelConfig& c, const std::string& redrive_id, uint64_t from) {
  return RedrivePrefix(c, redrive_id) + fmt::format("done-{:010d}.jsonl", from);
}

std::optional<int64_t> ParseIso8601Ms(std::string_view t) {
  // YYYY-MM-DDTHH:MM:SS[.fff...]Z
  auto digits = [&](size_t at, size_t n, int* out) {
    if (at + n > t.size()) return false;
    int v = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      v = v * 10 + (t[i] - '0');
    }
    *out = v;
    return true;
  };
  int y, mo, d, h, mi, s;
  if (!digits(0, 4, &y) || t.size() < 20 || t[4] != '-' || !digits(5, 2, &mo) || t[7] != '-' ||
      !digits(8, 2, &d) || (t[10] != 'T' && t[10] != 't') || !digits(11, 2, &h) || t[13] != ':' ||
      !digits(14, 2, &mi) || t[16] != ':' || !digits(17, 2, &s)) {
    return std::nullopt;
  }
  size_t i = 19;
  int64_t ms = 0;
  if (i < t.size() && t[i] == '.') {
    ++i;
    int n = 0;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      if (n < 3) ms = ms * 10 + (t[i] - '0');
      ++n;
      ++i;
    }
    if (n == 0) return std::nullopt;
    for (; n < 3; ++n) ms *= 10;
  }
  if (i + 1 != t.size() || (t[i] != 'Z' && t[i] != 'z')) return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + ms;
}

Result<DlqBucket> DlqBucketOf(const ChannelConfig& c, objectstore::ObjectStore* store,
                              bool local_buckets) {
  DlqBucket b;
  b.store = store;
  ASSIGN_OR_RETURN(b.bucket, objectstore::BucketFromArn(c.dlq.bucket_arn));
  b.put.content_type = "application/x-ndjson";
  if (!local_buckets) {
    b.read.expected_bucket_owner = c.dlq.expected_bucket_owner;
    b.put.expected_bucket_owner = c.dlq.expected_bucket_owner;
  }
  return b;
}

Status PrepareRedrive(const DlqBucket& dlq, const ChannelConfig& c,
                      const std::vector<RedriveState>& earlier, RedriveState* state) {
  // What earlier redrives processed: those DLQ lines, and those records (a record they
  // processed is never taken again from a line written before them; a line marked as a
  // redrive attempt is new, written after).
  std::set<std::pair<std::string, uint64_t>> done_lines;
  std::set<RecordId> done_records;
  for (const auto& e : earlier) {
    if (e.id == state->id) continue;
    uint64_t upto = e.status == RedriveStatus::kCompleted ? e.total : e.progress.next;
    if (upto == 0) continue;
    auto entries = ReadWorklist(dlq, c, e, 0, upto);
    if (!entries.ok()) {
      return entries.status().WithContext(
          fmt::format("reading the worklist of the earlier redrive {} (it tells which DLQ lines "
                      "were redriven already)",
                      e.id));
    }
    for (auto& en : *entries) {
      done_lines.insert({en.object, en.line});
      done_records.insert(en.id());
    }
  }

  ASSIGN_OR_RETURN(auto objects, dlq.store->List(dlq.bucket, c.dlq.error_output_prefix, dlq.read));
  std::sort(objects.begin(), objects.end(),
            [](const objectstore::ObjectInfo& a, const objectstore::ObjectInfo& b) {
              return a.key < b.key;
            });
  const std::string own_files = c.dlq.error_output_prefix + "redrive/";
  std::vector<RedriveEntry> entries;
  std::set<RecordId> seen;
  state->objects = state->lines_read = state->lines_skipped = state->lines_unreadable = 0;
  for (const auto& o : objects) {
    if (o.key.starts_with(own_files)) continue;
    ASSIGN_OR_RETURN(std::string body, dlq.store->Get(dlq.bucket, o.key, dlq.read));
    ++state->objects;
    auto lines = Lines(body);
    for (uint64_t n = 0; n < lines.size(); ++n) {
      json j = json::parse(lines[n], nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        ++state->lines_unreadable;
        continue;
      }
      if (j.value("channelARN", "") != c.arn) continue;  // another channel's line
      ++state->lines_read;
      RedriveEntry e;
      e.object = o.key;
      e.line = n;
      bool readable = false;
      try {
        e.shard_id = j.at("shardId");
        e.sequence_number = j.at("sequenceNumber");
        e.error_code = j.at("errorCode");
        if (j.contains("subSequenceNumber")) {
          e.sub_sequence = j["subSequenceNumber"].get<uint32_t>();
        }
        if (auto at = ParseIso8601Ms(j.at("approximateArrivalTimestamp").get<std::string>())) {
          e.arrival_ms = *at;
          readable = true;
        }
        if (j.contains("data")) {
          auto data = base64::Decode(j["data"].get<std::string>());
          if (data) {
            e.data = std::move(*data);
            e.partition_key = j.value("partitionKey", "");
          }
        }
      } catch (const std::exception&) {
        readable = false;
      }
      if (!readable || !IsSequenceNumber(e.sequence_number) || e.shard_id.empty()) {
        ++state->lines_unreadable;
        continue;
      }
      if (!state->filter.Matches(e.error_code, e.arrival_ms)) continue;
      RecordId id = e.id();
      const bool attempt_line = j.contains("redriveId");
      if (done_lines.count({e.object, e.line}) || (!attempt_line && done_records.count(id)) ||
          seen.count(id)) {
        ++state->lines_skipped;
        continue;
      }
      seen.insert(id);
      entries.push_back(std::move(e));
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const RedriveEntry& a, const RedriveEntry& b) { return a.id() < b.id(); });
  for (uint64_t part = 0; part * kWorklistPartEntries < entries.size(); ++part) {
    std::string text;
    uint64_t end = std::min<uint64_t>(entries.size(), (part + 1) * kWorklistPartEntries);
    for (uint64_t i = part * kWorklistPartEntries; i < end; ++i) {
      text += EntryToJson(entries[i]).dump(-1, ' ', false, json::error_handler_t::replace);
      text += '\n';
    }
    RETURN_IF_ERROR(dlq.store->Put(dlq.bucket, WorklistKey(c, state->id, part), text, dlq.put));
  }
  state->total = entries.size();
  return Status::OK();
}

Result<std::vector<RedriveEntry>> ReadWorklist(const DlqBucket& dlq, const ChannelConfig& c,
                                               const RedriveState& state, uint64_t from,
                                               uint64_t to) {
  std::vector<RedriveEntry> out;
  to = std::min(to, state.total);
  if (from >= to) return out;
  out.reserve(to - from);
  for (uint64_t part = from / kWorklistPartEntries; part * kWorklistPartEntries < to; ++part) {
    std::string key = WorklistKey(c, state.id, part);
    auto body = dlq.store->Get(dlq.bucket, key, dlq.read);
    if (!body.ok()) {
      if (body.status().code() == StatusCode::kNotFound) {
        return NotFound(fmt::format("the redrive's worklist {} is gone", key));
      }
      return body.status();
    }
    auto lines = Lines(*body);
    const uint64_t first = part * kWorklistPartEntries;
    for (uint64_t i = std::max(from, first); i < to && i - first < lines.size(); ++i) {
      json j = json::parse(lines[i - first], nullptr, false);
      auto e = EntryFromJson(j);
      if (!e.ok()) return e.status().WithContext(key);
      out.push_back(std::move(*e));
    }
    if (first + lines.size() < std::min(to, first + kWorklistPartEntries)) {
      return Corruption(fmt::format("the redrive's worklist {} is shorter than written", key));
    }
  }
  return out;
}

RedriveBatchOutcome RedriveReport(
    const RedriveSpan& span, const std::set<uint64_t>& missing,
    const std::map<uint64_t, std::pair<std::string, std::string>>& rejected) {
  RedriveBatchOutcome out;
  out.after = span.before;
  out.after.id = span.id;
  out.after.next = span.to;
  for (uint64_t i = span.from; i < span.to; ++i) {
    const RedriveEntry& e = span.entries[i - span.from];
    json j = {{"object", e.object},
              {"line", e.line},
              {"shardId", e.shard_id},
              {"sequenceNumber", e.sequence_number}};
    if (e.sub_sequence) j["subSequenceNumber"] = *e.sub_sequence;
    if (missing.count(i)) {
      j["outcome"] = "EXPIRED";
      ++out.after.expired;
    } else if (auto r = rejected.find(i); r != rejected.end()) {
      j["outcome"] = "FAILED_AGAIN";
      j["errorCode"] = r->second.first;
      j["errorMessage"] = r->second.second;
      ++out.after.failed_again;
    } else {
      j["outcome"] = "DELIVERED";
      ++out.after.delivered;
    }
    out.report += j.dump(-1, ' ', false, json::error_handler_t::replace);
    out.report += '\n';
  }
  return out;
}

}  // namespace icestream::delivery
