// CBOR ⇄ JSON 1.1 bridge for AWS JSON-RPC services (RFC 8949 encoding, aws-api.md §A.3).
#include "aws/cbor.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/base64.h"
#include "common/utf8.h"

namespace icestream::aws {

using nlohmann::json;

// ---- writers ----------------------------------------------------------------------

void CborAppendHead(std::string* out, int major, uint64_t n) {
  auto mt = static_cast<uint8_t>(major << 5);
  char buf[9];
  size_t len;
  if (n < 24) {
    buf[0] = static_cast<char>(mt | n);
    len = 1;
  } else if (n <= 0xff) {
    buf[0] = static_cast<char>(mt | 24);
    buf[1] = static_cast<char>(n);
    len = 2;
  } else if (n <= 0xffff) {
    buf[0] = static_cast<char>(mt | 25);
    buf[1] = static_cast<char>(n >> 8);
    buf[2] = static_cast<char>(n);
    len = 3;
  } else if (n <= 0xffffffffu) {
    buf[0] = static_cast<char>(mt | 26);
    for (int i = 0; i < 4; ++i) buf[1 + i] = static_cast<char>(n >> (24 - 8 * i));
    len = 5;
  } else {
    buf[0] = static_cast<char>(mt | 27);
    for (int i = 0; i < 8; ++i) buf[1 + i] = static_cast<char>(n >> (56 - 8 * i));
    len = 9;
  }
  out->append(buf, len);
}

void CborAppendInt(std::string* out, int64_t v) {
  if (v >= 0) {
    CborAppendHead(out, 0, static_cast<uint64_t>(v));
  } else {
    CborAppendHead(out, 1, static_cast<uint64_t>(-(v + 1)));
  }
}

void CborAppendText(std::string* out, std::string_view s) {
  CborAppendHead(out, 3, s.size());
  out->append(s);
}

void CborAppendBytes(std::string* out, std::string_view b) {
  CborAppendHead(out, 2, b.size());
  out->append(b);
}

void CborAppendEpochMillis(std::string* out, int64_t ms) {
  out->push_back(static_cast<char>(0xc1));  // tag 1
  CborAppendInt(out, ms);
}

// ---- reader -----------------------------------------------------------------------

bool CborReader::ReadArgument(int ai, uint64_t* arg) {
  if (ai < 24) {
    *arg = static_cast<uint64_t>(ai);
    return true;
  }
  if (ai > 27) return Fail();  // 28..30 are reserved; 31 is the caller's
  size_t len = size_t{1} << (ai - 24);
  if (in_.size() - pos_ < len) return Fail();
  uint64_t v = 0;
  for (size_t i = 0; i < len; ++i) v = (v << 8) | static_cast<uint8_t>(in_[pos_ + i]);
  pos_ += len;
  *arg = v;
  return true;
}

bool CborReader::Next(Item* item) {
  if (failed_) return false;
  bool tagged = false;
  for (;;) {
    if (pos_ >= in_.size()) return Fail();
    auto ib = static_cast<uint8_t>(in_[pos_]);
    if (ib == 0xff) return tagged ? Fail() : false;  // a break; a tag needs its item
    ++pos_;
    if ((ib >> 5) != 6 && ++items_ > item_limit_) return Fail();
    int major = ib >> 5;
    int ai = ib & 31;
    if (major == 7) {
      *item = Item();
      switch (ai) {
        case 20:
          item->kind = Kind::kFalse;
          return true;
        case 21:
          item->kind = Kind::kTrue;
          return true;
        case 22:
          item->kind = Kind::kNull;
          return true;
        case 24:
          if (pos_ >= in_.size()) return Fail();
          ++pos_;
          item->kind = Kind::kOther;
          return true;
        case 25: {
          uint64_t h;
          if (!ReadArgument(25, &h)) return false;
          // RFC 8949 Appendix D.
          int exp = static_cast<int>((h >> 10) & 0x1f);
          auto mant = static_cast<double>(h & 0x3ff);
          double v = exp == 0    ? std::ldexp(mant, -24)
                     : exp == 31 ? (mant == 0 ? INFINITY : NAN)
                                 : std::ldexp(mant + 1024, exp - 25);
          item->kind = Kind::kFloat;
          item->number = (h & 0x8000) ? -v : v;
          return true;
        }
        case 26: {
          uint64_t bits;
          if (!ReadArgument(26, &bits)) return false;
          auto b32 = static_cast<uint32_t>(bits);
          float f;
          std::memcpy(&f, &b32, 4);
          item->kind = Kind::kFloat;
          item->number = f;
          return true;
        }
        case 27: {
          uint64_t bits;
          if (!ReadArgument(27, &bits)) return false;
          double d;
          std::memcpy(&d, &bits, 8);
          item->kind = Kind::kFloat;
          item->number = d;
          return true;
        }
        default:
          if (ai > 27) return Fail();
          item->kind = Kind::kOther;  // undefined (23) and simple values 0..19
          return true;
      }
    }
    uint64_t arg = 0;
    bool indefinite = ai == 31;
    if (indefinite) {
      if (major == 0 || major == 1 || major == 6) return Fail();
    } else if (!ReadArgument(ai, &arg)) {
      return false;
    }
    if (major == 6) {  // a tag: ignored, the next item is the value
      tagged = true;
      continue;
    }
    const uint64_t left = in_.size() - pos_;
    item->indefinite = indefinite;
    item->length = arg;
    item->number = 0;
    switch (major) {
      case 0:
        item->kind = Kind::kUnsigned;
        return true;
      case 1:
        item->kind = Kind::kNegative;
        return true;
      case 2:
      case 3:
        item->kind = major == 2 ? Kind::kBytes : Kind::kText;
        if (!indefinite && arg > left) return Fail();
        return true;
      case 4:
        item->kind = Kind::kArray;
        // Every item takes at least one byte: longer claims are truncated input.
        if (!indefinite && arg > left) return Fail();
        return true;
      default:
        item->kind = Kind::kMap;
        if (!indefinite && arg > left / 2) return Fail();
        return true;
    }
  }
}

bool CborReader::TakeBreak() {
  if (failed_ || pos_ >= in_.size() || static_cast<uint8_t>(in_[pos_]) != 0xff) return false;
  ++pos_;
  return true;
}

bool CborReader::StringBody(const Item& item, std::string* scratch, std::string_view* out) {
  if (failed_) return false;
  if (!item.indefinite) {
    *out = in_.substr(pos_, item.length);  // Next() checked the length
    pos_ += item.length;
    return true;
  }
  // Chunks: definite strings of the same major type, until a break (RFC 8949 §3.2.3).
  const int major = item.kind == Kind::kBytes ? 2 : 3;
  scratch->clear();
  while (!TakeBreak()) {
    if (pos_ >= in_.size()) return Fail();
    auto ib = static_cast<uint8_t>(in_[pos_++]);
    if ((ib >> 5) != major || (ib & 31) == 31) return Fail();
    uint64_t len;
    if (!ReadArgument(ib & 31, &len)) return false;
    if (len > in_.size() - pos_) return Fail();
    scratch->append(in_.data() + pos_, len);
    pos_ += len;
  }
  *out = *scratch;
  return true;
}

bool CborReader::SkipBody(const Item& item, size_t max_depth) {
  std::string scratch;
  std::string_view ignored;
  if (item.kind == Kind::kBytes || item.kind == Kind::kText) {
    if (!item.indefinite) return StringBody(item, &scratch, &ignored);
    // Chunks are walked without joining them.
    const int major = item.kind == Kind::kBytes ? 2 : 3;
    while (!TakeBreak()) {
      if (pos_ >= in_.size()) return Fail();
      auto ib = static_cast<uint8_t>(in_[pos_++]);
      if ((ib >> 5) != major || (ib & 31) == 31) return Fail();
      uint64_t len;
      if (!ReadArgument(ib & 31, &len)) return false;
      if (len > in_.size() - pos_) return Fail();
      pos_ += len;
    }
    return true;
  }
  if (item.kind != Kind::kArray && item.kind != Kind::kMap) return !failed_;
  struct Frame {
    uint64_t remaining;  // definite: items still expected
    bool indefinite;
    bool map;
    uint64_t count;  // indefinite: items seen (a map's must be even)
  };
  if (max_depth < 1) return Fail();
  std::vector<Frame> stack;
  auto push = [&](const Item& c) {
    bool map = c.kind == Kind::kMap;
    stack.push_back({map ? c.length * 2 : c.length, c.indefinite, map, 0});
  };
  push(item);
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (!top.indefinite && top.remaining == 0) {
      stack.pop_back();
      continue;
    }
    if (top.indefinite && TakeBreak()) {
      if (top.map && top.count % 2 != 0) return Fail();  // a key without its value
      stack.pop_back();
      continue;
    }
    Item c;
    if (!Next(&c)) return Fail();  // truncated, or a break where an item belongs
    if (top.indefinite) {
      ++top.count;
    } else {
      --top.remaining;
    }
    if (c.kind == Kind::kBytes || c.kind == Kind::kText) {
      if (!SkipBody(c, 0)) return false;
    } else if (c.kind == Kind::kArray || c.kind == Kind::kMap) {
      if (stack.size() >= max_depth) return Fail();
      push(c);
    }
  }
  return true;
}

namespace {

// Epoch values at or above this magnitude are milliseconds (see cbor.h).
constexpr double kMillisThreshold = 1e11;

ApiError Bad(std::string message) { return SerializationError(std::move(message)); }

// A JSON string literal, escaped as nlohmann::json::dump() does (so that the handlers see
// the text they always saw): quotes, backslashes and control characters; UTF-8 as is.
void AppendJsonString(std::string* out, std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  out->push_back('"');
  size_t run = 0;  // start of the bytes not yet copied
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default: {
        char u[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out->append(u, 6);
      }
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

// A finite double as nlohmann::json::dump() writes floats: the shortest text that reads
// back the same, with ".0" when it would otherwise read as an integer.
void AppendDouble(std::string* out, double d) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  std::string_view text(buf, ec == std::errc() ? static_cast<size_t>(end - buf) : 0);
  out->append(text);
  if (text.find_first_of(".eE") == std::string_view::npos) out->append(".0");
}

__extension__ typedef unsigned __int128 u128;

void AppendUnsigned(std::string* out, u128 v) {
  char buf[40];
  size_t n = 0;
  do {
    buf[n++] = static_cast<char>('0' + static_cast<int>(v % 10));
    v /= 10;
  } while (v != 0);
  while (n > 0) out->push_back(buf[--n]);
}

// One streaming pass: CBOR items in, JSON text out, the model's blob and timestamp
// members converted on the way. The input has been checked for well-formedness and
// depth first, so the frames never exceed kMaxCborNesting.
class Transcoder {
 public:
  static ApiError Malformed() {
    return Bad("Request body is not a well-formed CBOR data item (or nests more than 64 levels).");
  }
  // `discard`: only check (what is written is dropped as it goes).
  Transcoder(CborReader* reader, const CborModel& model, std::string* out, bool discard = false)
      : reader_(*reader), model_(model), out_(out), discard_(discard) {
    frames_.reserve(kMaxCborNesting + 2);  // member views point into frames: never moved
  }

  // Writes the item whose head `first` was just read, and everything inside it.
  std::optional<ApiError> Item(const CborReader::Item& first, std::string_view member) {
    using Kind = CborReader::Kind;
    if (auto e = Value(first, member)) return e;
    while (!frames_.empty()) {
      if (discard_ && out_->size() > 4096) out_->clear();
      Frame& f = frames_.back();
      if (f.indefinite ? reader_.TakeBreak() : f.remaining == 0) {
        out_->push_back(f.map ? '}' : ']');
        frames_.pop_back();
        if (!frames_.empty()) ValueDone(&frames_.back());
        continue;
      }
      if (f.map && f.want_key) {
        CborReader::Item k;
        if (!reader_.Next(&k)) return Malformed();
        if (k.kind != Kind::kText) return Bad("Request body is not valid CBOR for this service.");
        std::string_view key;
        if (!reader_.StringBody(k, &f.key_scratch, &key)) return Malformed();
        if (!IsValidUtf8(key)) return Bad("A CBOR text string is not valid UTF-8.");
        if (f.count != 0) out_->push_back(',');
        AppendJsonString(out_, key);
        out_->push_back(':');
        f.member = key;
        f.want_key = false;
        continue;
      }
      if (!f.map && f.count != 0) out_->push_back(',');
      CborReader::Item v;
      if (!reader_.Next(&v)) return Malformed();
      size_t depth = frames_.size();
      std::string_view member_of_value = f.member;
      if (auto e = Value(v, member_of_value)) return e;
      if (frames_.size() == depth) ValueDone(&frames_.back());  // a scalar: done already
    }
    return std::nullopt;
  }

 private:
  struct Frame {
    bool map = false;
    bool indefinite = false;
    uint64_t remaining = 0;  // definite: items (arrays) or pairs (maps) still expected
    bool want_key = true;
    uint64_t count = 0;       // values written
    std::string_view member;  // maps: the current key; arrays: the member they belong to
    std::string key_scratch;  // a chunked key
  };

  static void ValueDone(Frame* f) {
    ++f->count;
    if (!f->indefinite) --f->remaining;
    if (f->map) f->want_key = true;
  }

  std::optional<ApiError> Push(const CborReader::Item& item, std::string_view member) {
    // The callers checked the depth already; this keeps the frames from ever moving.
    if (frames_.size() >= kMaxCborNesting + 1) return Malformed();
    Frame f;
    f.map = item.kind == CborReader::Kind::kMap;
    f.indefinite = item.indefinite;
    f.remaining = item.length;
    f.member = member;
    out_->push_back(f.map ? '{' : '[');
    frames_.push_back(std::move(f));
    return std::nullopt;
  }

  // Writes one value (or opens its container) of member `member` ("" at the top).
  std::optional<ApiError> Value(const CborReader::Item& item, std::string_view member) {
    using Kind = CborReader::Kind;
    if (item.kind == Kind::kNull) {
      out_->append("null");
      return std::nullopt;
    }
    if (item.kind == Kind::kArray) return Push(item, member);  // lists of blobs keep their member
    const bool blob = !member.empty() && model_.blobs.find(member) != model_.blobs.end();
    const bool timestamp =
        !member.empty() && model_.timestamps.find(member) != model_.timestamps.end();
    if (blob) {
      if (item.kind != Kind::kBytes) {
        return Bad(std::string("Member '") + std::string(member) +
                   "' is a blob: it must be a CBOR byte string.");
      }
      std::string_view bytes;
      if (!reader_.StringBody(item, &scratch_, &bytes)) return Malformed();
      out_->push_back('"');
      base64::EncodeAppend(bytes.data(), bytes.size(), out_);
      out_->push_back('"');
      return std::nullopt;
    }
    if (timestamp) {
      double d;
      switch (item.kind) {
        case Kind::kUnsigned:
          d = static_cast<double>(item.length);
          break;
        case Kind::kNegative:
          d = -1.0 - static_cast<double>(item.length);
          break;
        case Kind::kFloat:
          d = item.number;
          break;
        default:
          return Bad(std::string("Member '") + std::string(member) +
                     "' is a timestamp: it must be a number (CBOR tag 1, epoch milliseconds).");
      }
      if (!std::isfinite(d))
        return Bad("Timestamp member '" + std::string(member) + "' is not finite.");
      if (std::fabs(d) >= kMillisThreshold) d /= 1000.0;
      AppendDouble(out_, d);
      return std::nullopt;
    }
    switch (item.kind) {
      case Kind::kBytes:
        return Bad(std::string("A CBOR byte string is only allowed for blob members; '") +
                   std::string(member) + "' is not one.");
      case Kind::kMap:
        return Push(item, member);
      case Kind::kText: {
        std::string_view text;
        if (!reader_.StringBody(item, &scratch_, &text)) return Malformed();
        if (!IsValidUtf8(text)) return Bad("A CBOR text string is not valid UTF-8.");
        AppendJsonString(out_, text);
        return std::nullopt;
      }
      case Kind::kUnsigned:
        AppendUnsigned(out_, item.length);
        return std::nullopt;
      case Kind::kNegative:
        out_->push_back('-');
        AppendUnsigned(out_, static_cast<u128>(item.length) + 1);
        return std::nullopt;
      case Kind::kFalse:
        out_->append("false");
        return std::nullopt;
      case Kind::kTrue:
        out_->append("true");
        return std::nullopt;
      case Kind::kFloat:
        if (!std::isfinite(item.number)) return Bad("Numbers must be finite.");
        AppendDouble(out_, item.number);
        return std::nullopt;
      default:
        return Bad("Request body is not valid CBOR for this service.");
    }
  }

  CborReader& reader_;
  const CborModel& model_;
  std::string* out_;
  bool discard_;
  std::vector<Frame> frames_;
  std::string scratch_;  // chunked strings
};

void Encode(const json& v, std::string_view member, const CborModel& model, std::string* out) {
  bool timestamp = !member.empty() && model.timestamps.count(member) > 0;
  switch (v.type()) {
    case json::value_t::null:
    case json::value_t::discarded:
      out->push_back(static_cast<char>(0xf6));
      return;
    case json::value_t::boolean:
      out->push_back(static_cast<char>(v.get<bool>() ? 0xf5 : 0xf4));
      return;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: {
      if (timestamp) {
        out->push_back(static_cast<char>(0xc1));  // tag 1, epoch milliseconds (cbor.h)
        CborAppendInt(out, static_cast<int64_t>(std::llround(v.get<double>() * 1000.0)));
        return;
      }
      if (v.is_number_unsigned()) return CborAppendHead(out, 0, v.get<uint64_t>());
      if (v.is_number_integer()) return CborAppendInt(out, v.get<int64_t>());
      double d = v.get<double>();
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof bits);
      out->push_back(static_cast<char>(0xfb));
      for (int s = 56; s >= 0; s -= 8) out->push_back(static_cast<char>((bits >> s) & 0xff));
      return;
    }
    case json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      if (!member.empty() && model.blobs.count(member)) {
        if (auto bytes = base64::Decode(s)) {
          CborAppendHead(out, 2, bytes->size());
          out->append(*bytes);
          return;
        }
      }
      return CborAppendText(out, s);
    }
    case json::value_t::binary: {
      const auto& b = v.get_binary();
      CborAppendHead(out, 2, b.size());
      out->append(reinterpret_cast<const char*>(b.data()), b.size());
      return;
    }
    case json::value_t::array:
      CborAppendHead(out, 4, v.size());
      for (const auto& e : v) Encode(e, member, model, out);
      return;
    case json::value_t::object:
      CborAppendHead(out, 5, v.size());
      for (auto it = v.begin(); it != v.end(); ++it) {
        CborAppendText(out, it.key());
        Encode(it.value(), it.key(), model, out);
      }
      return;
  }
}

}  // namespace

std::optional<ApiError> CborCheckRequest(std::string_view cbor) {
  CborReader check(cbor);
  check.LimitItems(kMaxCborItems);
  CborReader::Item root;
  if (!check.Next(&root) || !check.SkipBody(root, kMaxCborNesting) || !check.at_end()) {
    if (check.too_many_items()) {
      return Bad("Request body has more than " + std::to_string(kMaxCborItems) +
                 " CBOR data items.");
    }
    return Bad("Request body is not a well-formed CBOR data item (or nests more than 64 levels).");
  }
  return std::nullopt;
}

std::optional<ApiError> CborRequestToJson(std::string_view cbor, const CborModel& model,
                                          std::string* json_out) {
  // Well-formedness, depth and size first (a pass over the heads only), so that a
  // truncated or too deep body is reported as such whatever comes before the damage.
  if (auto e = CborCheckRequest(cbor)) return e;
  json_out->clear();
  // Blobs grow by 4/3 in base64; most of a request's bytes are blobs.
  json_out->reserve(cbor.size() + cbor.size() / 3 + 64);
  CborReader reader(cbor);
  CborReader::Item root;
  if (!reader.Next(&root)) return Transcoder::Malformed();
  if (root.kind != CborReader::Kind::kMap) return Bad("Expected a CBOR map.");
  if (auto e = Transcoder(&reader, model, json_out).Item(root, {})) return e;
  if (!reader.at_end()) return Transcoder::Malformed();
  return std::nullopt;
}

std::optional<ApiError> CborCheckValue(CborReader* reader, const CborReader::Item& item,
                                       std::string_view member, const CborModel& model) {
  std::string sink;
  return Transcoder(reader, model, &sink, /*discard=*/true).Item(item, member);
}

http::Response CborResponse(std::string body, std::string_view request_id) {
  http::Response r;
  r.body = std::move(body);
  r.SetHeader("Content-Type", std::string(kCborContentType));
  r.SetHeader("x-amzn-RequestId", std::string(request_id));
  return r;
}

std::string JsonResponseToCbor(std::string_view text, const CborModel& model) {
  if (text.empty()) return "";
  json v = json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::string out;
  if (v.is_discarded()) {
    CborAppendText(&out, text);
    return out;
  }
  out.reserve(text.size());
  Encode(v, "", model, &out);
  return out;
}

}  // namespace icestream::aws
