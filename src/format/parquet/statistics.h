// Column-chunk statistics: min/max under the column's sort order (parquet.thrift
// ColumnOrder TYPE_ORDER, LogicalTypes.md "Sort Order"), null and NaN counts,
// truncation of long string/binary bounds, and conversion of the bounds to Iceberg's
// single-value serialization (Iceberg spec Appendix D).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "format/parquet/metadata.h"
#include "format/parquet/schema_mapping.h"

namespace icestream::format::parquet {

// Accumulates the exact minimum and maximum of a column. Floats: NaNs are counted and
// never become a bound; -0.0 orders before +0.0. Not thread-safe.
class StatsAccumulator {
 public:
  explicit StatsAccumulator(const ColumnDescriptor* column) : column_(column) {}

  void UpdateBool(bool v) { UpdateInt(v ? 1 : 0); }
  void UpdateInt(int64_t v) {
    if (!has_ || v < imin_) imin_ = v;
    if (!has_ || v > imax_) imax_ = v;
    has_ = true;
  }
  template <typename T>
  void UpdateInts(const T* v, size_t n) {
    if (n == 0) return;
    T lo = v[0], hi = v[0];
    for (size_t i = 1; i < n; ++i) {
      lo = v[i] < lo ? v[i] : lo;
      hi = v[i] > hi ? v[i] : hi;
    }
    UpdateInt(lo);
    UpdateInt(hi);
  }
  void UpdateFloat(double v);
  // n PLAIN floats or doubles (T) at `plain` (NaNs counted, not bounds).
  template <typename T>
  void UpdateFloats(const char* plain, size_t n);
  // n FIXED_LEN_BYTE_ARRAY values of `width` bytes, back to back.
  void UpdateFixed(const char* values, size_t n, size_t width);
  // BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY values (decimal FLBA compares as signed
  // big-endian two's complement, everything else as unsigned bytes).
  void UpdateBytes(std::string_view v);
  // One value in its PLAIN encoding (BYTE_ARRAY without the length prefix).
  void UpdatePlain(std::string_view v);
  void Merge(const StatsAccumulator& other);

  bool has_bounds() const { return has_; }
  int64_t nan_count() const { return nan_count_; }
  void AddNanCount(int64_t n) { nan_count_ += n; }

  // Parquet Statistics with the given null count. Long BYTE_ARRAY bounds are truncated
  // to `truncate_bytes` (is_*_exact = false); 0 disables truncation.
  Statistics ToParquet(int64_t null_count, size_t truncate_bytes) const;

  // Iceberg single-value serialized bounds (Appendix D), strings truncated to 16 code
  // points and binary to 16 bytes (Java's default metrics mode truncate(16)). nullopt
  // when there is no bound (all null or NaN, or an upper bound that cannot be
  // incremented).
  std::optional<std::string> IcebergLower() const { return IcebergBound(false); }
  std::optional<std::string> IcebergUpper() const { return IcebergBound(true); }

 private:
  std::optional<std::string> IcebergBound(bool upper) const;
  static bool FloatLess(double a, double b) {  // -0.0 < +0.0; no NaN
    return a == b ? (std::signbit(a) && !std::signbit(b)) : a < b;
  }
  bool BytesLess(std::string_view a, std::string_view b) const;

  const ColumnDescriptor* column_;
  bool has_ = false;
  int64_t imin_ = 0, imax_ = 0;
  double dmin_ = 0, dmax_ = 0;
  std::string smin_, smax_;
  int64_t nan_count_ = 0;
};

template <typename T>
void StatsAccumulator::UpdateFloats(const char* plain, size_t n) {
  auto at = [plain](size_t i) {
    T v;
    std::memcpy(&v, plain + i * sizeof(T), sizeof(T));
    return static_cast<double>(v);
  };
  size_t i = 0;
  while (i < n && std::isnan(at(i))) ++i;
  nan_count_ += static_cast<int64_t>(i);
  if (i == n) return;
  double lo = at(i), hi = lo;
  for (++i; i < n; ++i) {
    const double x = at(i);
    if (std::isnan(x)) {
      ++nan_count_;
      continue;
    }
    if (FloatLess(x, lo)) lo = x;
    if (FloatLess(hi, x)) hi = x;
  }
  UpdateFloat(lo);
  UpdateFloat(hi);
}

// DOUBLE pages: two values at a time (SSE2 minpd/maxpd, which skip a NaN operand exactly
// as the loop above does), zeros' signs settled afterwards (statistics.cc).
template <>
void StatsAccumulator::UpdateFloats<double>(const char* plain, size_t n);

// Truncation of bounds (parquet.thrift Statistics; Iceberg's truncate(N) metrics).
// Lower: the longest prefix of at most max_code_points code points and max_bytes
// bytes. Upper: that prefix with its last code point incremented (skipping surrogates
// and dropping code points that cannot grow); nullopt if none can. A value within the
// limits is returned unchanged. Precondition for the Utf8 variants: valid UTF-8.
std::string TruncateUtf8Lower(std::string_view s, size_t max_code_points, size_t max_bytes);
std::optional<std::string> TruncateUtf8Upper(std::string_view s, size_t max_code_points,
                                             size_t max_bytes);
std::string TruncateBinaryLower(std::string_view s, size_t max_bytes);
std::optional<std::string> TruncateBinaryUpper(std::string_view s, size_t max_bytes);

// Minimal big-endian two's complement bytes of a decimal's unscaled value, given as
// big-endian two's complement of any width (Iceberg Appendix D, decimal).
std::string MinimalBigEndian(std::string_view be);

}  // namespace icestream::format::parquet
