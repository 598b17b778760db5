// Partition transforms (Iceberg spec "Partition Transforms", Appendix B).
#include "iceberg/transform.h"

#include <charconv>

#include <fmt/format.h>

#include "common/bytes.h"

namespace icestream::iceberg {

namespace {

constexpr int64_t kMicrosPerHour = 3600LL * 1000000;
constexpr int64_t kMicrosPerDay = 24 * kMicrosPerHour;

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t FloorMod(int64_t a, int64_t b) { return a - FloorDiv(a, b) * b; }

// Civil date from days since the epoch (Howard Hinnant).
void CivilFromDays(int64_t z, int64_t* y, int64_t* m) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yoe + era * 400 + (*m <= 2);
}

int64_t DaysOf(const Literal& v) {
  if (v.type.id == TypeId::kDate) return v.as_int();
  return FloorDiv(v.as_long(), kMicrosPerDay);
}

bool IsTemporal(TypeId id) {
  return id == TypeId::kDate || id == TypeId::kTimestamp || id == TypeId::kTimestampTz;
}

Result<int32_t> Param(std::string_view name, std::string_view prefix) {
  std::string_view inner = name.substr(prefix.size(), name.size() - prefix.size() - 1);
  while (!inner.empty() && inner.front() == ' ') inner.remove_prefix(1);
  while (!inner.empty() && inner.back() == ' ') inner.remove_suffix(1);
  int32_t v = 0;
  auto [p, ec] = std::from_chars(inner.data(), inner.data() + inner.size(), v);
  if (ec != std::errc() || p != inner.data() + inner.size() || v <= 0) {
    return InvalidArgument("transform '" + std::string(name) + "' needs a positive integer parameter");
  }
  return v;
}

std::string DateText(int64_t days) { return ToHumanString(Literal::Date(static_cast<int32_t>(days))); }

}  // namespace

std::string TransformName(const Transform& t) {
  switch (t.kind) {
    case TransformKind::kIdentity: return "identity";
    case TransformKind::kBucket: return fmt::format("bucket[{}]", t.param);
    case TransformKind::kTruncate: return fmt::format("truncate[{}]", t.param);
    case TransformKind::kYear: return "year";
    case TransformKind::kMonth: return "month";
    case TransformKind::kDay: return "day";
    case TransformKind::kHour: return "hour";
    case TransformKind::kVoid: return "void";
    case TransformKind::kUnknown: return t.unknown_name;
  }
  return "";
}

Result<Transform> ParseTransform(std::string_view name) {
  if (name == "identity") return Transform::Identity();
  if (name == "year") return Transform::Year();
  if (name == "month") return Transform::Month();
  if (name == "day") return Transform::Day();
  if (name == "hour") return Transform::Hour();
  if (name == "void") return Transform::Void();
  if (name.size() > 8 && name.substr(0, 7) == "bucket[" && name.back() == ']') {
    ASSIGN_OR_RETURN(int32_t n, Param(name, "bucket["));
    return Transform::Bucket(n);
  }
  if (name.size() > 10 && name.substr(0, 9) == "truncate[" && name.back() == ']') {
    ASSIGN_OR_RETURN(int32_t w, Param(name, "truncate["));
    return Transform::Truncate(w);
  }
  if (name.empty()) return InvalidArgument("empty transform name");
  Transform t;
  t.kind = TransformKind::kUnknown;
  t.unknown_name = std::string(name);
  return t;
}

Result<Type> TransformResultType(const Transform& t, const Type& source) {
  auto refuse = [&] {
    return InvalidArgument(fmt::format("transform {} does not apply to type {}", TransformName(t),
                                       source.is_primitive() ? PrimitiveTypeName(source) : "nested"));
  };
  if (!source.is_primitive()) return refuse();
  switch (t.kind) {
    case TransformKind::kIdentity:
    case TransformKind::kVoid: return source;
    case TransformKind::kBucket:
      switch (source.id) {
        case TypeId::kInt:
        case TypeId::kLong:
        case TypeId::kDecimal:
        case TypeId::kDate:
        case TypeId::kTime:
        case TypeId::kTimestamp:
        case TypeId::kTimestampTz:
        case TypeId::kString:
        case TypeId::kUuid:
        case TypeId::kFixed:
        case TypeId::kBinary: return Primitive(TypeId::kInt);
        default: return refuse();
      }
    case TransformKind::kTruncate:
      switch (source.id) {
        case TypeId::kInt:
        case TypeId::kLong:
        case TypeId::kDecimal:
        case TypeId::kString:
        case TypeId::kBinary: return source;
        default: return refuse();
      }
    case TransformKind::kYear:
    case TransformKind::kMonth:
      if (!IsTemporal(source.id)) return refuse();
      return Primitive(TypeId::kInt);
    case TransformKind::kDay:
      if (!IsTemporal(source.id)) return refuse();
      return Primitive(TypeId::kDate);
    case TransformKind::kHour:
      if (source.id != TypeId::kTimestamp && source.id != TypeId::kTimestampTz) return refuse();
      return Primitive(TypeId::kInt);
    case TransformKind::kUnknown: return refuse();
  }
  return refuse();
}

uint32_t Murmur3_32(std::string_view data, uint32_t seed) {
  const uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
  uint32_t h = seed;
  const size_t nblocks = data.size() / 4;
  auto rotl = [](uint32_t x, int r) { return (x << r) | (x >> (32 - r)); };
  for (size_t i = 0; i < nblocks; ++i) {
    uint32_t k = GetFixed32(data.data() + 4 * i);
    k *= c1;
    k = rotl(k, 15);
    k *= c2;
    h ^= k;
    h = rotl(h, 13);
    h = h * 5 + 0xe6546b64;
  }
  const auto* tail = reinterpret_cast<const unsigned char*>(data.data() + 4 * nblocks);
  uint32_t k = 0;
  switch (data.size() & 3) {
    case 3: k ^= uint32_t{tail[2]} << 16; [[fallthrough]];
    case 2: k ^= uint32_t{tail[1]} << 8; [[fallthrough]];
    case 1:
      k ^= tail[0];
      k *= c1;
      k = rotl(k, 15);
      k *= c2;
      h ^= k;
  }
  h ^= static_cast<uint32_t>(data.size());
  h ^= h >> 16;
  h *= 0x85ebca6b;
  h ^= h >> 13;
  h *= 0xc2b2ae35;
  h ^= h >> 16;
  return h;
}

int32_t BucketHash(const Literal& v) {
  std::string bytes;
  switch (v.type.id) {
    case TypeId::kInt:
    case TypeId::kDate: AppendFixed64(&bytes, static_cast<uint64_t>(static_cast<int64_t>(v.as_int()))); break;
    case TypeId::kLong:
    case TypeId::kTime:
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz: AppendFixed64(&bytes, static_cast<uint64_t>(v.as_long())); break;
    case TypeId::kDecimal: bytes = DecimalToBytes(v.as_decimal()); break;
    default: bytes = v.as_bytes(); break;  // string, uuid, fixed, binary
  }
  return static_cast<int32_t>(Murmur3_32(bytes));
}

Result<std::optional<Literal>> ApplyTransform(const Transform& t, const std::optional<Literal>& v) {
  if (!v) return std::optional<Literal>();
  ASSIGN_OR_RETURN(Type result, TransformResultType(t, v->type));
  switch (t.kind) {
    case TransformKind::kIdentity: return v;
    case TransformKind::kVoid: return std::optional<Literal>();
    case TransformKind::kBucket: {
      int32_t h = BucketHash(*v);
      return std::optional<Literal>(Literal::Int((h & 0x7FFFFFFF) % t.param));
    }
    case TransformKind::kTruncate: {
      const int64_t w = t.param;
      switch (v->type.id) {
        case TypeId::kInt: {
          int64_t x = v->as_int();
          return std::optional<Literal>(Literal::Int(static_cast<int32_t>(x - FloorMod(x, w))));
        }
        case TypeId::kLong: {
          int64_t x = v->as_long();
          return std::optional<Literal>(Literal::Long(x - FloorMod(x, w)));
        }
        case TypeId::kDecimal: {
          int128 x = v->as_decimal();
          int128 r = ((x % w) + w) % w;
          return std::optional<Literal>(Literal{v->type, x - r});
        }
        case TypeId::kString: {
          // First W code points of UTF-8 text.
          const std::string& s = v->as_bytes();
          size_t i = 0;
          for (int64_t cp = 0; i < s.size() && cp < w; ++cp) {
            ++i;
            while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
          }
          return std::optional<Literal>(Literal::String(s.substr(0, i)));
        }
        case TypeId::kBinary:
          return std::optional<Literal>(Literal::Binary(v->as_bytes().substr(
              0, std::min<size_t>(v->as_bytes().size(), static_cast<size_t>(w)))));
        default: break;
      }
      return InvalidArgument("truncate: unsupported type");
    }
    case TransformKind::kYear:
    case TransformKind::kMonth: {
      int64_t y, m;
      CivilFromDays(DaysOf(*v), &y, &m);
      int64_t r = t.kind == TransformKind::kYear ? y - 1970 : (y - 1970) * 12 + (m - 1);
      return std::optional<Literal>(Literal::Int(static_cast<int32_t>(r)));
    }
    case TransformKind::kDay:
      return std::optional<Literal>(Literal::Date(static_cast<int32_t>(DaysOf(*v))));
    case TransformKind::kHour:
      return std::optional<Literal>(
          Literal::Int(static_cast<int32_t>(FloorDiv(v->as_long(), kMicrosPerHour))));
    case TransformKind::kUnknown: break;
  }
  (void)result;
  return InvalidArgument("cannot apply transform " + TransformName(t));
}

std::string TransformHumanString(const Transform& t, const std::optional<Literal>& v) {
  if (!v) return "null";
  switch (t.kind) {
    case TransformKind::kYear: return fmt::format("{:04}", 1970 + v->as_int());
    case TransformKind::kMonth: {
      int64_t months = v->as_int();
      int64_t y = 1970 + FloorDiv(months, 12), m = FloorMod(months, 12) + 1;
      return fmt::format("{:04}-{:02}", y, m);
    }
    case TransformKind::kDay:
      // Written as date by the spec, as int by some older writers.
      return DateText(v->value.index() == 1 ? v->as_int() : v->as_long());
    case TransformKind::kHour: {
      int64_t hours = v->as_int();
      return DateText(FloorDiv(hours, 24)) + fmt::format("-{:02}", FloorMod(hours, 24));
    }
    default: return ToHumanString(*v);
  }
}

}  // namespace icestream::iceberg
