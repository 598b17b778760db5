// Iceberg literals and their single-value serialization (Iceberg spec Appendix D).
#include "iceberg/literal.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/uint128.h"

namespace icestream::iceberg {

namespace {

enum class Kind { kBool, kInt32, kInt64, kFloat, kDouble, kBytes, kDecimal, kNone };

Kind KindOf(const Type& t) {
  switch (t.id) {
    case TypeId::kBoolean: return Kind::kBool;
    case TypeId::kInt:
    case TypeId::kDate: return Kind::kInt32;
    case TypeId::kLong:
    case TypeId::kTime:
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz: return Kind::kInt64;
    case TypeId::kFloat: return Kind::kFloat;
    case TypeId::kDouble: return Kind::kDouble;
    case TypeId::kString:
    case TypeId::kUuid:
    case TypeId::kFixed:
    case TypeId::kBinary: return Kind::kBytes;
    case TypeId::kDecimal: return Kind::kDecimal;
    default: return Kind::kNone;
  }
}

size_t AlternativeOf(Kind k) {
  switch (k) {
    case Kind::kBool: return 0;
    case Kind::kInt32: return 1;
    case Kind::kInt64: return 2;
    case Kind::kFloat: return 3;
    case Kind::kDouble: return 4;
    case Kind::kBytes: return 5;
    case Kind::kDecimal: return 6;
    case Kind::kNone: break;
  }
  return 99;
}

// Days since 1970-01-01 -> civil date (Howard Hinnant's algorithm).
void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t yy = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yy + (*m <= 2);
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

std::string DateString(int64_t days) {
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  return fmt::format("{:04}-{:02}-{:02}", y, m, d);
}

std::string TimeString(int64_t micros_of_day) {
  int64_t s = micros_of_day / 1000000, us = micros_of_day % 1000000;
  std::string t = fmt::format("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  if (us) t += fmt::format(".{:06}", us);
  return t;
}

std::string Int128String(int128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  uint128 u = neg ? static_cast<uint128>(-(v + 1)) + 1 : static_cast<uint128>(v);
  std::string s;
  while (u) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  return neg ? "-" + s : s;
}

std::string HexOf(const std::string& b) {
  return crypto::Hex(reinterpret_cast<const uint8_t*>(b.data()), b.size());
}

}  // namespace

bool Literal::operator==(const Literal& other) const {
  return type == other.type && value == other.value;
}

Status CheckLiteral(const Literal& l) {
  Kind k = KindOf(l.type);
  if (k == Kind::kNone) return InvalidArgument("literal of a non-primitive type");
  if (l.value.index() != AlternativeOf(k)) {
    return InvalidArgument("literal value does not match its type " + PrimitiveTypeName(l.type));
  }
  if (l.type.id == TypeId::kUuid && l.as_bytes().size() != 16) {
    return InvalidArgument("uuid literal must be 16 bytes");
  }
  if (l.type.id == TypeId::kFixed && l.as_bytes().size() != static_cast<size_t>(l.type.length)) {
    return InvalidArgument("fixed literal has the wrong length");
  }
  return Status::OK();
}

std::string DecimalToBytes(int128 v) {
  // Big-endian two's complement, then drop redundant leading sign bytes.
  unsigned char buf[16];
  auto u = static_cast<uint128>(v);
  for (int i = 15; i >= 0; --i) {
    buf[i] = static_cast<unsigned char>(u & 0xFF);
    u >>= 8;
  }
  int start = 0;
  while (start < 15) {
    bool redundant = (buf[start] == 0x00 && (buf[start + 1] & 0x80) == 0) ||
                     (buf[start] == 0xFF && (buf[start + 1] & 0x80) != 0);
    if (!redundant) break;
    ++start;
  }
  return std::string(reinterpret_cast<const char*>(buf + start), 16 - start);
}

int DecimalRequiredBytes(int32_t precision) {
  // Iceberg Java's formula: ceil((log2(10^P - 1) + 1) / 8).
  double bits = std::log2(std::pow(10.0, precision) - 1) + 1;
  return static_cast<int>(std::ceil(bits / 8));
}

std::string ToBytes(const Literal& l) {
  std::string out;
  switch (KindOf(l.type)) {
    case Kind::kBool: out.push_back(std::get<bool>(l.value) ? '\x01' : '\x00'); break;
    case Kind::kInt32: AppendFixed32(&out, static_cast<uint32_t>(l.as_int())); break;
    case Kind::kInt64: AppendFixed64(&out, static_cast<uint64_t>(l.as_long())); break;
    case Kind::kFloat: {
      uint32_t bits;
      float f = std::get<float>(l.value);
      std::memcpy(&bits, &f, 4);
      AppendFixed32(&out, bits);
      break;
    }
    case Kind::kDouble: {
      uint64_t bits;
      double d = std::get<double>(l.value);
      std::memcpy(&bits, &d, 8);
      AppendFixed64(&out, bits);
      break;
    }
    case Kind::kBytes: out = l.as_bytes(); break;
    case Kind::kDecimal: out = DecimalToBytes(l.as_decimal()); break;
    case Kind::kNone: break;
  }
  return out;
}

Result<Literal> FromBytes(const Type& type, std::string_view b) {
  Literal l;
  l.type = type;
  auto wrong = [&] {
    return InvalidArgument(fmt::format("{} bytes are not a {} value", b.size(),
                                       type.is_primitive() ? PrimitiveTypeName(type) : "nested"));
  };
  switch (KindOf(type)) {
    case Kind::kBool:
      if (b.size() != 1) return wrong();
      l.value = b[0] != 0;
      return l;
    case Kind::kInt32:
      if (b.size() != 4) return wrong();
      l.value = static_cast<int32_t>(GetFixed32(b.data()));
      return l;
    case Kind::kInt64:
      if (b.size() == 4) {  // written before an int -> long promotion
        l.value = static_cast<int64_t>(static_cast<int32_t>(GetFixed32(b.data())));
        return l;
      }
      if (b.size() != 8) return wrong();
      l.value = static_cast<int64_t>(GetFixed64(b.data()));
      return l;
    case Kind::kFloat: {
      if (b.size() != 4) return wrong();
      uint32_t bits = GetFixed32(b.data());
      float f;
      std::memcpy(&f, &bits, 4);
      l.value = f;
      return l;
    }
    case Kind::kDouble: {
      if (b.size() == 4) {  // float -> double promotion
        uint32_t bits = GetFixed32(b.data());
        float f;
        std::memcpy(&f, &bits, 4);
        l.value = static_cast<double>(f);
        return l;
      }
      if (b.size() != 8) return wrong();
      uint64_t bits = GetFixed64(b.data());
      double d;
      std::memcpy(&d, &bits, 8);
      l.value = d;
      return l;
    }
    case Kind::kBytes:
      if (type.id == TypeId::kUuid && b.size() != 16) return wrong();
      if (type.id == TypeId::kFixed && b.size() != static_cast<size_t>(type.length)) return wrong();
      l.value = std::string(b);
      return l;
    case Kind::kDecimal: {
      if (b.empty() || b.size() > 16) return wrong();
      uint128 u = (static_cast<unsigned char>(b[0]) & 0x80) ? ~static_cast<uint128>(0) : 0;
      for (unsigned char c : b) u = (u << 8) | c;
      l.value = static_cast<int128>(u);
      return l;
    }
    case Kind::kNone: break;
  }
  return wrong();
}

int Compare(const Literal& a, const Literal& b) {
  auto cmp = [](auto x, auto y) { return x < y ? -1 : (y < x ? 1 : 0); };
  switch (KindOf(a.type)) {
    case Kind::kBool: return cmp(std::get<bool>(a.value), std::get<bool>(b.value));
    case Kind::kInt32: return cmp(a.as_int(), b.as_int());
    case Kind::kInt64: return cmp(a.as_long(), b.as_long());
    case Kind::kFloat: {
      float x = std::get<float>(a.value), y = std::get<float>(b.value);
      if (x == y && x == 0) return cmp(!std::signbit(x), !std::signbit(y));
      return cmp(x, y);
    }
    case Kind::kDouble: {
      double x = std::get<double>(a.value), y = std::get<double>(b.value);
      if (x == y && x == 0) return cmp(!std::signbit(x), !std::signbit(y));
      return cmp(x, y);
    }
    case Kind::kBytes: {
      int c = a.as_bytes().compare(b.as_bytes());  // char_traits<char> compares as unsigned
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    case Kind::kDecimal: return cmp(a.as_decimal(), b.as_decimal());
    case Kind::kNone: break;
  }
  return 0;
}

std::string ToHumanString(const Literal& l) {
  switch (l.type.id) {
    case TypeId::kBoolean: return std::get<bool>(l.value) ? "true" : "false";
    case TypeId::kInt: return std::to_string(l.as_int());
    case TypeId::kLong: return std::to_string(l.as_long());
    case TypeId::kFloat: return fmt::format("{}", std::get<float>(l.value));
    case TypeId::kDouble: return fmt::format("{}", std::get<double>(l.value));
    case TypeId::kDate: return DateString(l.as_int());
    case TypeId::kTime: return TimeString(l.as_long());
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz: {
      int64_t us = l.as_long();
      int64_t days = FloorDiv(us, 86400000000LL);
      int64_t rest = us - days * 86400000000LL;
      std::string s = DateString(days) + "T" + TimeString(rest);
      if (rest % 1000000 == 0) s += ".000000";
      if (l.type.id == TypeId::kTimestampTz) s += "+00:00";
      return s;
    }
    case TypeId::kString: return l.as_bytes();
    case TypeId::kUuid: {
      std::string h = HexOf(l.as_bytes());
      if (h.size() != 32) return h;
      return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
             "-" + h.substr(20);
    }
    case TypeId::kFixed:
    case TypeId::kBinary: return HexOf(l.as_bytes());
    case TypeId::kDecimal: {
      std::string digits = Int128String(l.as_decimal());
      bool neg = !digits.empty() && digits[0] == '-';
      if (neg) digits.erase(0, 1);
      int scale = l.type.scale;
      if (scale > 0) {
        if (digits.size() <= static_cast<size_t>(scale)) {
          digits.insert(0, static_cast<size_t>(scale) + 1 - digits.size(), '0');
        }
        digits.insert(digits.size() - static_cast<size_t>(scale), ".");
      }
      return neg ? "-" + digits : digits;
    }
    default: return "?";
  }
}

}  // namespace icestream::iceberg
