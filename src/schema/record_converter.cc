// JSON record -> Parquet columns in one pass (simdjson On-Demand API), with record-level
// rollback. The walk mirrors the shredding tree of format/parquet/schema_mapping.h:
// each value is written at the repetition level handed down by its parent and at its
// node's definition level; a null, a missing optional member or an empty list/map
// writes one entry, below the node's level, to every leaf column under it.
#include "schema/record_converter.h"

#include <immintrin.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "common/base64.h"
#include "schema/value_parsers.h"

namespace icestream::schema {

namespace od = simdjson::ondemand;
using format::parquet::ColumnWriter;
using format::parquet::PhysicalType;
using format::parquet::RecordSink;
using format::parquet::ShredNode;
using iceberg::TypeId;

const size_t RecordConverter::kPadding = simdjson::SIMDJSON_PADDING;

std::string_view RecordErrorCodeName(RecordErrorCode code) {
  switch (code) {
    case RecordErrorCode::kMalformedJson:
      return "MALFORMED_JSON";
    case RecordErrorCode::kMissingRequiredField:
      return "MISSING_REQUIRED_FIELD";
    case RecordErrorCode::kTypeMismatch:
      return "TYPE_MISMATCH";
    case RecordErrorCode::kValueOutOfRange:
      return "VALUE_OUT_OF_RANGE";
    case RecordErrorCode::kNestingTooDeep:
      return "NESTING_TOO_DEEP";
    case RecordErrorCode::kOutsideRoute:
      return "OUTSIDE_ROUTE";
  }
  return "?";
}

namespace {

struct Node {
  const ShredNode* shred = nullptr;
  TypeId type = TypeId::kBoolean;
  ColumnWriter* column = nullptr;  // primitives
  PhysicalType physical = PhysicalType::kBoolean;
  int32_t precision = 0, scale = 0, length = 0;
  const FieldConstraints* constraints = nullptr;
  bool must_be_present = false;
  bool route = false;  // the routing field (ConverterOptions::route_field_id)
  std::string name;
  // The name needs no JSON escaping, so a raw key can be compared byte for byte.
  bool simple_name = false;
  // Names of at most 15 bytes: the name and its closing quote as two little-endian
  // words and their masks, so that a raw key is matched with two masked compares.
  bool short_name = false;
  uint64_t key_lo = 0, key_hi = 0, mask_lo = 0, mask_hi = 0;
  std::vector<Node> children;
  // Structs: member name -> child index (only for wide structs; narrow ones scan).
  std::unordered_map<std::string_view, int> by_name;
  mutable std::vector<uint8_t>
      seen;  // scratch of Struct() for > 64 members; nodes are never re-entered
};

const char* JsonTypeName(od::json_type t) {
  switch (t) {
    case od::json_type::array:
      return "an array";
    case od::json_type::object:
      return "an object";
    case od::json_type::number:
      return "a number";
    case od::json_type::string:
      return "a string";
    case od::json_type::boolean:
      return "a boolean";
    case od::json_type::null:
      return "null";
  }
  return "?";
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

#if defined(__SSE4_1__)
// The value of the n <= 16 ASCII digits at p (p[0, 16) readable), or false when one of
// them is not a digit: the digits moved to the end of a 16-byte vector behind zeros, then
// combined pairwise (10a + b), by fours and by eights in three multiply-adds.
inline bool SixteenDigits(const char* p, size_t n, uint64_t* out) {
  // kShift[n]: pshufb control that moves bytes [0, n) to [16 - n, 16) and zeroes the rest.
  static constexpr auto kShift = [] {
    std::array<std::array<int8_t, 16>, 17> t{};
    for (size_t len = 0; len <= 16; ++len) {
      for (size_t k = 0; k < 16; ++k) {
        t[len][k] = k < 16 - len ? static_cast<int8_t>(-128) : static_cast<int8_t>(k - (16 - len));
      }
    }
    return t;
  }();
  const __m128i d =
      _mm_sub_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), _mm_set1_epi8('0'));
  // Bytes below '0' wrapped around: every one of the n must be <= 9 unsigned.
  const auto digits = static_cast<uint32_t>(
      _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_subs_epu8(d, _mm_set1_epi8(9)), _mm_setzero_si128())));
  const uint32_t want = n == 16 ? 0xFFFFu : (1u << n) - 1;
  if ((digits & want) != want) return false;
  const __m128i v =
      _mm_shuffle_epi8(d, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kShift[n].data())));
  const __m128i pairs =
      _mm_maddubs_epi16(v, _mm_set_epi8(1, 10, 1, 10, 1, 10, 1, 10, 1, 10, 1, 10, 1, 10, 1, 10));
  const __m128i fours = _mm_madd_epi16(pairs, _mm_set_epi16(1, 100, 1, 100, 1, 100, 1, 100));
  const __m128i packed = _mm_packus_epi32(fours, fours);
  const __m128i eights =
      _mm_madd_epi16(packed, _mm_set_epi16(1, 10000, 1, 10000, 1, 10000, 1, 10000));
  const auto hi = static_cast<uint32_t>(_mm_cvtsi128_si32(eights));
  const auto lo = static_cast<uint32_t>(_mm_extract_epi32(eights, 1));
  *out = uint64_t{hi} * 100000000u + lo;
  return true;
}

// The usual shape of a double's text, -?(0|[1-9][0-9]{0,7})\.[0-9]+ with at most 19
// significant digits (the shortest round-trip text of most doubles: 0.8414709848078965,
// -38.65), read without a loop per digit: its digits as one integer w, then w * 10^-f
// rounded by simdjson's own Clinger / Eisel-Lemire step (compute_float_64), as its
// get_double does after its digit loop, so the value is the same correctly rounded one.
// false (nothing written) for any other token, and when that step cannot decide alone;
// the caller then parses with simdjson. p[0, n + 16) must be readable.
inline bool ParseDoubleFast(const char* p, size_t n, double* out) {
  const bool negative = n > 0 && p[0] == '-';
  const char* q = p + negative;
  const size_t m = n - negative;
  if (m < 3 || m > 20) return false;
  // The point: within the first nine bytes (at most eight integer digits).
  const auto dots = static_cast<uint32_t>(_mm_movemask_epi8(
      _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)), _mm_set1_epi8('.'))));
  if ((dots & 0x1FF) == 0) return false;
  const auto int_digits = static_cast<size_t>(__builtin_ctz(dots));
  const size_t frac_digits = m - int_digits - 1;
  if (int_digits == 0 || frac_digits == 0 || int_digits + frac_digits > 19 ||
      (q[0] == '0' && int_digits != 1)) {
    return false;
  }
  uint64_t w = 0;
  for (size_t k = 0; k < int_digits; ++k) {
    const auto digit = static_cast<unsigned>(static_cast<unsigned char>(q[k]) - '0');
    if (digit > 9) return false;
    w = w * 10 + digit;
  }
  const char* f = q + int_digits + 1;
  uint64_t frac = 0;
  if (frac_digits <= 16) {
    if (!SixteenDigits(f, frac_digits, &frac)) return false;
  } else {  // 17 or 18: the first one or two, then sixteen
    const size_t head = frac_digits - 16;
    for (size_t k = 0; k < head; ++k) {
      const auto digit = static_cast<unsigned>(static_cast<unsigned char>(f[k]) - '0');
      if (digit > 9) return false;
      frac = frac * 10 + digit;
    }
    uint64_t tail = 0;
    if (!SixteenDigits(f + head, 16, &tail)) return false;
    frac = frac * kPow10[16] + tail;
  }
  w = w * kPow10[frac_digits] + frac;  // < 10^19: no overflow
  return simdjson::builtin::numberparsing::compute_float_64(-static_cast<int64_t>(frac_digits), w,
                                                            negative, *out);
}
#endif

int SchemaDepth(const ShredNode& n) {
  int d = 0;
  for (const auto& c : n.children) d = std::max(d, SchemaDepth(c));
  return n.kind == ShredNode::Kind::kPrimitive ? 0 : d + 1;
}

}  // namespace

struct RecordConverter::Impl {
  RecordSink* writer = nullptr;
  ConverterOptions options;
  std::unordered_map<int32_t, FieldConstraints> constraints;
  FieldConstraints default_constraints;
  Node root;
  od::parser parser;
  std::string padded;   // Convert(): a padded copy of the record
  std::string scratch;  // decoded base64
  // Error state of the record being converted.
  RecordErrorCode code = RecordErrorCode::kMalformedJson;
  std::string message;
  std::vector<std::string> path_rev;
  // Routing: the routed field's value in the record being converted, and the range of
  // values this sink takes.
  std::optional<int64_t> routed;
  int64_t route_lo = INT64_MIN;
  int64_t route_hi = INT64_MAX;

  Status Build(const ShredNode& s, Node* n) {
    n->shred = &s;
    n->name = s.name;
    n->simple_name = std::none_of(s.name.begin(), s.name.end(), [](char c) {
      return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
    });
    if (n->simple_name && s.name.size() <= 15) {
      char pattern[16] = {};
      std::memcpy(pattern, s.name.data(), s.name.size());
      pattern[s.name.size()] = '"';
      std::memcpy(&n->key_lo, pattern, 8);
      std::memcpy(&n->key_hi, pattern + 8, 8);
      const size_t len = s.name.size() + 1;  // 1..16 bytes
      n->mask_lo = len >= 8 ? ~0ull : (1ull << (8 * len)) - 1;
      n->mask_hi = len <= 8 ? 0 : len == 16 ? ~0ull : (1ull << (8 * (len - 8))) - 1;
      n->short_name = true;
    }
    auto it = constraints.find(s.field_id);
    n->constraints = it != constraints.end() ? &it->second : &default_constraints;
    n->must_be_present = it != constraints.end() ? it->second.must_be_present : !s.optional;
    n->route = options.route_field_id != 0 && s.field_id == options.route_field_id;
    if (s.type != nullptr) {
      n->type = s.type->id;
      n->precision = s.type->precision;
      n->scale = s.type->scale;
      n->length = s.type->length;
    } else {
      n->type = TypeId::kStruct;  // the root
    }
    if (s.kind == ShredNode::Kind::kPrimitive) {
      n->column = &writer->column(s.leaf_begin);
      n->physical = n->column->descriptor().physical;
      return Status::OK();
    }
    if (s.kind == ShredNode::Kind::kMap && s.children[0].type->id != TypeId::kString) {
      return Unimplemented("map " + s.name + ": only string keys can be filled from JSON objects");
    }
    n->children.resize(s.children.size());
    for (size_t i = 0; i < s.children.size(); ++i)
      RETURN_IF_ERROR(Build(s.children[i], &n->children[i]));
    if (n->children.size() > 64) n->seen.assign(n->children.size(), 0);
    return Status::OK();
  }

  // After the tree stops moving: name indexes for wide structs.
  void Index(Node* n) {
    if (n->shred->kind == ShredNode::Kind::kStruct && n->children.size() > 8) {
      for (size_t i = 0; i < n->children.size(); ++i)
        n->by_name.emplace(n->children[i].name, static_cast<int>(i));
    }
    for (auto& c : n->children) Index(&c);
  }

  bool Fail(RecordErrorCode c, std::string msg) {
    code = c;
    message = std::move(msg);
    return false;
  }

  bool FailJson(simdjson::error_code e) {
    switch (e) {
      case simdjson::INCORRECT_TYPE:
        return Fail(RecordErrorCode::kTypeMismatch, "unexpected JSON type");
      case simdjson::NUMBER_OUT_OF_RANGE:
        return Fail(RecordErrorCode::kValueOutOfRange, "number out of range");
      case simdjson::DEPTH_ERROR:
        return Fail(RecordErrorCode::kNestingTooDeep, "nesting too deep");
      default:
        return Fail(RecordErrorCode::kMalformedJson, simdjson::error_message(e));
    }
  }

  bool Mismatch(const Node& n, od::json_type got) {
    std::string want = n.type == TypeId::kStruct ? "an object"
                       : n.type == TypeId::kList ? "an array"
                       : n.type == TypeId::kMap
                           ? "an object"
                           : "a value of type " + iceberg::PrimitiveTypeName(*n.shred->type);
    return Fail(RecordErrorCode::kTypeMismatch, "expected " + want + ", got " + JsonTypeName(got));
  }

  void WriteNulls(const Node& n, int16_t rep, int16_t def) {
    for (int i = n.shred->leaf_begin; i < n.shred->leaf_end; ++i)
      writer->column(i).AddNull(rep, def);
  }

  // Matches a raw (still escaped) key against the names that need no escaping: the
  // expected member first (members mostly come in schema order), then every member of a
  // narrow struct; -1 when none matches (the caller then unescapes the key and looks
  // again).
  static int LookupRaw(const Node& n, od::raw_json_string key, size_t hint) {
    const char* raw = key.raw();  // just after the opening quote; the input is padded
    if (hint < n.children.size() && RawEquals(raw, n.children[hint])) return static_cast<int>(hint);
    if (!n.by_name.empty()) return -1;
    for (size_t i = 0; i < n.children.size(); ++i) {
      if (RawEquals(raw, n.children[i])) return static_cast<int>(i);
    }
    return -1;
  }

  // raw_json_string::unsafe_is_equal without a memcmp call: short names are two masked
  // word compares (the input is padded, so 16 bytes from the key can always be read).
  static bool RawEquals(const char* raw, const Node& child) {
    if (child.short_name) {
      uint64_t lo, hi;
      std::memcpy(&lo, raw, 8);
      std::memcpy(&hi, raw + 8, 8);
      return (((lo ^ child.key_lo) & child.mask_lo) | ((hi ^ child.key_hi) & child.mask_hi)) == 0;
    }
    if (!child.simple_name) return false;
    const std::string& name = child.name;
    size_t n = name.size();
    if (raw[n] != '"') return false;
    return std::memcmp(raw, name.data(), n) == 0;
  }

  int Lookup(const Node& n, std::string_view key, size_t hint) const {
    if (hint < n.children.size() && n.children[hint].name == key) return static_cast<int>(hint);
    if (!n.by_name.empty()) {
      auto it = n.by_name.find(key);
      return it == n.by_name.end() ? -1 : it->second;
    }
    for (size_t i = 0; i < n.children.size(); ++i) {
      if (n.children[i].name == key) return static_cast<int>(i);
    }
    return -1;
  }

  // Validates a dropped value (syntax and depth) without writing anything.
  bool Skip(od::value& v, int depth) {
    od::json_type t;
    if (auto e = v.type().get(t)) return FailJson(e);
    switch (t) {
      case od::json_type::object: {
        if (depth + 1 > options.max_record_depth) return FailJson(simdjson::DEPTH_ERROR);
        od::object o;
        if (auto e = v.get_object().get(o)) return FailJson(e);
        for (auto fr : o) {
          // Use the result in place: copying the field out costs a store-forwarding stall.
          if (auto e = fr.error()) return FailJson(e);
          od::field& f = fr.value_unsafe();
          std::string_view k;
          if (auto e = f.unescaped_key().get(k)) return FailJson(e);
          if (!Skip(f.value(), depth + 1)) return false;
        }
        return true;
      }
      case od::json_type::array: {
        if (depth + 1 > options.max_record_depth) return FailJson(simdjson::DEPTH_ERROR);
        od::array a;
        if (auto e = v.get_array().get(a)) return FailJson(e);
        for (auto er : a) {
          if (auto e = er.error()) return FailJson(e);
          od::value& ev = er.value_unsafe();
          if (!Skip(ev, depth + 1)) return false;
        }
        return true;
      }
      case od::json_type::string: {
        std::string_view s;
        if (auto e = v.get_string().get(s))
          return Fail(RecordErrorCode::kMalformedJson, simdjson::error_message(e));
        return true;
      }
      case od::json_type::number: {
        std::string_view tok;
        tok = v.raw_json_token();
        if (!IsJsonNumber(TrimRight(tok)))
          return Fail(RecordErrorCode::kMalformedJson, "invalid number");
        return true;
      }
      case od::json_type::boolean: {
        bool b;
        if (v.get_bool().get(b)) return Fail(RecordErrorCode::kMalformedJson, "invalid literal");
        return true;
      }
      case od::json_type::null: {
        bool is_null = false;
        if (v.is_null().get(is_null) || !is_null)
          return Fail(RecordErrorCode::kMalformedJson, "invalid literal");
        return true;
      }
    }
    return true;
  }

  bool Struct(const Node& n, od::object obj, int16_t rep, int depth) {
    // Members seen: a bit each (a vector for structs of more than 64 members).
    uint64_t seen_bits = 0;
    const bool wide = n.children.size() > 64;
    if (wide) std::fill(n.seen.begin(), n.seen.end(), 0);
    auto seen = [&](size_t i) { return wide ? n.seen[i] != 0 : ((seen_bits >> i) & 1) != 0; };
    auto mark = [&](size_t i) {
      if (wide) {
        n.seen[i] = 1;
      } else {
        seen_bits |= uint64_t{1} << i;
      }
    };
    size_t hint = 0;
    for (auto fr : obj) {
      // Use the result in place: copying the field out costs a store-forwarding stall.
      if (auto e = fr.error()) return FailJson(e);
      od::field& f = fr.value_unsafe();
      std::string_view key;
      int idx = LookupRaw(n, f.key(), hint);
      if (idx < 0) {
        if (auto e = f.unescaped_key().get(key)) return FailJson(e);
        idx = Lookup(n, key, hint);
      }
      if (idx < 0) {
        if (!Skip(f.value(), depth)) {
          path_rev.push_back("." + std::string(key));
          return false;
        }
        continue;
      }
      const Node& child = n.children[static_cast<size_t>(idx)];
      if (seen(static_cast<size_t>(idx))) {
        path_rev.push_back("." + child.name);
        return Fail(RecordErrorCode::kMalformedJson, "member appears twice");
      }
      mark(static_cast<size_t>(idx));
      hint = static_cast<size_t>(idx) + 1;
      if (!Value(child, f.value(), rep, depth)) {
        path_rev.push_back("." + child.name);
        return false;
      }
    }
    if (!wide &&
        seen_bits == (n.children.size() == 64 ? ~0ull : (uint64_t{1} << n.children.size()) - 1)) {
      return true;  // every member present
    }
    for (size_t i = 0; i < n.children.size(); ++i) {
      if (seen(i)) continue;
      const Node& child = n.children[i];
      if (child.must_be_present || !child.shred->optional) {
        path_rev.push_back("." + child.name);
        return Fail(RecordErrorCode::kMissingRequiredField, "required field is missing");
      }
      WriteNulls(child, rep, static_cast<int16_t>(child.shred->def - 1));
    }
    return true;
  }

  bool List(const Node& n, od::array arr, int16_t rep, int depth) {
    const Node& element = n.children[0];
    int16_t r = rep;
    size_t i = 0;
    for (auto er : arr) {
      if (auto e = er.error()) return FailJson(e);
      od::value& v = er.value_unsafe();
      if (!Value(element, v, r, depth)) {
        path_rev.push_back("[" + std::to_string(i) + "]");
        return false;
      }
      r = n.shred->rep;
      ++i;
    }
    if (i == 0) WriteNulls(n, rep, n.shred->def);  // empty list: present, no elements
    return true;
  }

  bool Map(const Node& n, od::object obj, int16_t rep, int depth) {
    const Node& key = n.children[0];
    const Node& value = n.children[1];
    int16_t r = rep;
    size_t i = 0;
    for (auto fr : obj) {
      // Use the result in place: copying the field out costs a store-forwarding stall.
      if (auto e = fr.error()) return FailJson(e);
      od::field& f = fr.value_unsafe();
      std::string_view k;
      if (auto e = f.unescaped_key().get(k)) return FailJson(e);
      // Key and value are written together, so a failing value rolls back with the record.
      key.column->AddBytes(r, k);
      if (!Value(value, f.value(), r, depth)) {
        path_rev.push_back("." + std::string(k));
        return false;
      }
      r = n.shred->rep;
      ++i;
    }
    if (i == 0) WriteNulls(n, rep, n.shred->def);
    return true;
  }

  // v is a member / element inside a container at `depth` (the record itself is 1).
  bool Value(const Node& n, od::value& v, int16_t rep, int depth) {
    od::json_type t;
    if (auto e = v.type().get(t)) return FailJson(e);
    if (t == od::json_type::null) {
      bool is_null = false;
      if (v.is_null().get(is_null) || !is_null)
        return Fail(RecordErrorCode::kMalformedJson, "invalid literal");
      if (!n.shred->optional)
        return Fail(RecordErrorCode::kMissingRequiredField, "required field is null");
      WriteNulls(n, rep, static_cast<int16_t>(n.shred->def - 1));
      return true;
    }
    switch (n.type) {
      case TypeId::kStruct:
      case TypeId::kMap: {
        if (t != od::json_type::object) return Mismatch(n, t);
        if (depth + 1 > options.max_record_depth) return FailJson(simdjson::DEPTH_ERROR);
        od::object o;
        if (auto e = v.get_object().get(o)) return FailJson(e);
        return n.type == TypeId::kStruct ? Struct(n, o, rep, depth + 1) : Map(n, o, rep, depth + 1);
      }
      case TypeId::kList: {
        if (t != od::json_type::array) return Mismatch(n, t);
        if (depth + 1 > options.max_record_depth) return FailJson(simdjson::DEPTH_ERROR);
        od::array a;
        if (auto e = v.get_array().get(a)) return FailJson(e);
        return List(n, a, rep, depth + 1);
      }
      default:
        return Primitive(n, v, t, rep);
    }
  }

  // Integers are stored exactly or not at all: a number that is not an exact integer
  // within the column's range is refused, never rounded (simdjson's int64 parse takes
  // plain integer tokens; 1.0, 2e3 and tokens beyond int64 are read exactly from the text).
  bool Integer(const Node& n, od::value& v, int16_t rep) {
    int64_t x = 0;
    // The token is followed by the record's padding: the fast path may read past it.
    const std::string_view raw = TrimRight(v.raw_json_token());
    if (ParseJsonInt64Fast(raw.data(), raw.size(), &x)) {
      // a plain integer that fits
    } else if (auto e = v.get_int64().get(x)) {
      if (e != simdjson::INCORRECT_TYPE && e != simdjson::NUMBER_OUT_OF_RANGE) return FailJson(e);
      std::string_view tok = TrimRight(v.raw_json_token());
      int128 exact = 0;
      switch (ParseJsonInteger(tok, &exact)) {
        case ParseOutcome::kBadSyntax:
          return Fail(RecordErrorCode::kMalformedJson, "invalid number");
        case ParseOutcome::kNotInteger:
          return Fail(RecordErrorCode::kTypeMismatch, "expected an integer, got a fraction");
        case ParseOutcome::kOutOfRange:
          return Fail(RecordErrorCode::kValueOutOfRange,
                      std::string(tok) + " does not fit in long");
        case ParseOutcome::kOk:
          break;
      }
      if (exact < INT64_MIN || exact > INT64_MAX) {
        return Fail(RecordErrorCode::kValueOutOfRange, std::string(tok) + " does not fit in long");
      }
      x = static_cast<int64_t>(exact);
    }
    const FieldConstraints& c = *n.constraints;
    if ((c.min_int && x < *c.min_int) || (c.max_int && x > *c.max_int)) {
      return Fail(RecordErrorCode::kValueOutOfRange,
                  std::to_string(x) + " is outside the schema's bounds");
    }
    if (c.int_multiple_of != 0 && x % c.int_multiple_of != 0) {
      return Fail(RecordErrorCode::kValueOutOfRange,
                  std::to_string(x) + " is not a multiple of " + std::to_string(c.int_multiple_of));
    }
    if (c.int_multiple_of_unscaled != 0) {
      // multipleOf = unscaled / 10^scale: x is a multiple iff x * 10^scale is one of
      // unscaled (exact; scale <= 18 keeps the product inside 128 bits).
      int128 scaled = static_cast<int128>(x);
      for (int32_t k = 0; k < c.int_multiple_of_scale; ++k) scaled *= 10;
      if (scaled % c.int_multiple_of_unscaled != 0) {
        return Fail(RecordErrorCode::kValueOutOfRange,
                    std::to_string(x) + " is not a multiple of the schema's multipleOf");
      }
    }
    if (n.type == TypeId::kInt) {
      if (x < INT32_MIN || x > INT32_MAX) {
        return Fail(RecordErrorCode::kValueOutOfRange, std::to_string(x) + " does not fit in int");
      }
      n.column->AddInt32(rep, static_cast<int32_t>(x));
    } else {
      n.column->AddInt64(rep, x);
    }
    if (n.route) routed = x;
    return true;
  }

  // float and double hold the nearest value of their type (IEEE rounding, read from the
  // text directly for float: no double rounding); a number beyond the type's range, or a
  // non-zero one that would become 0, is refused.
  bool Floating(const Node& n, od::value& v, int16_t rep) {
    double d;
#if defined(__SSE4_1__)
    // The token is followed by the record's padding: the fast path may read past it.
    const std::string_view raw = TrimRight(v.raw_json_token());
    if (ParseDoubleFast(raw.data(), raw.size(), &d)) {
      // a decimal fraction of at most 19 digits
    } else
#endif
        if (auto e = v.get_double().get(d)) {
      std::string_view tok = TrimRight(v.raw_json_token());
      if (e == simdjson::NUMBER_OUT_OF_RANGE ||
          (e == simdjson::NUMBER_ERROR && IsJsonNumber(tok))) {
        return Fail(
            RecordErrorCode::kValueOutOfRange,
            std::string(tok) + " does not fit in " + iceberg::PrimitiveTypeName(*n.shred->type));
      }
      return FailJson(e == simdjson::INCORRECT_TYPE ? simdjson::NUMBER_ERROR : e);
    }
    if (!std::isfinite(d)) {
      return Fail(RecordErrorCode::kValueOutOfRange,
                  std::string(TrimRight(v.raw_json_token())) + " does not fit in double");
    }
    if (!WithinNumberBounds(*n.constraints, d)) {
      return Fail(RecordErrorCode::kValueOutOfRange, "number outside the schema's minimum/maximum");
    }
    if (n.type == TypeId::kFloat) {
      std::string_view tok = TrimRight(v.raw_json_token());
      float f = 0;
      auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), f);
      if ((ec != std::errc() && ec != std::errc::result_out_of_range) ||
          end != tok.data() + tok.size()) {
        return Fail(RecordErrorCode::kMalformedJson, "invalid number");
      }
      if (ec == std::errc::result_out_of_range || !std::isfinite(f) ||
          (f == 0 && HasNonZeroDigit(tok))) {
        return Fail(RecordErrorCode::kValueOutOfRange, std::string(tok) + " does not fit in float");
      }
      n.column->AddFloat(rep, f);
    } else {
      if (d == 0 && HasNonZeroDigit(TrimRight(v.raw_json_token()))) {
        return Fail(RecordErrorCode::kValueOutOfRange,
                    std::string(TrimRight(v.raw_json_token())) + " does not fit in double");
      }
      n.column->AddDouble(rep, d);
    }
    return true;
  }

  // minimum/maximum (and their exclusive forms) of a number column, double or decimal.
  static bool WithinNumberBounds(const FieldConstraints& c, long double x) {
    if (c.min_number) {
      long double lo = *c.min_number;
      if (c.exclusive_min_number ? x <= lo : x < lo) return false;
    }
    if (c.max_number) {
      long double hi = *c.max_number;
      if (c.exclusive_max_number ? x >= hi : x > hi) return false;
    }
    return true;
  }

  // A JSON number token as a double (strtod needs a terminated copy).
  static bool ParseDouble(std::string_view tok, double* out) {
    char buf[128];
    if (tok.empty() || tok.size() >= sizeof buf) return false;
    std::memcpy(buf, tok.data(), tok.size());
    buf[tok.size()] = '\0';
    char* end = nullptr;
    *out = std::strtod(buf, &end);
    return end == buf + tok.size();
  }

  bool DecimalValue(const Node& n, od::value& v, int16_t rep) {
    std::string_view tok;
    tok = v.raw_json_token();
    int128 unscaled = 0;
    switch (ParseDecimal(TrimRight(tok), n.precision, n.scale, &unscaled)) {
      case ParseOutcome::kBadSyntax:
        return Fail(RecordErrorCode::kMalformedJson, "invalid number");
      case ParseOutcome::kOutOfRange:
      case ParseOutcome::kNotInteger:
        return Fail(RecordErrorCode::kValueOutOfRange,
                    std::string(TrimRight(tok)) + " does not fit " +
                        iceberg::PrimitiveTypeName(*n.shred->type) + " exactly");
      case ParseOutcome::kOk:
        break;
    }
    // multipleOf 10^-scale (the usual case: it set the scale) holds for every value.
    if (n.constraints->multiple_of > 1 && unscaled % n.constraints->multiple_of != 0) {
      return Fail(RecordErrorCode::kValueOutOfRange,
                  "number is not a multiple of the schema's multipleOf");
    }
    // Bounds are compared like the double columns do (and JSON Schema validators): the
    // number's text read as a double against the bounds read as doubles, so a value
    // written exactly as a bound (0.01, 19.99) is on it, whatever binary rounding says.
    double as_double = 0;
    if ((n.constraints->min_number || n.constraints->max_number) &&
        (!ParseDouble(TrimRight(tok), &as_double) ||
         !WithinNumberBounds(*n.constraints, as_double))) {
      return Fail(RecordErrorCode::kValueOutOfRange,
                  std::string(TrimRight(tok)) + " is outside the schema's bounds");
    }
    if (n.physical == PhysicalType::kInt32) {
      n.column->AddInt32(rep, static_cast<int32_t>(unscaled));
    } else if (n.physical == PhysicalType::kInt64) {
      n.column->AddInt64(rep, static_cast<int64_t>(unscaled));
    } else {
      // Big-endian two's complement, sign-extended to the column width (<= 16): the last
      // `w` bytes of the 16-byte form.
      char buf[16];
      const uint64_t hi = __builtin_bswap64(static_cast<uint64_t>(unscaled >> 64));
      const uint64_t lo = __builtin_bswap64(static_cast<uint64_t>(unscaled));
      std::memcpy(buf, &hi, 8);
      std::memcpy(buf + 8, &lo, 8);
      const auto w = static_cast<size_t>(n.column->descriptor().type_length);
      n.column->AddBytes(rep, std::string_view(buf + 16 - w, w));
    }
    return true;
  }

  static bool Listed(const std::vector<std::string>& values, std::string_view s) {
    for (const auto& e : values) {
      if (e == s) return true;
    }
    return false;
  }

  // Whether a JSON value of kind `t` may be a member of an enum with a declared type.
  static bool EnumKindAllowed(const FieldConstraints& c, od::json_type t) {
    if (c.enum_type.empty()) return true;
    if (c.enum_type == "string") return t == od::json_type::string;
    if (c.enum_type == "integer" || c.enum_type == "number") return t == od::json_type::number;
    if (c.enum_type == "boolean") return t == od::json_type::boolean;
    return true;
  }

  bool Primitive(const Node& n, od::value& v, od::json_type t, int16_t rep) {
    switch (n.type) {
      case TypeId::kBoolean: {
        if (t != od::json_type::boolean) return Mismatch(n, t);
        bool b;
        if (v.get_bool().get(b)) return Fail(RecordErrorCode::kMalformedJson, "invalid literal");
        n.column->AddBool(rep, b);
        return true;
      }
      case TypeId::kInt:
      case TypeId::kLong:
        if (t != od::json_type::number) return Mismatch(n, t);
        return Integer(n, v, rep);
      case TypeId::kFloat:
      case TypeId::kDouble:
        if (t != od::json_type::number) return Mismatch(n, t);
        return Floating(n, v, rep);
      case TypeId::kDecimal:
        if (t != od::json_type::number) return Mismatch(n, t);
        return DecimalValue(n, v, rep);
      default:
        break;
    }
    // The remaining types come from JSON strings.
    if (n.constraints->has_enum && !EnumKindAllowed(*n.constraints, t)) {
      return Fail(RecordErrorCode::kTypeMismatch,
                  "expected a " + n.constraints->enum_type + " enum value, got " + JsonTypeName(t));
    }
    if (t != od::json_type::string) {
      if (n.constraints->has_enum && t != od::json_type::object && t != od::json_type::array) {
        // Non-string enum members are stored as their JSON text.
        std::string_view tok;
        tok = TrimRight(v.raw_json_token());
        if (!Skip(v, 0)) return false;
        bool listed = false;
        if (t == od::json_type::number) {
          double d = 0;
          if (ParseDouble(tok, &d)) {
            for (double e : n.constraints->enum_numbers) listed = listed || e == d;
          }
        } else {
          listed = Listed(n.constraints->enum_json_values, tok);
        }
        if (!listed) {
          return Fail(RecordErrorCode::kValueOutOfRange, "value is not one of the enum values");
        }
        n.column->AddBytes(rep, tok);
        return true;
      }
      return Mismatch(n, t);
    }
    std::string_view s;
    // Fast path: a string without escapes is its raw token minus the quotes (stage 1
    // has validated its UTF-8 and rejected unescaped control characters).
    std::string_view tok = TrimRight(v.raw_json_token());
    if (tok.size() >= 2 && tok.back() == '"' &&
        std::memchr(tok.data(), '\\', tok.size()) == nullptr) {
      s = tok.substr(1, tok.size() - 2);
    } else if (auto e = v.get_string().get(s)) {
      return Fail(RecordErrorCode::kMalformedJson, simdjson::error_message(e));
    }
    auto parsed = [&](ParseOutcome o, const char* what) {
      if (o == ParseOutcome::kOk) return true;
      return Fail(o == ParseOutcome::kBadSyntax ? RecordErrorCode::kTypeMismatch
                                                : RecordErrorCode::kValueOutOfRange,
                  o == ParseOutcome::kBadSyntax ? std::string("not ") + what
                                                : std::string(what) + " with a part out of range");
    };
    switch (n.type) {
      case TypeId::kString:
        if (n.constraints->has_enum && !Listed(n.constraints->enum_values, s)) {
          return Fail(RecordErrorCode::kValueOutOfRange, "value is not one of the enum values");
        }
        n.column->AddBytes(rep, s);
        return true;
      case TypeId::kDate: {
        int32_t days;
        if (!parsed(ParseDate(s, &days), "an RFC 3339 date (YYYY-MM-DD)")) return false;
        n.column->AddInt32(rep, days);
        if (n.route) routed = days;
        return true;
      }
      case TypeId::kTime: {
        int64_t us;
        if (!parsed(ParseTime(s, &us), "an RFC 3339 time (HH:MM:SS[.ffffff])")) return false;
        n.column->AddInt64(rep, us);
        return true;
      }
      case TypeId::kTimestamp:
      case TypeId::kTimestampTz: {
        int64_t us;
        if (!parsed(ParseTimestamp(s, &us), "an RFC 3339 date-time")) return false;
        n.column->AddInt64(rep, us);
        if (n.route) routed = us;
        return true;
      }
      case TypeId::kUuid: {
        uint8_t b[16];
        if (!parsed(ParseUuid(s, b), "a UUID")) return false;
        n.column->AddBytes(rep, std::string_view(reinterpret_cast<char*>(b), 16));
        return true;
      }
      case TypeId::kFixed:
      case TypeId::kBinary: {
        auto size = base64::DecodedSize(s);
        if (!size) return Fail(RecordErrorCode::kTypeMismatch, "not base64");
        scratch.resize(*size);
        if (!base64::DecodeTo(s, reinterpret_cast<uint8_t*>(scratch.data()))) {
          return Fail(RecordErrorCode::kTypeMismatch, "not base64");
        }
        std::string_view bytes(scratch.data(), *size);
        if (n.type == TypeId::kFixed && bytes.size() != static_cast<size_t>(n.length)) {
          return Fail(RecordErrorCode::kValueOutOfRange, "expected " + std::to_string(n.length) +
                                                             " bytes, got " +
                                                             std::to_string(bytes.size()));
        }
        n.column->AddBytes(rep, bytes);
        return true;
      }
      default:
        return Mismatch(n, t);
    }
  }

  // The document is not an object: malformed if it is not even a valid JSON scalar.
  bool RootNotObject(od::document& doc) {
    od::json_type t;
    if (doc.type().get(t)) return Fail(RecordErrorCode::kMalformedJson, "not JSON");
    bool valid = true;
    switch (t) {
      case od::json_type::string: {
        std::string_view s;
        valid = !doc.get_string().get(s);
        break;
      }
      case od::json_type::number: {
        std::string_view tok;
        valid = !doc.raw_json_token().get(tok) && IsJsonNumber(TrimRight(tok));
        break;
      }
      case od::json_type::boolean: {
        bool b;
        valid = !doc.get_bool().get(b);
        break;
      }
      case od::json_type::null: {
        bool n = false;
        valid = !doc.is_null().get(n) && n;
        break;
      }
      default:
        break;
    }
    if (!valid) return Fail(RecordErrorCode::kMalformedJson, "not JSON");
    return Fail(RecordErrorCode::kTypeMismatch,
                std::string("the record is ") + JsonTypeName(t) + ", not a JSON object");
  }

  Result<bool> Run(std::string_view json, size_t capacity, RecordError* error) {
    path_rev.clear();
    routed.reset();
    od::document doc;
    bool ok = true;
    if (auto e = parser.iterate(json.data(), json.size(), capacity).get(doc)) {
      ok = FailJson(e == simdjson::INCORRECT_TYPE ? simdjson::TAPE_ERROR : e);
    } else {
      od::object obj;
      auto e2 = doc.get_object().get(obj);
      if (e2 == simdjson::INCORRECT_TYPE) {
        ok = RootNotObject(doc);
      } else if (e2) {
        ok = FailJson(e2);
      } else {
        ok = Struct(root, obj, 0, 1);
        if (ok) {
          const char* loc = nullptr;
          if (!doc.current_location().get(loc)) {
            ok = Fail(RecordErrorCode::kMalformedJson, "content after the record");
          }
        }
      }
    }
    return Finish(ok, error);
  }

  // Commits the walked record (ok) or rolls it back and fills *error.
  Result<bool> Finish(bool ok, RecordError* error) {
    if (ok && options.route_field_id != 0 &&
        (!routed || *routed < route_lo || *routed >= route_hi)) {
      writer->AbortRecord();
      error->code = RecordErrorCode::kOutsideRoute;
      error->path = "$";
      error->message = "the record belongs to another route";
      error->route_value = routed;
      return false;
    }
    if (ok) {
      RETURN_IF_ERROR(writer->EndRecord());
      return true;
    }
    writer->AbortRecord();
    error->route_value.reset();
    error->code = code;
    error->path = "$";
    for (auto it = path_rev.rbegin(); it != path_rev.rend(); ++it) error->path += *it;
    error->message = error->path + ": " + message;
    return false;
  }

  // ConvertRun's windows: the bytes one stage 1 pass indexes. 64 KiB keep its structural
  // index in the L2 cache while the records are walked and cost a few hundred records'
  // worth of per-call overhead; after a record the window could not take (see
  // ConvertRun), the next one starts at 4 KiB and doubles with each clean window, so
  // that input with many bad records does not index the same bytes again and again.
  static constexpr size_t kMaxWindow = 64 << 10;
  static constexpr size_t kMinWindow = 4 << 10;

  static bool JsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

  // Whether record b follows record a in the same buffer with only a little JSON
  // whitespace between them (a line end, blank lines): then both can be in one window.
  static bool Adjacent(std::string_view a, std::string_view b) {
    const char* gap = a.data() + a.size();
    if (b.data() == gap + 1 && *gap == '\n') return true;  // JSON lines
    if (b.data() < gap || b.data() - gap > 8) return false;
    for (const char* p = gap; p < b.data(); ++p) {
      if (!JsonSpace(*p)) return false;
    }
    return true;
  }

  Status ConvertRun(const std::string_view* records, size_t count, RecordError* error,
                    const std::function<Status(size_t, bool)>& done) {
    size_t window = kMaxWindow;
    size_t i = 0;
    while (i < count) {
      // The window: records i..j-1, adjacent, within `window` bytes.
      const char* begin = records[i].data();
      size_t j = i + 1;
      while (j < count && Adjacent(records[j - 1], records[j]) &&
             static_cast<size_t>(records[j].data() + records[j].size() - begin) <= window) {
        ++j;
      }
      if (j - i < 2) {  // one record (or one too large for a window): on its own
        ASSIGN_OR_RETURN(bool ok, Run(records[i], records[i].size() + kPadding, error));
        RETURN_IF_ERROR(done(i, ok));
        ++i;
        continue;
      }
      const size_t len = static_cast<size_t>(records[j - 1].data() + records[j - 1].size() - begin);
      ASSIGN_OR_RETURN(size_t next, ConvertWindow(records, i, j, begin, len, error, done));
      if (next == j) {
        window = std::min(window * 2, kMaxWindow);
      } else {
        // Record next - 1 was converted on its own (see ConvertWindow): a new window
        // after it, smaller.
        window = kMinWindow;
      }
      i = next;
    }
    return Status::OK();
  }

  // Converts records[i, j), which lie in [begin, begin + len), from one stage 1 pass
  // (simdjson's iterate_many). Each document must start where its record starts and end
  // before the next record; a document that does not, that is not a JSON object or
  // that the walk rejects (a bad record, or a cut one that swallowed the next line) is
  // rolled back and its record converted on its own by Run, whose result is the
  // record's (so both paths agree on every record); the window then ends there.
  // Returns the index of the first record not converted.
  Result<size_t> ConvertWindow(const std::string_view* records, size_t i, size_t j,
                               const char* begin, size_t len, RecordError* error,
                               const std::function<Status(size_t, bool)>& done) {
    od::document_stream stream;
    if (parser.iterate_many(begin, len, kMaxWindow).get(stream)) {
      ASSIGN_OR_RETURN(bool ok, Run(records[i], records[i].size() + kPadding, error));
      RETURN_IF_ERROR(done(i, ok));
      return i + 1;
    }
    auto it = stream.begin();
    if (!(it != stream.end()) || (*it).error()) {
      // Stage 1 refused the window (bad UTF-8, an unclosed string): each record on its own.
      for (size_t k = i; k < j; ++k) {
        ASSIGN_OR_RETURN(bool ok, Run(records[k], records[k].size() + kPadding, error));
        RETURN_IF_ERROR(done(k, ok));
      }
      return j;
    }
    // Document k is walked (it starts record k: the window's start for k == i, checked
    // below for the others), and its row committed once the next document is seen to
    // start at record k + 1's first token, or nothing to follow the window's last.
    for (size_t k = i; k < j; ++k) {
      path_rev.clear();
      routed.reset();
      od::document_reference doc;
      od::object obj;
      bool walked = !(*it).get(doc) && !doc.get_object().get(obj) && Struct(root, obj, 0, 1);
      if (walked) {
        ++it;
        walked = k + 1 < j
                     ? it != stream.end() && begin + it.current_index() == Start(records[k + 1])
                     : !(it != stream.end());
      }
      if (!walked) {
        writer->AbortRecord();
        ASSIGN_OR_RETURN(bool ok, Run(records[k], records[k].size() + kPadding, error));
        RETURN_IF_ERROR(done(k, ok));
        return k + 1;
      }
      ASSIGN_OR_RETURN(bool ok, Finish(true, error));
      RETURN_IF_ERROR(done(k, ok));
    }
    return j;
  }

  // Where a record's first token is (iterate_many's index of a document after the first).
  static const char* Start(std::string_view record) {
    size_t n = 0;
    while (n < record.size() && JsonSpace(record[n])) ++n;
    return record.data() + n;
  }
};

RecordConverter::RecordConverter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RecordConverter::~RecordConverter() = default;

Result<std::unique_ptr<RecordConverter>> RecordConverter::Make(const ConvertibleSchema& schema,
                                                               RecordSink* writer,
                                                               ConverterOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->writer = writer;
  impl->options = options;
  impl->options.max_record_depth =
      std::max(options.max_record_depth, SchemaDepth(writer->schema().root()));
  impl->constraints = schema.constraints;
  RETURN_IF_ERROR(impl->Build(writer->schema().root(), &impl->root));
  // ConvertRun's stage 1 passes run on the caller's thread (ParallelConverter has its own).
  impl->parser.threaded = false;
  impl->Index(&impl->root);
  return std::unique_ptr<RecordConverter>(new RecordConverter(std::move(impl)));
}

Result<bool> RecordConverter::Convert(std::string_view json, RecordError* error) {
  impl_->padded.assign(json);
  impl_->padded.append(kPadding, '\0');
  return impl_->Run(std::string_view(impl_->padded.data(), json.size()), impl_->padded.size(),
                    error);
}

void RecordConverter::SetRoute(int64_t lo, int64_t hi) {
  impl_->route_lo = lo;
  impl_->route_hi = hi;
}

Result<bool> RecordConverter::ConvertPadded(std::string_view json, RecordError* error) {
  return impl_->Run(json, json.size() + kPadding, error);
}

Status RecordConverter::ConvertRun(const std::string_view* records, size_t count,
                                   RecordError* error,
                                   const std::function<Status(size_t, bool)>& done) {
  return impl_->ConvertRun(records, count, error, done);
}

}  // namespace icestream::schema
