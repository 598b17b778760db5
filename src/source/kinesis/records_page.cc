// Decoding GetRecords answers (JSON 1.1 and CBOR).
#include "source/kinesis/records_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "aws/cbor.h"
#include "common/base64.h"
#include "stream/sequence_number.h"

namespace icestream::source {

using nlohmann::json;

uint64_t OrdinalOf(std::string_view seq) {
  if (auto sn = stream::SequenceNumber::Parse(seq); sn && sn->position > 0) return sn->position - 1;
  std::string_view tail = seq.size() > 18 ? seq.substr(seq.size() - 18) : seq;
  uint64_t v = 0;
  for (char c : tail) v = v * 10 + static_cast<uint64_t>(c >= '0' && c <= '9' ? c - '0' : 0);
  return v;
}

int64_t TimestampMs(double v) {
  return static_cast<int64_t>(std::llround(std::fabs(v) >= 1e11 ? v : v * 1000.0));
}

namespace {

// Decodes a JSON GetRecords answer's Records into one Answer (two passes: sizes, then views).
Result<std::shared_ptr<Answer>> Decode(const json& records) {
  auto a = std::make_shared<Answer>();
  size_t total = 0;
  for (const auto& r : records) {
    const auto& data = r.at("Data").get_ref<const std::string&>();
    total += r.at("SequenceNumber").get_ref<const std::string&>().size() +
             r.at("PartitionKey").get_ref<const std::string&>().size() + data.size();
  }
  a->bytes.reserve(total);
  struct Span {
    size_t seq, seq_n, pk, pk_n, data, data_n;
    int64_t arrival;
  };
  std::vector<Span> spans;
  spans.reserve(records.size());
  for (const auto& r : records) {
    Span s{};
    const auto& seq = r.at("SequenceNumber").get_ref<const std::string&>();
    const auto& pk = r.at("PartitionKey").get_ref<const std::string&>();
    const auto& data = r.at("Data").get_ref<const std::string&>();
    s.seq = a->bytes.size();
    s.seq_n = seq.size();
    a->bytes += seq;
    s.pk = a->bytes.size();
    s.pk_n = pk.size();
    a->bytes += pk;
    auto decoded = base64::Decode(data);
    if (!decoded) return Unavailable("GetRecords: a record's Data is not base64");
    s.data = a->bytes.size();
    s.data_n = decoded->size();
    a->bytes += *decoded;
    a->data_bytes += decoded->size();
    const auto& ts = r.at("ApproximateArrivalTimestamp");
    s.arrival = ts.is_number() ? TimestampMs(ts.get<double>()) : 0;
    spans.push_back(s);
  }
  const char* base = a->bytes.data();
  for (const auto& s : spans) {
    std::string_view seq(base + s.seq, s.seq_n);
    a->records.push_back({seq, OrdinalOf(seq), s.arrival, std::string_view(base + s.pk, s.pk_n),
                          std::string_view(base + s.data, s.data_n)});
  }
  return a;
}

}  // namespace

Result<RecordsPage> JsonPage(const json& r) {
  RecordsPage page;
  auto records = r.find("Records");
  ASSIGN_OR_RETURN(page.answer,
                   Decode(records != r.end() && records->is_array() ? *records : json::array()));
  auto next = r.find("NextShardIterator");
  page.end = next == r.end() || !next->is_string();
  if (!page.end) page.next = next->get<std::string>();
  auto behind = r.find("MillisBehindLatest");
  if (behind != r.end() && behind->is_number()) page.behind_ms = behind->get<int64_t>();
  return page;
}

// Reads a CBOR GetRecords answer in place (aws-api.md §A.3): one pass with a cursor, no
// tree, no base64; the records' views point into the body itself. Members other than
// Records, NextShardIterator and MillisBehindLatest (ChildShards, …) and record members
// other than the four read here (EncryptionType, ExplicitHashKey, …) are skipped.
Result<RecordsPage> CborPage(std::string body) {
  using Kind = aws::CborReader::Kind;
  RecordsPage page;
  page.end = true;
  auto a = std::make_shared<Answer>();
  a->bytes = std::move(body);
  aws::CborReader r(a->bytes);
  aws::CborReader::Item top;
  // A string member as a view: into the body, or (indefinite length) into `more`.
  auto string_of = [&](const aws::CborReader::Item& it, std::string_view* out) {
    if (!it.indefinite) return r.StringBody(it, nullptr, out);
    std::string joined;
    if (!r.StringBody(it, &joined, out)) return false;
    *out = a->more.emplace_back(std::move(joined));
    return true;
  };
  // Calls `member(key)` for each pair of a map whose head was just read; `member` reads
  // the value.
  auto each_member = [&](const aws::CborReader::Item& map, auto&& member) {
    for (uint64_t i = 0; map.indefinite || i < map.length; ++i) {
      if (map.indefinite && r.TakeBreak()) return true;
      aws::CborReader::Item k;
      std::string_view key;
      if (!r.Next(&k) || k.kind != Kind::kText || !string_of(k, &key)) return false;
      if (!member(key)) return false;
    }
    return true;
  };
  auto skip_value = [&] {
    aws::CborReader::Item v;
    return r.Next(&v) && r.SkipBody(v, aws::kMaxCborNesting);
  };
  auto number_of = [](const aws::CborReader::Item& v, double* out) {
    if (v.kind == Kind::kUnsigned)
      *out = static_cast<double>(v.length);
    else if (v.kind == Kind::kFloat)
      *out = v.number;
    else
      return false;
    return true;
  };
  auto record = [&]() {
    aws::CborReader::Item m;
    if (!r.Next(&m) || m.kind != Kind::kMap) return false;
    std::string_view seq, pk, data;
    bool have_seq = false, have_data = false;
    int64_t arrival = 0;
    bool ok = each_member(m, [&](std::string_view key) {
      aws::CborReader::Item v;
      if (key == "SequenceNumber" || key == "PartitionKey") {
        if (!r.Next(&v) || v.kind != Kind::kText) return false;
        have_seq |= key == "SequenceNumber";
        return string_of(v, key == "SequenceNumber" ? &seq : &pk);
      }
      if (key == "Data") {
        if (!r.Next(&v)) return false;
        have_data = true;
        if (v.kind == Kind::kBytes) return string_of(v, &data);
        // kinesalite answers CBOR with the base64 text its JSON would carry.
        std::string_view text;
        if (v.kind != Kind::kText || !string_of(v, &text)) return false;
        auto decoded = base64::Decode(text);
        if (!decoded) return false;
        data = a->more.emplace_back(std::move(*decoded));
        return true;
      }
      if (key == "ApproximateArrivalTimestamp") {
        double t = 0;
        if (!r.Next(&v) || !number_of(v, &t)) return false;
        arrival = TimestampMs(t);
        return true;
      }
      return skip_value();
    });
    if (!ok || !have_seq || !have_data) return false;
    a->records.push_back({seq, OrdinalOf(seq), arrival, pk, data});
    a->data_bytes += data.size();
    return true;
  };
  bool ok = r.Next(&top) && top.kind == Kind::kMap && each_member(top, [&](std::string_view key) {
              aws::CborReader::Item v;
              if (key == "Records") {
                if (!r.Next(&v) || v.kind != Kind::kArray) return false;
                for (uint64_t i = 0; v.indefinite || i < v.length; ++i) {
                  if (v.indefinite && r.TakeBreak()) return true;
                  if (!record()) return false;
                }
                return true;
              }
              if (key == "NextShardIterator") {
                if (!r.Next(&v)) return false;
                if (v.kind == Kind::kNull) return true;
                std::string_view next;
                if (v.kind != Kind::kText || !string_of(v, &next)) return false;
                page.end = false;
                page.next = std::string(next);
                return true;
              }
              if (key == "MillisBehindLatest") {
                double behind = 0;
                if (!r.Next(&v) || !number_of(v, &behind)) return false;
                page.behind_ms = static_cast<int64_t>(behind);
                return true;
              }
              return skip_value();
            });
  if (!ok || r.failed() || !r.at_end()) {
    // Where it stopped, and the bytes there: enough to tell an endpoint's dialect.
    size_t at = r.position();
    std::string near;
    for (size_t i = at > 8 ? at - 8 : 0; i < std::min(a->bytes.size(), at + 16); ++i) {
      near += fmt::format("{:02x}", static_cast<uint8_t>(a->bytes[i]));
    }
    return Unavailable(
        fmt::format("GetRecords: the CBOR answer is not well-formed (at byte {} of {}: …{}…)", at,
                    a->bytes.size(), near));
  }
  page.answer = std::move(a);
  return page;
}

}  // namespace icestream::source
