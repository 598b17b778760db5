// Column statistics and bound truncation.
#include "format/parquet/statistics.h"

#include <cmath>
#include <cstring>

#include "common/bytes.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace icestream::format::parquet {

using iceberg::TypeId;

namespace {

std::string Le32(int32_t v) {
  std::string s(4, '\0');
  PutFixed32(s.data(), static_cast<uint32_t>(v));
  return s;
}

std::string Le64(int64_t v) {
  std::string s(8, '\0');
  PutFixed64(s.data(), static_cast<uint64_t>(v));
  return s;
}

std::string LeFloat(float v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return s;
}

std::string LeDouble(double v) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &v, 8);
  return s;
}

// Big-endian two's complement of an int64.
std::string Be64(int64_t v) {
  std::string s(8, '\0');
  for (int i = 7; i >= 0; --i) {
    s[i] = static_cast<char>(v & 0xFF);
    v >>= 8;
  }
  return s;
}

size_t Utf8SeqLen(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 6) return 2;
  if ((c >> 4) == 14) return 3;
  return 4;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

uint32_t DecodeUtf8(std::string_view s) {
  auto c = static_cast<unsigned char>(s[0]);
  size_t n = Utf8SeqLen(c);
  uint32_t cp = n == 1 ? c : c & (0x7F >> n);
  for (size_t i = 1; i < n && i < s.size(); ++i)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i]) & 0x3F);
  return cp;
}

// Byte length of the longest prefix within the limits, on a code point boundary.
size_t Utf8PrefixBytes(std::string_view s, size_t max_code_points, size_t max_bytes) {
  size_t pos = 0, cps = 0;
  while (pos < s.size() && cps < max_code_points) {
    size_t n = Utf8SeqLen(static_cast<unsigned char>(s[pos]));
    if (pos + n > max_bytes) break;
    pos += n;
    ++cps;
  }
  return pos;
}

}  // namespace

std::string TruncateUtf8Lower(std::string_view s, size_t max_code_points, size_t max_bytes) {
  return std::string(s.substr(0, Utf8PrefixBytes(s, max_code_points, max_bytes)));
}

std::optional<std::string> TruncateUtf8Upper(std::string_view s, size_t max_code_points,
                                             size_t max_bytes) {
  size_t len = Utf8PrefixBytes(s, max_code_points, max_bytes);
  if (len == s.size()) return std::string(s);
  // Collect the code point boundaries of the prefix, then increment from the end.
  std::vector<size_t> starts;
  for (size_t pos = 0; pos < len; pos += Utf8SeqLen(static_cast<unsigned char>(s[pos]))) {
    starts.push_back(pos);
  }
  while (!starts.empty()) {
    size_t start = starts.back();
    starts.pop_back();
    uint32_t cp = DecodeUtf8(s.substr(start)) + 1;
    if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xE000;
    if (cp > 0x10FFFF) continue;
    std::string out(s.substr(0, start));
    AppendUtf8(cp, &out);
    // A longer encoding of the incremented code point may break the byte budget.
    if (out.size() > max_bytes) continue;
    return out;
  }
  return std::nullopt;
}

std::string TruncateBinaryLower(std::string_view s, size_t max_bytes) {
  return std::string(s.substr(0, std::min(s.size(), max_bytes)));
}

std::optional<std::string> TruncateBinaryUpper(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  std::string out(s.substr(0, max_bytes));
  while (!out.empty()) {
    auto last = static_cast<unsigned char>(out.back());
    if (last != 0xFF) {
      out.back() = static_cast<char>(last + 1);
      return out;
    }
    out.pop_back();
  }
  return std::nullopt;
}

std::string MinimalBigEndian(std::string_view be) {
  size_t i = 0;
  // Drop a leading byte while the next byte's top bit still carries the same sign.
  while (i + 1 < be.size()) {
    auto b = static_cast<unsigned char>(be[i]);
    auto next = static_cast<unsigned char>(be[i + 1]);
    if ((b == 0x00 && !(next & 0x80)) || (b == 0xFF && (next & 0x80))) {
      ++i;
    } else {
      break;
    }
  }
  return std::string(be.substr(i));
}

void StatsAccumulator::UpdateFloat(double v) {
  if (std::isnan(v)) {
    ++nan_count_;
    return;
  }
  if (!has_ || FloatLess(v, dmin_)) dmin_ = v;
  if (!has_ || FloatLess(dmax_, v)) dmax_ = v;
  has_ = true;
}

template <>
void StatsAccumulator::UpdateFloats<double>(const char* plain, size_t n) {
  auto at = [plain](size_t i) {
    double v;
    std::memcpy(&v, plain + i * sizeof(double), sizeof(double));
    return v;
  };
  size_t i = 0;
  while (i < n && std::isnan(at(i))) ++i;
  nan_count_ += static_cast<int64_t>(i);
  if (i == n) return;
  double lo = at(i), hi = lo;
  ++i;
#if defined(__SSE2__)
  // minpd(x, m) is x < m ? x : m and maxpd(x, m) is x > m ? x : m: a NaN x leaves m, and
  // of two zeros m stays (which zero is the bound is settled below). cmpunord marks NaNs
  // with all ones, -1 per 64-bit lane, summed into the count.
  __m128d vlo = _mm_set1_pd(lo), vhi = vlo;
  __m128i vnan = _mm_setzero_si128();
  for (; i + 2 <= n; i += 2) {
    const __m128d x = _mm_loadu_pd(reinterpret_cast<const double*>(plain + i * sizeof(double)));
    vlo = _mm_min_pd(x, vlo);
    vhi = _mm_max_pd(x, vhi);
    vnan = _mm_sub_epi64(vnan, _mm_castpd_si128(_mm_cmpunord_pd(x, x)));
  }
  alignas(16) double los[2], his[2];
  alignas(16) int64_t nans[2];
  _mm_store_pd(los, vlo);
  _mm_store_pd(his, vhi);
  _mm_store_si128(reinterpret_cast<__m128i*>(nans), vnan);
  nan_count_ += nans[0] + nans[1];
  for (double x : los) lo = x < lo ? x : lo;
  for (double x : his) hi = x > hi ? x : hi;
#endif
  for (; i < n; ++i) {
    const double x = at(i);
    if (std::isnan(x)) {
      ++nan_count_;
      continue;
    }
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
  }
  // A zero bound is -0.0 (min) or +0.0 (max) when the page holds one (FloatLess: -0.0 <
  // +0.0); only pages whose bound is a zero are looked at again.
  if (lo == 0 || hi == 0) {
    bool negative_zero = false, positive_zero = false;
    for (size_t k = 0; k < n; ++k) {
      const double x = at(k);
      if (x == 0) (std::signbit(x) ? negative_zero : positive_zero) = true;
    }
    if (lo == 0) lo = negative_zero ? -0.0 : 0.0;
    if (hi == 0) hi = positive_zero ? 0.0 : -0.0;
  }
  UpdateFloat(lo);
  UpdateFloat(hi);
}

bool StatsAccumulator::BytesLess(std::string_view a, std::string_view b) const {
  if (column_->type.id == TypeId::kDecimal) {
    // Equal-width big-endian two's complement: flip the sign bit, then compare bytes.
    auto a0 = static_cast<unsigned char>(a[0]) ^ 0x80;
    auto b0 = static_cast<unsigned char>(b[0]) ^ 0x80;
    if (a0 != b0) return a0 < b0;
    return a.substr(1) < b.substr(1);
  }
  return a < b;  // std::string_view compares as unsigned char (char_traits<char>::lt)
}

void StatsAccumulator::UpdateFixed(const char* values, size_t n, size_t width) {
  if (n == 0) return;
  if (width != 16) {
    for (size_t i = 0; i < n; ++i) UpdateBytes(std::string_view(values + i * width, width));
    return;
  }
  // UUIDs and wide decimals: each value as two big-endian words, compared as unsigned
  // (decimals: the sign bit flipped first, so two's complement orders as unsigned).
  const uint64_t flip = column_->type.id == TypeId::kDecimal ? 0x8000000000000000ull : 0;
  auto key = [&](size_t i, uint64_t* hi, uint64_t* lo) {
    uint64_t a, b;
    std::memcpy(&a, values + 16 * i, 8);
    std::memcpy(&b, values + 16 * i + 8, 8);
    *hi = __builtin_bswap64(a) ^ flip;
    *lo = __builtin_bswap64(b);
  };
  size_t imin = 0, imax = 0;
  uint64_t min_hi, min_lo, max_hi, max_lo;
  key(0, &min_hi, &min_lo);
  max_hi = min_hi;
  max_lo = min_lo;
  for (size_t i = 1; i < n; ++i) {
    uint64_t h, l;
    key(i, &h, &l);
    if (h < min_hi || (h == min_hi && l < min_lo)) {
      min_hi = h;
      min_lo = l;
      imin = i;
    }
    if (h > max_hi || (h == max_hi && l > max_lo)) {
      max_hi = h;
      max_lo = l;
      imax = i;
    }
  }
  UpdateBytes(std::string_view(values + 16 * imin, 16));
  UpdateBytes(std::string_view(values + 16 * imax, 16));
}

void StatsAccumulator::UpdateBytes(std::string_view v) {
  if (!has_) {
    smin_.assign(v);
    smax_.assign(v);
    has_ = true;
    return;
  }
  if (BytesLess(v, smin_)) smin_.assign(v);
  if (BytesLess(smax_, v)) smax_.assign(v);
}

void StatsAccumulator::Merge(const StatsAccumulator& o) {
  nan_count_ += o.nan_count_;
  if (!o.has_) return;
  switch (column_->physical) {
    case PhysicalType::kFloat:
    case PhysicalType::kDouble:
      UpdateFloat(o.dmin_);
      UpdateFloat(o.dmax_);
      break;
    case PhysicalType::kByteArray:
    case PhysicalType::kFixedLenByteArray:
      UpdateBytes(o.smin_);
      UpdateBytes(o.smax_);
      break;
    default:
      UpdateInt(o.imin_);
      UpdateInt(o.imax_);
      break;
  }
}

Statistics StatsAccumulator::ToParquet(int64_t null_count, size_t truncate_bytes) const {
  Statistics s;
  s.null_count = null_count;
  if (!has_) return s;
  std::string lo, hi;
  bool lo_exact = true, hi_exact = true;
  switch (column_->physical) {
    case PhysicalType::kBoolean:
      lo.assign(1, static_cast<char>(imin_));
      hi.assign(1, static_cast<char>(imax_));
      break;
    case PhysicalType::kInt32:
      lo = Le32(static_cast<int32_t>(imin_));
      hi = Le32(static_cast<int32_t>(imax_));
      break;
    case PhysicalType::kInt64:
      lo = Le64(imin_);
      hi = Le64(imax_);
      break;
    case PhysicalType::kFloat:
    case PhysicalType::kDouble: {
      // parquet.thrift ColumnOrder: a zero min is written as -0.0, a zero max as +0.0.
      double mn = dmin_ == 0 ? -0.0 : dmin_;
      double mx = dmax_ == 0 ? +0.0 : dmax_;
      if (column_->physical == PhysicalType::kFloat) {
        lo = LeFloat(static_cast<float>(mn));
        hi = LeFloat(static_cast<float>(mx));
      } else {
        lo = LeDouble(mn);
        hi = LeDouble(mx);
      }
      break;
    }
    case PhysicalType::kInt96:
      return s;  // never written
    case PhysicalType::kFixedLenByteArray:
      lo = smin_;
      hi = smax_;
      break;
    case PhysicalType::kByteArray: {
      bool utf8 = column_->type.id == TypeId::kString;
      if (truncate_bytes > 0 && smin_.size() > truncate_bytes) {
        lo = utf8 ? TruncateUtf8Lower(smin_, SIZE_MAX, truncate_bytes)
                  : TruncateBinaryLower(smin_, truncate_bytes);
        lo_exact = false;
      } else {
        lo = smin_;
      }
      if (truncate_bytes > 0 && smax_.size() > truncate_bytes) {
        auto up = utf8 ? TruncateUtf8Upper(smax_, SIZE_MAX, truncate_bytes)
                       : TruncateBinaryUpper(smax_, truncate_bytes);
        if (!up) {
          // No upper bound fits: write the min only.
          s.min_value = lo;
          s.is_min_value_exact = lo_exact;
          return s;
        }
        hi = std::move(*up);
        hi_exact = false;
      } else {
        hi = smax_;
      }
      break;
    }
  }
  // The deprecated min/max pair uses signed comparison; write it only where the
  // column's order is signed (parquet.thrift Statistics comment).
  if (column_->order == SortOrder::kSigned) {
    s.min = lo;
    s.max = hi;
  }
  s.min_value = std::move(lo);
  s.max_value = std::move(hi);
  s.is_min_value_exact = lo_exact;
  s.is_max_value_exact = hi_exact;
  return s;
}

namespace {
constexpr size_t kIcebergTruncate = 16;
}

std::optional<std::string> StatsAccumulator::IcebergBound(bool upper) const {
  if (!has_) return std::nullopt;
  const int64_t i = upper ? imax_ : imin_;
  const double d = upper ? dmax_ : dmin_;
  const std::string& b = upper ? smax_ : smin_;
  switch (column_->type.id) {
    case TypeId::kBoolean:
      return std::string(1, static_cast<char>(i));
    case TypeId::kInt:
    case TypeId::kDate:
      return Le32(static_cast<int32_t>(i));
    case TypeId::kLong:
    case TypeId::kTime:
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz:
      return Le64(i);
    case TypeId::kFloat:
      return LeFloat(static_cast<float>(d));
    case TypeId::kDouble:
      return LeDouble(d);
    case TypeId::kDecimal:
      return MinimalBigEndian(column_->physical == PhysicalType::kFixedLenByteArray ? b : Be64(i));
    case TypeId::kString:
      return upper ? TruncateUtf8Upper(b, kIcebergTruncate, SIZE_MAX)
                   : TruncateUtf8Lower(b, kIcebergTruncate, SIZE_MAX);
    case TypeId::kBinary:
      return upper ? TruncateBinaryUpper(b, kIcebergTruncate)
                   : TruncateBinaryLower(b, kIcebergTruncate);
    case TypeId::kUuid:
    case TypeId::kFixed:
      return b;
    default:
      return std::nullopt;
  }
}

void StatsAccumulator::UpdatePlain(std::string_view v) {
  switch (column_->physical) {
    case PhysicalType::kBoolean:
      UpdateBool(v[0] != 0);
      break;
    case PhysicalType::kInt32:
      UpdateInt(static_cast<int32_t>(GetFixed32(v.data())));
      break;
    case PhysicalType::kInt64:
      UpdateInt(static_cast<int64_t>(GetFixed64(v.data())));
      break;
    case PhysicalType::kFloat: {
      float f;
      std::memcpy(&f, v.data(), 4);
      UpdateFloat(f);
      break;
    }
    case PhysicalType::kDouble: {
      double x;
      std::memcpy(&x, v.data(), 8);
      UpdateFloat(x);
      break;
    }
    case PhysicalType::kByteArray:
    case PhysicalType::kFixedLenByteArray:
      UpdateBytes(v);
      break;
    case PhysicalType::kInt96:
      break;  // never written
  }
}

}  // namespace icestream::format::parquet
