// CBOR ⇄ JSON 1.1 bridge for AWS JSON-RPC services (RFC 8949 encoding, aws-api.md §A.3).
#include "aws/cbor.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/base64.h"

namespace icestream::aws {

using nlohmann::json;

namespace {

// Epoch values at or above this magnitude are milliseconds (see cbor.h).
constexpr double kMillisThreshold = 1e11;

// Walks the item structure without building anything, so that nesting depth and
// truncation are refused before nlohmann's recursive reader sees the bytes (its CBOR
// reader recurses once per nesting level). Writes the input without its tag heads to
// *untagged: nlohmann refuses tags 0-5 (tag 1 included), and a tag changes no member's
// meaning here (the model says which members are timestamps). Returns false on
// malformed input.
bool ScanStructure(std::string_view in, size_t max_depth, std::string* untagged) {
  struct Frame {
    uint64_t remaining;  // items still expected (definite length)
    bool indefinite;
    int chunk_major;  // indefinite string: the major type of its chunks; else -1
  };
  std::vector<Frame> stack;
  stack.push_back({1, false, -1});  // the root item
  size_t pos = 0;
  bool tagged = false;
  const size_t n = in.size();
  auto byte = [&](size_t i) { return static_cast<uint8_t>(in[i]); };
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (!top.indefinite && top.remaining == 0) {
      stack.pop_back();
      continue;
    }
    if (pos >= n) return false;
    size_t head = pos;
    uint8_t ib = byte(pos++);
    if (ib == 0xff) {  // "break": ends the innermost indefinite-length item
      if (!top.indefinite || stack.size() == 1 || tagged) return false;
      untagged->push_back(static_cast<char>(ib));
      stack.pop_back();
      continue;
    }
    int major = ib >> 5;
    int ai = ib & 31;
    if (top.chunk_major >= 0 && (major != top.chunk_major || ai == 31)) return false;
    uint64_t arg = 0;
    if (ai < 24) {
      arg = static_cast<uint64_t>(ai);
    } else if (ai >= 24 && ai <= 27) {
      size_t len = size_t{1} << (ai - 24);
      if (n - pos < len) return false;
      for (size_t i = 0; i < len; ++i) arg = (arg << 8) | byte(pos + i);
      pos += len;
    } else if (ai != 31) {
      return false;  // 28..30 are reserved
    }
    bool indefinite = ai == 31;
    if (indefinite && (major == 0 || major == 1 || major == 6 || major == 7)) return false;
    // A tag wraps the next item: it is not an item of its own.
    if (major != 6 && !top.indefinite) --top.remaining;
    tagged = major == 6;  // a tag must be followed by its item
    if (!tagged) untagged->append(in.substr(head, pos - head));
    switch (major) {
      case 0:
      case 1:
      case 6:
      case 7:
        break;
      case 2:
      case 3:
        if (indefinite) {
          if (stack.size() > max_depth) return false;
          stack.push_back({0, true, major});
        } else {
          if (arg > n - pos) return false;
          untagged->append(in.substr(pos, static_cast<size_t>(arg)));
          pos += static_cast<size_t>(arg);
        }
        break;
      case 4:
      case 5: {
        if (stack.size() > max_depth) return false;
        uint64_t items = arg;
        if (!indefinite) {
          // Every item takes at least one byte: longer claims are truncated input.
          if (items > n - pos || (major == 5 && items > (n - pos) / 2)) return false;
          if (major == 5) items *= 2;
        }
        stack.push_back({items, indefinite, -1});
        break;
      }
    }
  }
  return pos == n;
}

ApiError Bad(std::string message) { return SerializationError(std::move(message)); }

std::optional<ApiError> ToJsonModel(json& v, std::string_view member, const CborModel& model,
                                    size_t depth) {
  if (depth > kMaxCborNesting) return Bad("Request nests CBOR too deeply.");
  if (v.is_null()) return std::nullopt;
  bool blob = !member.empty() && model.blobs.count(member) > 0;
  bool timestamp = !member.empty() && model.timestamps.count(member) > 0;
  if (blob && !v.is_array()) {
    if (!v.is_binary()) {
      return Bad(std::string("Member '") + std::string(member) +
                 "' is a blob: it must be a CBOR byte string.");
    }
    const auto& bytes = v.get_binary();
    std::string text;
    base64::EncodeAppend(bytes.data(), bytes.size(), &text);
    v = std::move(text);
    return std::nullopt;
  }
  if (timestamp && !v.is_array()) {
    if (!v.is_number()) {
      return Bad(std::string("Member '") + std::string(member) +
                 "' is a timestamp: it must be a number (CBOR tag 1, epoch milliseconds).");
    }
    double d = v.get<double>();
    if (!std::isfinite(d))
      return Bad("Timestamp member '" + std::string(member) + "' is not finite.");
    if (std::fabs(d) >= kMillisThreshold) d /= 1000.0;
    v = d;
    return std::nullopt;
  }
  if (v.is_binary()) {
    return Bad(std::string("A CBOR byte string is only allowed for blob members; '") +
               std::string(member) + "' is not one.");
  }
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (auto e = ToJsonModel(it.value(), it.key(), model, depth + 1)) return e;
    }
  } else if (v.is_array()) {
    for (auto& elem : v) {
      if (auto e = ToJsonModel(elem, member, model, depth + 1)) return e;
    }
  } else if (v.is_number_float() && !std::isfinite(v.get<double>())) {
    return Bad("Numbers must be finite.");
  }
  return std::nullopt;
}

void WriteHead(std::string* out, int major, uint64_t n) {
  auto mt = static_cast<uint8_t>(major << 5);
  if (n < 24) {
    out->push_back(static_cast<char>(mt | n));
  } else if (n <= 0xff) {
    out->push_back(static_cast<char>(mt | 24));
    out->push_back(static_cast<char>(n));
  } else if (n <= 0xffff) {
    out->push_back(static_cast<char>(mt | 25));
    for (int s = 8; s >= 0; s -= 8) out->push_back(static_cast<char>((n >> s) & 0xff));
  } else if (n <= 0xffffffffu) {
    out->push_back(static_cast<char>(mt | 26));
    for (int s = 24; s >= 0; s -= 8) out->push_back(static_cast<char>((n >> s) & 0xff));
  } else {
    out->push_back(static_cast<char>(mt | 27));
    for (int s = 56; s >= 0; s -= 8) out->push_back(static_cast<char>((n >> s) & 0xff));
  }
}

void WriteInt(std::string* out, int64_t v) {
  if (v >= 0) {
    WriteHead(out, 0, static_cast<uint64_t>(v));
  } else {
    WriteHead(out, 1, static_cast<uint64_t>(-(v + 1)));
  }
}

void WriteText(std::string* out, std::string_view s) {
  WriteHead(out, 3, s.size());
  out->append(s);
}

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
        WriteInt(out, static_cast<int64_t>(std::llround(v.get<double>() * 1000.0)));
        return;
      }
      if (v.is_number_unsigned()) return WriteHead(out, 0, v.get<uint64_t>());
      if (v.is_number_integer()) return WriteInt(out, v.get<int64_t>());
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
          WriteHead(out, 2, bytes->size());
          out->append(*bytes);
          return;
        }
      }
      return WriteText(out, s);
    }
    case json::value_t::binary: {
      const auto& b = v.get_binary();
      WriteHead(out, 2, b.size());
      out->append(reinterpret_cast<const char*>(b.data()), b.size());
      return;
    }
    case json::value_t::array:
      WriteHead(out, 4, v.size());
      for (const auto& e : v) Encode(e, member, model, out);
      return;
    case json::value_t::object:
      WriteHead(out, 5, v.size());
      for (auto it = v.begin(); it != v.end(); ++it) {
        WriteText(out, it.key());
        Encode(it.value(), it.key(), model, out);
      }
      return;
  }
}

}  // namespace

std::optional<ApiError> CborRequestToJson(std::string_view cbor, const CborModel& model,
                                          std::string* json_out) {
  std::string untagged;
  untagged.reserve(cbor.size());
  if (!ScanStructure(cbor, kMaxCborNesting, &untagged)) {
    return Bad("Request body is not a well-formed CBOR data item (or nests more than 64 levels).");
  }
  json v = json::from_cbor(untagged.begin(), untagged.end(), /*strict=*/true,
                           /*allow_exceptions=*/false, json::cbor_tag_handler_t::ignore);
  if (v.is_discarded()) return Bad("Request body is not valid CBOR for this service.");
  if (!v.is_object()) return Bad("Expected a CBOR map.");
  if (auto e = ToJsonModel(v, "", model, 0)) return e;
  try {
    *json_out = v.dump();
  } catch (const json::exception&) {
    return Bad("A CBOR text string is not valid UTF-8.");
  }
  return std::nullopt;
}

std::string JsonResponseToCbor(std::string_view text, const CborModel& model) {
  if (text.empty()) return "";
  json v = json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::string out;
  if (v.is_discarded()) {
    WriteText(&out, text);
    return out;
  }
  out.reserve(text.size());
  Encode(v, "", model, &out);
  return out;
}

}  // namespace icestream::aws
