// Record assembly (parquet-format README "Nested Encoding", the Dremel assembly) into
// JSON lines.
#include "format/parquet/json_rows.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace icestream::format::parquet {
namespace {

using iceberg::TypeId;

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out->append("\\\"");
          break;
        case '\\':
          out->append("\\\\");
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
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out->append(buf);
          } else {
            out->push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence is copied; anything else becomes U+FFFD.
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    bool ok = len > 0 && c <= 0xF4 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k)
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && len == 3) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
    }
    if (ok && len == 4) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out->append(s.substr(i, len));
      i += len;
    } else {
      out->append("\xEF\xBF\xBD");
      ++i;
    }
  }
  out->push_back('"');
}

void AppendHex(std::string_view b, std::string* out) {
  static const char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : b) {
    out->push_back(kHex[static_cast<uint8_t>(c) >> 4]);
    out->push_back(kHex[static_cast<uint8_t>(c) & 15]);
  }
  out->push_back('"');
}

template <typename F>
void AppendFloat(F v, std::string* out) {
  if (std::isnan(v)) {
    out->append("\"NaN\"");
  } else if (std::isinf(v)) {
    out->append(v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  } else {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out->append(buf, r.ptr);
  }
}

void AppendInt128(Int128 v, int scale, std::string* out) {
  bool neg = v < 0;
  UInt128 u = neg ? -static_cast<UInt128>(v) : static_cast<UInt128>(v);
  std::string digits;
  do {
    digits.push_back(static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  } while (u != 0);
  while (static_cast<int>(digits.size()) <= scale) digits.push_back('0');
  out->push_back('"');
  if (neg) out->push_back('-');
  for (size_t i = digits.size(); i-- > 0;) {
    out->push_back(digits[i]);
    if (scale > 0 && i == static_cast<size_t>(scale)) out->push_back('.');
  }
  out->push_back('"');
}

// Days since 1970-01-01 -> proleptic Gregorian civil date (the era-based algorithm:
// 400-year eras of 146097 days, years starting in March).
void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2 ? 1 : 0);
}

void AppendDate(int64_t days, std::string* out) {
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s%04lld-%02u-%02u", y < 0 ? "-" : "",
                static_cast<long long>(y < 0 ? -y : y), m, d);
  out->append(buf);
}

void AppendTimeOfDay(int64_t micros, std::string* out) {
  char buf[40];
  std::snprintf(
      buf, sizeof buf, "%02lld:%02lld:%02lld.%06lld", static_cast<long long>(micros / 3600000000LL),
      static_cast<long long>(micros / 60000000LL % 60),
      static_cast<long long>(micros / 1000000LL % 60), static_cast<long long>(micros % 1000000LL));
  out->append(buf);
}

class Printer {
 public:
  Printer(RowGroupCursors* cursors, std::string* out) : c_(cursors), out_(out) {}

  Status Record(const ShredNode& root) {
    out_->push_back('{');
    bool first = true;
    for (const ShredNode& f : root.children) {
      if (!first) out_->push_back(',');
      first = false;
      AppendJsonString(f.name, out_);
      out_->push_back(':');
      RETURN_IF_ERROR(Node(f));
    }
    out_->append("}\n");
    for (const LeafCursor& l : c_->leaves) {
      if (!l.done() && l.rep() != 0)
        return Corruption("parquet: columns disagree on the shape of a record");
    }
    return Status::OK();
  }

 private:
  LeafCursor* First(const ShredNode& n) {
    LeafCursor& l = c_->leaves[static_cast<size_t>(n.leaf_begin)];
    return l.done() ? nullptr : &l;
  }
  // The node is null or empty at this slot: one entry per leaf below it.
  Status Skip(const ShredNode& n) {
    for (int i = n.leaf_begin; i < n.leaf_end; ++i) {
      LeafCursor& l = c_->leaves[static_cast<size_t>(i)];
      if (l.done()) return Corruption("parquet: a column ends inside a record");
      l.Next();
    }
    return Status::OK();
  }

  Status Node(const ShredNode& n) {
    LeafCursor* f = First(n);
    if (f == nullptr) return Corruption("parquet: a column ends inside a record");
    const int16_t d = f->def();
    if (n.kind == ShredNode::Kind::kPrimitive) {
      if (d < n.def) {
        out_->append("null");
      } else {
        RETURN_IF_ERROR(Value(n, *f));
      }
      f->Next();
      return Status::OK();
    }
    if (d < n.def) {
      out_->append("null");
      return Skip(n);
    }
    if (n.kind == ShredNode::Kind::kStruct) {
      out_->push_back('{');
      for (size_t i = 0; i < n.children.size(); ++i) {
        if (i > 0) out_->push_back(',');
        AppendJsonString(n.children[i].name, out_);
        out_->push_back(':');
        RETURN_IF_ERROR(Node(n.children[i]));
      }
      out_->push_back('}');
      return Status::OK();
    }
    if (d == n.def) {  // empty list or map
      out_->append("[]");
      return Skip(n);
    }
    out_->push_back('[');
    for (bool first = true;; first = false) {
      if (!first) out_->push_back(',');
      if (n.kind == ShredNode::Kind::kList) {
        RETURN_IF_ERROR(Node(n.children[0]));
      } else {
        out_->append("{\"key\":");
        RETURN_IF_ERROR(Node(n.children[0]));
        out_->append(",\"value\":");
        RETURN_IF_ERROR(Node(n.children[1]));
        out_->push_back('}');
      }
      f = First(n);
      if (f == nullptr || f->rep() != n.rep) break;
    }
    out_->push_back(']');
    return Status::OK();
  }

  Status Value(const ShredNode& n, const LeafCursor& c) {
    if (!c.ValueFits()) return Corruption("parquet: a decimal does not fit its type");
    const iceberg::Type& t = *n.type;
    char scratch[16];
    switch (t.id) {
      case TypeId::kBoolean:
        out_->append(c.Bool() ? "true" : "false");
        break;
      case TypeId::kInt:
        out_->append(std::to_string(c.Int32()));
        break;
      case TypeId::kLong:
        out_->append(std::to_string(c.Int64()));
        break;
      case TypeId::kFloat:
        AppendFloat(c.Float(), out_);
        break;
      case TypeId::kDouble:
        AppendFloat(c.Double(), out_);
        break;
      case TypeId::kDecimal: {
        Int128 v = 0;
        if (t.precision <= 9) {
          v = c.Int32();
        } else if (t.precision <= 18) {
          v = c.Int64();
        } else {
          std::string_view b = c.Bytes(scratch);
          UInt128 u =
              !b.empty() && (static_cast<uint8_t>(b[0]) & 0x80) ? ~static_cast<UInt128>(0) : 0;
          for (char ch : b) u = (u << 8) | static_cast<uint8_t>(ch);
          v = static_cast<Int128>(u);
        }
        AppendInt128(v, t.scale, out_);
        break;
      }
      case TypeId::kDate:
        out_->push_back('"');
        AppendDate(c.Int32(), out_);
        out_->push_back('"');
        break;
      case TypeId::kTime: {
        int64_t us = c.Int64();
        out_->push_back('"');
        AppendTimeOfDay(((us % 86400000000LL) + 86400000000LL) % 86400000000LL, out_);
        out_->push_back('"');
        break;
      }
      case TypeId::kTimestamp:
      case TypeId::kTimestampTz: {
        const int64_t us = c.Int64();
        const int64_t day_us = 86400000000LL;
        int64_t days = us / day_us, rest = us % day_us;
        if (rest < 0) rest += day_us, --days;
        out_->push_back('"');
        AppendDate(days, out_);
        out_->push_back('T');
        AppendTimeOfDay(rest, out_);
        if (t.id == TypeId::kTimestampTz) out_->append("+00:00");
        out_->push_back('"');
        break;
      }
      case TypeId::kString:
        AppendJsonString(c.Bytes(scratch), out_);
        break;
      case TypeId::kUuid: {
        std::string hex;
        AppendHex(c.Bytes(scratch), &hex);  // "32 hex digits"
        if (hex.size() != 34) return Corruption("parquet: uuid not 16 bytes");
        out_->append(hex.substr(0, 9) + "-" + hex.substr(9, 4) + "-" + hex.substr(13, 4) + "-" +
                     hex.substr(17, 4) + "-" + hex.substr(21));
        break;
      }
      case TypeId::kFixed:
      case TypeId::kBinary:
        AppendHex(c.Bytes(scratch), out_);
        break;
      default:
        return Internal("nested type at a leaf");
    }
    return Status::OK();
  }

  RowGroupCursors* c_;
  std::string* out_;
};

}  // namespace

Status AppendJsonRows(const ParquetFileReader& reader, int row_group, const ParquetSchema& target,
                      std::string* out) {
  if (row_group < 0 || row_group >= reader.num_row_groups())
    return InvalidArgument("no row group " + std::to_string(row_group));
  ASSIGN_OR_RETURN(std::vector<LeafPlan> plans, PlanCopy(reader.schema(), target));
  RowGroupCursors cursors;
  RETURN_IF_ERROR(reader.OpenRowGroup(row_group, target, plans, &cursors));
  Printer p(&cursors, out);
  for (int64_t row = 0; row < cursors.num_rows; ++row) {
    RETURN_IF_ERROR(p.Record(target.root()));
  }
  return Status::OK();
}

Status AppendJsonRows(const ParquetFileReader& reader, int row_group, std::string* out) {
  if (row_group < 0 || row_group >= reader.num_row_groups())
    return InvalidArgument("no row group " + std::to_string(row_group));
  const ParquetSchema* schema = reader.schema().parquet_schema();
  if (schema == nullptr) {
    if (reader.metadata().row_groups[static_cast<size_t>(row_group)].num_rows == 0)
      return Status::OK();
    return Unimplemented("parquet: the file has no column this reader can read");
  }
  return AppendJsonRows(reader, row_group, *schema, out);
}

}  // namespace icestream::format::parquet
