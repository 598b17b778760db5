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
#include "schema/converter_node.h"
#include "schema/scalar_writer.h"
#include "schema/token_walker.h"
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

using Node = ConverterNode;

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
  std::unique_ptr<TokenWalker> walker;  // the fast walk (token_walker.h)
  std::string padded;                   // Convert(): a padded copy of the record
  ScalarContext ctx;                    // the record's routed value; scratch for base64
  // Error state of the record being converted.
  RecordErrorCode code = RecordErrorCode::kMalformedJson;
  std::string message;
  std::vector<std::string> path_rev;
  // Routing: the range of values this sink takes (the record's value is ctx.routed).
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
      n->write_fast = FastWriterFor(*n);
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
      int idx = LookupRawKey(n, f.key().raw(), hint);
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
    if (auto e = v.get_int64().get(x)) {
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
    if (n.route) ctx.routed = x;
    return true;
  }

  // float and double hold the nearest value of their type (IEEE rounding, read from the
  // text directly for float: no double rounding); a number beyond the type's range, or a
  // non-zero one that would become 0, is refused.
  bool Floating(const Node& n, od::value& v, int16_t rep) {
    double d;
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
        (!ParseNumberToDouble(TrimRight(tok), &as_double) ||
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

  // Whether a JSON value of kind `t` may be a member of an enum with a declared type.
  static bool EnumKindAllowed(const FieldConstraints& c, od::json_type t) {
    if (c.enum_type.empty()) return true;
    if (c.enum_type == "string") return t == od::json_type::string;
    if (c.enum_type == "integer" || c.enum_type == "number") return t == od::json_type::number;
    if (c.enum_type == "boolean") return t == od::json_type::boolean;
    return true;
  }

  bool Primitive(const Node& n, od::value& v, od::json_type t, int16_t rep) {
    // The usual values the same way as the token walk writes them; the rest (and every
    // refusal, with its reason) below. The token is followed by the record's padding.
    if (WriteScalarFast(n, TrimRight(v.raw_json_token()), rep, &ctx)) return true;
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
          if (ParseNumberToDouble(tok, &d)) {
            for (double e : n.constraints->enum_numbers) listed = listed || e == d;
          }
        } else {
          listed = ListedString(n.constraints->enum_json_values, tok);
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
        if (n.constraints->has_enum && !ListedString(n.constraints->enum_values, s)) {
          return Fail(RecordErrorCode::kValueOutOfRange, "value is not one of the enum values");
        }
        n.column->AddBytes(rep, s);
        return true;
      case TypeId::kDate: {
        int32_t days;
        if (!parsed(ParseDate(s, &days), "an RFC 3339 date (YYYY-MM-DD)")) return false;
        n.column->AddInt32(rep, days);
        if (n.route) ctx.routed = days;
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
        if (n.route) ctx.routed = us;
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
        ctx.scratch.resize(*size);
        if (!base64::DecodeTo(s, reinterpret_cast<uint8_t*>(ctx.scratch.data()))) {
          return Fail(RecordErrorCode::kTypeMismatch, "not base64");
        }
        std::string_view bytes(ctx.scratch.data(), *size);
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
    ctx.routed.reset();
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
        (!ctx.routed || *ctx.routed < route_lo || *ctx.routed >= route_hi)) {
      writer->AbortRecord();
      error->code = RecordErrorCode::kOutsideRoute;
      error->path = "$";
      error->message = "the record belongs to another route";
      error->route_value = ctx.routed;
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
  // worth of per-call overhead; after a window stage 1 refused (see ConvertRun), the
  // next one starts at 4 KiB and doubles with each clean window, so that input with many
  // bad records does not index the same bytes again and again.
  static constexpr size_t kMaxWindow = TokenWalker::kCapacity;
  static constexpr size_t kMinWindow = 4 << 10;

  static bool JsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

  // Whether record b follows record a in the same buffer, at most 8 bytes after it (a line
  // end, blank lines): then both can be in one window. The bytes between are not read here
  // (that cost a cache miss per record ahead of stage 1: 2.6% of a double convert's CPU),
  // and need not be whitespace: the walk takes a record from its own tokens alone, the
  // first of them at the record's first byte.
  static bool Adjacent(std::string_view a, std::string_view b) {
    const char* gap = a.data() + a.size();
    return b.data() >= gap && b.data() - gap <= 8;
  }

  // Converts a record the walker has indexed (its first token is at `begin`, in the
  // indexed text at `base`): by the token walk, or when the walk declines it, rolled back
  // and converted the full way (Run), whose result is the record's.
  Result<bool> Walked(std::string_view record, const char* base, RecordError* error) {
    path_rev.clear();
    ctx.routed.reset();
    const char* begin = Start(record);
    const auto end = static_cast<size_t>(record.data() + record.size() - base);
    if (begin < record.data() + record.size() &&
        walker->SeekToken(static_cast<size_t>(begin - base)) && walker->Record(end, &ctx)) {
      return Finish(true, error);
    }
    writer->AbortRecord();
    return Run(record, record.size() + kPadding, error);
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
      const size_t len = static_cast<size_t>(records[j - 1].data() + records[j - 1].size() - begin);
      if (!options.token_walk || !walker->Index(begin, len)) {
        // Stage 1 refused the window (bad UTF-8, an unclosed string, a record too large
        // for a window): each record the full way, and the next window smaller.
        for (size_t k = i; k < j; ++k) {
          ASSIGN_OR_RETURN(bool ok, Run(records[k], records[k].size() + kPadding, error));
          RETURN_IF_ERROR(done(k, ok));
        }
        window = kMinWindow;
        i = j;
        continue;
      }
      // A record the walk declines leaves the index good for the next one when that one's
      // first token is where its text starts (then stage 1 was outside any string there:
      // it reads the rest as it would on its own); Walked checks that per record.
      for (size_t k = i; k < j; ++k) {
        ASSIGN_OR_RETURN(bool ok, Walked(records[k], begin, error));
        RETURN_IF_ERROR(done(k, ok));
      }
      window = std::min(window * 2, kMaxWindow);
      i = j;
    }
    return Status::OK();
  }

  // One record: by the token walk when it fits a window, else (or when declined) the
  // full way.
  Result<bool> ConvertOne(std::string_view json, size_t capacity, RecordError* error) {
    if (!options.token_walk || !walker->Index(json.data(), json.size())) {
      return Run(json, capacity, error);
    }
    return Walked(json, json.data(), error);
  }

  // Where a record's first token is (after its leading whitespace).
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
  impl->walker = std::make_unique<TokenWalker>(&impl->root, writer, impl->options.max_record_depth);
  return std::unique_ptr<RecordConverter>(new RecordConverter(std::move(impl)));
}

Result<bool> RecordConverter::Convert(std::string_view json, RecordError* error) {
  impl_->padded.assign(json);
  impl_->padded.append(kPadding, '\0');
  return impl_->ConvertOne(std::string_view(impl_->padded.data(), json.size()),
                           impl_->padded.size(), error);
}

void RecordConverter::SetRoute(int64_t lo, int64_t hi) {
  impl_->route_lo = lo;
  impl_->route_hi = hi;
}

Result<bool> RecordConverter::ConvertPadded(std::string_view json, RecordError* error) {
  return impl_->ConvertOne(json, json.size() + kPadding, error);
}

Status RecordConverter::ConvertRun(const std::string_view* records, size_t count,
                                   RecordError* error,
                                   const std::function<Status(size_t, bool)>& done) {
  return impl_->ConvertRun(records, count, error, done);
}

}  // namespace icestream::schema
