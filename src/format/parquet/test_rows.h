// Test helper: random Iceberg schemas and rows, shredded into a RecordSink the way the
// converter does (Dremel striping over ShredNode), and rendered as the JSON lines
// json_rows.h prints, by an independent formatter (libc gmtime for dates and times).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "format/parquet/leaf_cursor.h"
#include "format/parquet/record_sink.h"
#include "iceberg/schema/schema.h"

namespace icestream::format::parquet::testing {

// A value: null, a primitive (physical content in i / d / b), or children (struct
// fields in order, list elements, map entries as key, value, key, value...).
struct Value {
  bool null = true;
  int64_t i = 0;  // boolean, int, long, date, time, timestamps, decimal P <= 18 (unscaled)
  double d = 0;   // float, double
  std::string b;  // string, binary, fixed, uuid, decimal P > 18 (big-endian, minimal width)
  std::vector<Value> items;
};

class RowGen {
 public:
  explicit RowGen(uint32_t seed) : rng_(seed) {}

  int Int(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  // A schema with every primitive type, nested structs, lists and maps, optional and
  // required at every level.
  iceberg::Schema Schema(int top_fields) {
    next_id_ = 1;
    iceberg::Schema s;
    for (int i = 0; i < top_fields; ++i)
      s.fields.push_back(Field("c" + std::to_string(i), 0, i < 14 ? i : -1));
    return s;
  }

  Value Row(const iceberg::Schema& s) {
    Value v;
    v.null = false;
    for (const auto& f : s.fields) v.items.push_back(Of(f, 0));
    return v;
  }

  // A value for field f (null only when f is optional).
  Value Of(const iceberg::NestedField& f, int depth) {
    Value v;
    if (!f.required && Chance(0.2)) return v;
    v.null = false;
    const iceberg::Type& t = f.type;
    using iceberg::TypeId;
    switch (t.id) {
      case TypeId::kBoolean:
        v.i = Chance(0.5);
        break;
      case TypeId::kInt:
        v.i = Pick<int64_t>({0, -1, 1, INT32_MIN, INT32_MAX, Int(1000), -Int(100000)});
        break;
      case TypeId::kLong:
      case TypeId::kTime:
      case TypeId::kTimestamp:
      case TypeId::kTimestampTz: {
        v.i = Pick<int64_t>({0, -1, 1, Int(1000), static_cast<int64_t>(rng_()) * 1000003,
                             1700000000123456LL, -86400000001LL, 253402300799999999LL});
        if (t.id == TypeId::kTime) v.i = ((v.i % 86400000000LL) + 86400000000LL) % 86400000000LL;
        if (t.id == TypeId::kLong && Chance(0.1)) v.i = Chance(0.5) ? INT64_MIN : INT64_MAX;
        break;
      }
      case TypeId::kDate:
        v.i = Pick<int64_t>({0, -1, 19000, -719162, 2932896, Int(30000)});
        break;
      case TypeId::kFloat:
        v.d =
            static_cast<float>(Pick<double>({0.0, -0.0, 1.5, -3.25e10, 1e-30, 0.1, NAN, INFINITY}));
        break;
      case TypeId::kDouble:
        v.d = Pick<double>({0.0, 1.0 / 3, -2.5e300, 5e-324, 0.1, NAN, -INFINITY, 123456789.125});
        break;
      case TypeId::kDecimal: {
        // Unscaled value with up to `precision` digits.
        int digits = 1 + Int(t.precision);
        Int128 u = 0;
        for (int k = 0; k < digits; ++k) u = u * 10 + Int(10);
        if (Chance(0.5)) u = -u;
        if (t.precision <= 18) {
          v.i = static_cast<int64_t>(u);
        } else {
          v.b = BigEndian(u, DecimalWidth(t.precision));
        }
        break;
      }
      case TypeId::kString:
        v.b = Pick<std::string>({"", "a", "héllo wörld", "日本語", "🚀 emoji",
                                 "quote \" backslash \\ tab \t nl \n", std::string("\x01\x1f ctl"),
                                 std::string(70, 'x'), "s" + std::to_string(Int(50))});
        break;
      case TypeId::kUuid:
      case TypeId::kFixed:
      case TypeId::kBinary: {
        size_t n = t.id == TypeId::kUuid    ? 16
                   : t.id == TypeId::kFixed ? static_cast<size_t>(t.length)
                                            : static_cast<size_t>(Int(20));
        for (size_t k = 0; k < n; ++k) v.b.push_back(static_cast<char>(Int(256)));
        break;
      }
      case TypeId::kStruct:
        for (const auto& c : t.fields) v.items.push_back(Of(c, depth + 1));
        break;
      case TypeId::kList: {
        int n = Int(depth > 2 ? 2 : 4);
        for (int k = 0; k < n; ++k) v.items.push_back(Of(t.element(), depth + 1));
        break;
      }
      case TypeId::kMap: {
        int n = Int(depth > 2 ? 2 : 4);
        for (int k = 0; k < n; ++k) {
          v.items.push_back(Of(t.key(), depth + 1));
          v.items.push_back(Of(t.value(), depth + 1));
        }
        break;
      }
    }
    return v;
  }

  static int32_t DecimalWidth(int32_t p) {
    int32_t n = 1;
    while (true) {
      // 2^(8n-1) > 10^p ?
      long double lim = 1;
      for (int k = 0; k < 8 * n - 1; ++k) lim *= 2;
      long double ten = 1;
      for (int k = 0; k < p; ++k) ten *= 10;
      if (lim >= ten) return n;
      ++n;
    }
  }
  static std::string BigEndian(Int128 v, int32_t width) {
    std::string out(static_cast<size_t>(width), '\0');
    UInt128 u = static_cast<UInt128>(v);
    for (int k = width - 1; k >= 0; --k) {
      out[static_cast<size_t>(k)] = static_cast<char>(static_cast<uint8_t>(u));
      u >>= 8;
    }
    return out;
  }

 private:
  template <typename T>
  T Pick(std::initializer_list<T> xs) {
    return *(xs.begin() + Int(static_cast<int>(xs.size())));
  }

  iceberg::NestedField Field(std::string name, int depth, int forced_primitive) {
    using iceberg::TypeId;
    iceberg::NestedField f;
    f.id = next_id_++;
    f.name = std::move(name);
    f.required = Chance(0.3);
    f.type = Type(depth, forced_primitive);
    return f;
  }

  iceberg::Type Type(int depth, int forced_primitive) {
    using iceberg::TypeId;
    static const TypeId kPrims[] = {
        TypeId::kBoolean, TypeId::kInt,  TypeId::kLong,  TypeId::kFloat,     TypeId::kDouble,
        TypeId::kDecimal, TypeId::kDate, TypeId::kTime,  TypeId::kTimestamp, TypeId::kTimestampTz,
        TypeId::kString,  TypeId::kUuid, TypeId::kFixed, TypeId::kBinary};
    int r = Int(100);
    if (forced_primitive < 0 && depth < 3 && r < 35) {
      if (r < 15) {
        std::vector<iceberg::NestedField> fields;
        int n = 1 + Int(3);
        for (int i = 0; i < n; ++i) fields.push_back(Field("f" + std::to_string(i), depth + 1, -1));
        return iceberg::Struct(std::move(fields));
      }
      if (r < 27) {
        int id = next_id_++;
        bool req = Chance(0.4);
        return iceberg::List(id, req, Type(depth + 1, -1));
      }
      int kid = next_id_++, vid = next_id_++;
      bool req = Chance(0.4);
      return iceberg::Map(kid, iceberg::Primitive(TypeId::kString), vid, req, Type(depth + 1, -1));
    }
    TypeId id = forced_primitive >= 0 ? kPrims[forced_primitive] : kPrims[Int(14)];
    if (id == TypeId::kDecimal) {
      int p = 1 + Int(38);
      return iceberg::Decimal(p, Int(p + 1));
    }
    if (id == TypeId::kFixed) return iceberg::Fixed(1 + Int(20));
    return iceberg::Primitive(id);
  }

  std::mt19937 rng_;
  int32_t next_id_ = 1;
};

// Dremel striping of one value of node n; `rep` is the repetition level of its first
// entry and `parent_def` the definition level at which its parent is present.
inline void Shred(const ShredNode& n, const Value& v, int16_t rep, int16_t parent_def,
                  RecordSink& sink) {
  if (v.null) {
    for (int l = n.leaf_begin; l < n.leaf_end; ++l) sink.column(l).AddNull(rep, parent_def);
    return;
  }
  using K = ShredNode::Kind;
  switch (n.kind) {
    case K::kPrimitive: {
      ColumnWriter& w = sink.column(n.leaf_begin);
      switch (w.descriptor().physical) {
        case PhysicalType::kBoolean:
          w.AddBool(rep, v.i != 0);
          break;
        case PhysicalType::kInt32:
          w.AddInt32(rep, static_cast<int32_t>(v.i));
          break;
        case PhysicalType::kInt64:
          w.AddInt64(rep, v.i);
          break;
        case PhysicalType::kFloat:
          w.AddFloat(rep, static_cast<float>(v.d));
          break;
        case PhysicalType::kDouble:
          w.AddDouble(rep, v.d);
          break;
        default:
          w.AddBytes(rep, v.b);
          break;
      }
      return;
    }
    case K::kStruct:
      for (size_t i = 0; i < n.children.size(); ++i)
        Shred(n.children[i], v.items[i], rep, n.def, sink);
      return;
    case K::kList:
    case K::kMap: {
      if (v.items.empty()) {
        for (int l = n.leaf_begin; l < n.leaf_end; ++l) sink.column(l).AddNull(rep, n.def);
        return;
      }
      const size_t per = n.kind == K::kList ? 1 : 2;
      for (size_t i = 0; i < v.items.size(); i += per) {
        int16_t r = i == 0 ? rep : n.rep;
        for (size_t k = 0; k < per; ++k)
          Shred(n.children[k], v.items[i + k], r, static_cast<int16_t>(n.def + 1), sink);
      }
      return;
    }
  }
}

inline void ShredRow(const ParquetSchema& s, const Value& row, RecordSink& sink) {
  for (size_t i = 0; i < s.root().children.size(); ++i)
    Shred(s.root().children[i], row.items[i], 0, 0, sink);
}

// ------------------------------------------------------------------ expected JSON
inline void JsonStr(const std::string& s, std::string* out) {
  // The generator's strings are valid UTF-8.
  out->push_back('"');
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '\t') {
      out->append("\\t");
    } else if (c == '\r') {
      out->append("\\r");
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out->append(buf);
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
  out->push_back('"');
}

inline std::string Hex(const std::string& b) {
  std::string h;
  char buf[3];
  for (unsigned char c : b) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    h += buf;
  }
  return h;
}

// gmtime for a date-time; years within 0001..9999 only (the generator stays there,
// apart from timestamps 1e18 us which gmtime handles).
inline std::string DateTime(int64_t seconds, bool with_time) {
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  if (with_time) {
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  } else {
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
  }
  return buf;
}

inline std::string ShortestDouble(double d, bool is_float) {
  if (std::isnan(d)) return "\"NaN\"";
  if (std::isinf(d)) return d > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  // The shortest form that parses back to the same value.
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, d);
    if (is_float ? static_cast<float>(std::strtod(buf, nullptr)) == static_cast<float>(d)
                 : std::strtod(buf, nullptr) == d) {
      break;
    }
  }
  return buf;
}

inline void ExpectedJson(const iceberg::Type& t, const Value& v, std::string* out) {
  using iceberg::TypeId;
  if (v.null) {
    out->append("null");
    return;
  }
  switch (t.id) {
    case TypeId::kBoolean:
      out->append(v.i ? "true" : "false");
      return;
    case TypeId::kInt:
    case TypeId::kLong:
      out->append(std::to_string(v.i));
      return;
    case TypeId::kFloat:
      out->append(ShortestDouble(v.d, true));
      return;
    case TypeId::kDouble:
      out->append(ShortestDouble(v.d, false));
      return;
    case TypeId::kDecimal: {
      Int128 u = v.i;
      if (t.precision > 18) {
        UInt128 x = (static_cast<uint8_t>(v.b[0]) & 0x80) ? ~static_cast<UInt128>(0) : 0;
        for (char c : v.b) x = (x << 8) | static_cast<uint8_t>(c);
        u = static_cast<Int128>(x);
      }
      bool neg = u < 0;
      std::string digits;
      UInt128 a = neg ? -static_cast<UInt128>(u) : static_cast<UInt128>(u);
      do {
        digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(a % 10)));
        a /= 10;
      } while (a != 0);
      while (static_cast<int>(digits.size()) <= t.scale) digits.insert(digits.begin(), '0');
      if (t.scale > 0) digits.insert(digits.end() - t.scale, '.');
      out->append("\"" + std::string(neg ? "-" : "") + digits + "\"");
      return;
    }
    case TypeId::kDate:
      out->append("\"" + DateTime(v.i * 86400, false) + "\"");
      return;
    case TypeId::kTime: {
      char buf[32];
      std::snprintf(
          buf, sizeof buf, "\"%02lld:%02lld:%02lld.%06lld\"",
          static_cast<long long>(v.i / 3600000000LL), static_cast<long long>(v.i / 60000000 % 60),
          static_cast<long long>(v.i / 1000000 % 60), static_cast<long long>(v.i % 1000000));
      out->append(buf);
      return;
    }
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz: {
      int64_t s = v.i / 1000000, us = v.i % 1000000;
      if (us < 0) us += 1000000, --s;
      char frac[16];
      std::snprintf(frac, sizeof frac, ".%06lld", static_cast<long long>(us));
      out->append("\"" + DateTime(s, true) + frac + (t.id == TypeId::kTimestampTz ? "+00:00" : "") +
                  "\"");
      return;
    }
    case TypeId::kString:
      JsonStr(v.b, out);
      return;
    case TypeId::kUuid: {
      std::string h = Hex(v.b);
      out->append("\"" + h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" +
                  h.substr(16, 4) + "-" + h.substr(20) + "\"");
      return;
    }
    case TypeId::kFixed:
    case TypeId::kBinary:
      out->append("\"" + Hex(v.b) + "\"");
      return;
    case TypeId::kStruct: {
      out->push_back('{');
      for (size_t i = 0; i < t.fields.size(); ++i) {
        if (i > 0) out->push_back(',');
        JsonStr(t.fields[i].name, out);
        out->push_back(':');
        ExpectedJson(t.fields[i].type, v.items[i], out);
      }
      out->push_back('}');
      return;
    }
    case TypeId::kList:
      out->push_back('[');
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i > 0) out->push_back(',');
        ExpectedJson(t.element().type, v.items[i], out);
      }
      out->push_back(']');
      return;
    case TypeId::kMap:
      out->push_back('[');
      for (size_t i = 0; i < v.items.size(); i += 2) {
        if (i > 0) out->push_back(',');
        out->append("{\"key\":");
        ExpectedJson(t.key().type, v.items[i], out);
        out->append(",\"value\":");
        ExpectedJson(t.value().type, v.items[i + 1], out);
        out->push_back('}');
      }
      out->push_back(']');
      return;
  }
}

inline std::string ExpectedRow(const iceberg::Schema& s, const Value& row) {
  iceberg::Type root = iceberg::Struct(s.fields);
  std::string out;
  ExpectedJson(root, row, &out);
  return out + "\n";
}

}  // namespace icestream::format::parquet::testing
