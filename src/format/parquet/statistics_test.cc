// Tests of statistics: ordering rules (signed, unsigned bytes, decimal, floats with
// NaN and signed zeros), truncation of bounds, and Iceberg single-value bounds.
#include "format/parquet/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <vector>

#include "common/testing/status_assertions.h"
#include "format/parquet/test_hex.h"

namespace icestream::format::parquet {
namespace {

using iceberg::TypeId;

// The descriptor of a one-column schema of the given type.
class StatsTest : public ::testing::Test {
 protected:
  const ColumnDescriptor& Column(const iceberg::Type& t) {
    iceberg::Schema s;
    s.fields.push_back({1, "c", false, t, ""});
    auto ps = ParquetSchema::Make(s);
    EXPECT_OK(ps);
    schemas_.push_back(std::make_unique<ParquetSchema>(std::move(*ps)));
    return schemas_.back()->columns()[0];
  }
  std::vector<std::unique_ptr<ParquetSchema>> schemas_;
};

TEST_F(StatsTest, SignedIntegersAndDeprecatedMinMax) {
  StatsAccumulator a(&Column(iceberg::Primitive(TypeId::kInt)));
  int32_t v[] = {5, -7, 3};
  a.UpdateInts(v, 3);
  Statistics s = a.ToParquet(2, 64);
  EXPECT_EQ(s.null_count, 2);
  EXPECT_BYTES_EQ("f9 ff ff ff", *s.min_value);
  EXPECT_BYTES_EQ("05 00 00 00", *s.max_value);
  EXPECT_EQ(s.min, s.min_value);  // signed order: the deprecated pair is written too
  EXPECT_EQ(s.max, s.max_value);
  EXPECT_BYTES_EQ("f9 ff ff ff", *a.IcebergLower());
}

TEST_F(StatsTest, StringsCompareAsUnsignedBytes) {
  StatsAccumulator a(&Column(iceberg::Primitive(TypeId::kString)));
  for (const char* s : {"b", "\xc3\xa9", "a", "Z"}) a.UpdateBytes(s);  // é is 0xC3 0xA9
  Statistics s = a.ToParquet(0, 64);
  EXPECT_EQ(*s.min_value, "Z");
  EXPECT_EQ(*s.max_value, "\xc3\xa9");
  EXPECT_FALSE(s.min.has_value());  // unsigned order: no deprecated pair
  EXPECT_TRUE(*s.is_max_value_exact);
}

TEST_F(StatsTest, LongStringBoundsAreTruncated) {
  StatsAccumulator a(&Column(iceberg::Primitive(TypeId::kString)));
  std::string lo = std::string(70, 'a');
  std::string hi = std::string(63, 'z') + "\xc3\xa9" + "tail";  // é straddles byte 64
  a.UpdateBytes(lo);
  a.UpdateBytes(hi);
  Statistics s = a.ToParquet(0, 64);
  EXPECT_EQ(*s.min_value, std::string(64, 'a'));
  EXPECT_FALSE(*s.is_min_value_exact);
  EXPECT_EQ(*s.max_value, std::string(62, 'z') + "{");  // 63 z's fit; é does not: last z+1
  EXPECT_FALSE(*s.is_max_value_exact);
  // Iceberg: 16 code points.
  EXPECT_EQ(*a.IcebergLower(), std::string(16, 'a'));
  EXPECT_EQ(*a.IcebergUpper(), std::string(15, 'z') + "{");
}

TEST(TruncateTest, Utf8) {
  EXPECT_EQ(TruncateUtf8Lower("h\xc3\xa9llo", 2, SIZE_MAX), "h\xc3\xa9");
  EXPECT_EQ(*TruncateUtf8Upper("h\xc3\xa9llo", 2, SIZE_MAX), "h\xc3\xaa");
  EXPECT_EQ(*TruncateUtf8Upper("abc", 5, SIZE_MAX), "abc");  // within limits: unchanged
  // U+D7FF + 1 skips the surrogates to U+E000.
  EXPECT_EQ(*TruncateUtf8Upper("\xed\x9f\xbfx", 1, SIZE_MAX), "\xee\x80\x80");
  // U+10FFFF cannot grow: the previous code point is incremented instead.
  EXPECT_EQ(*TruncateUtf8Upper("a\xf4\x8f\xbf\xbfx", 2, SIZE_MAX), "b");
  EXPECT_FALSE(TruncateUtf8Upper("\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbfx", 2, SIZE_MAX).has_value());
  // Byte budget: "é" (2 bytes) does not fit after 3 bytes in a 4-byte budget.
  EXPECT_EQ(TruncateUtf8Lower("abc\xc3\xa9", SIZE_MAX, 4), "abc");
}

TEST(TruncateTest, Binary) {
  EXPECT_EQ(TruncateBinaryLower("abcdef", 3), "abc");
  EXPECT_EQ(*TruncateBinaryUpper("abcdef", 3), "abd");
  EXPECT_EQ(*TruncateBinaryUpper(std::string("a\xff\xff\xff", 4), 3), "b");
  EXPECT_FALSE(TruncateBinaryUpper(std::string("\xff\xff\xff\xff", 4), 3).has_value());
}

TEST(DecimalTest, MinimalBigEndian) {
  using testing::Unhex;
  EXPECT_BYTES_EQ("7f", MinimalBigEndian(Unhex("00 00 7f")));
  EXPECT_BYTES_EQ("00 80", MinimalBigEndian(Unhex("00 00 80")));
  EXPECT_BYTES_EQ("80", MinimalBigEndian(Unhex("ff ff 80")));
  EXPECT_BYTES_EQ("ff 7f", MinimalBigEndian(Unhex("ff ff 7f")));
  EXPECT_BYTES_EQ("00", MinimalBigEndian(Unhex("00 00 00")));
  EXPECT_BYTES_EQ("ff", MinimalBigEndian(Unhex("ff ff ff")));
}

TEST_F(StatsTest, DecimalBounds) {
  // decimal(9,2) in INT32: Iceberg bound of 14.20 is 0x058C (Appendix D example).
  StatsAccumulator small(&Column(iceberg::Decimal(9, 2)));
  small.UpdateInt(1420);
  small.UpdateInt(-1);
  EXPECT_BYTES_EQ("ff", *small.IcebergLower());
  EXPECT_BYTES_EQ("05 8c", *small.IcebergUpper());
  // decimal(38,0) in FLBA(16): signed comparison of big-endian two's complement.
  StatsAccumulator big(&Column(iceberg::Decimal(38, 0)));
  std::string neg(16, '\xff'), pos(16, '\0');
  pos[15] = 1;
  big.UpdateBytes(pos);
  big.UpdateBytes(neg);
  Statistics s = big.ToParquet(0, 64);
  EXPECT_EQ(*s.min_value, neg);
  EXPECT_EQ(*s.max_value, pos);
  EXPECT_TRUE(s.min.has_value());  // decimals order as signed values
  EXPECT_BYTES_EQ("ff", *big.IcebergLower());
  EXPECT_BYTES_EQ("01", *big.IcebergUpper());
}

TEST_F(StatsTest, FloatsNaNAndSignedZeros) {
  StatsAccumulator a(&Column(iceberg::Primitive(TypeId::kDouble)));
  a.UpdateFloat(0.0);
  a.UpdateFloat(NAN);
  a.UpdateFloat(-0.0);
  EXPECT_EQ(a.nan_count(), 1);
  Statistics s = a.ToParquet(0, 64);
  double mn, mx;
  std::memcpy(&mn, s.min_value->data(), 8);
  std::memcpy(&mx, s.max_value->data(), 8);
  EXPECT_TRUE(mn == 0 && std::signbit(mn));   // zero min written as -0.0
  EXPECT_TRUE(mx == 0 && !std::signbit(mx));  // zero max written as +0.0
  double lo;
  std::memcpy(&lo, a.IcebergLower()->data(), 8);
  EXPECT_TRUE(std::signbit(lo));  // Iceberg: -0.0 orders before +0.0

  StatsAccumulator only_nan(&Column(iceberg::Primitive(TypeId::kFloat)));
  only_nan.UpdateFloat(NAN);
  EXPECT_FALSE(only_nan.ToParquet(0, 64).min_value.has_value());
  EXPECT_FALSE(only_nan.IcebergLower().has_value());
  EXPECT_EQ(only_nan.nan_count(), 1);
}

TEST_F(StatsTest, DoublePagesGiveTheBoundsOfTheirValuesOneByOne) {
  // Pages of 0-40 values drawn from NaNs, both zeros, infinities, subnormals and random
  // numbers, in every position (the page loop takes two at a time): the page update
  // (UpdateFloats<double>) and one UpdateFloat per value agree on the count of NaNs and
  // on both bounds bit for bit, zeros' signs included.
  const ColumnDescriptor& col = Column(iceberg::Primitive(TypeId::kDouble));
  std::mt19937_64 rng(12);
  const double specials[] = {NAN,
                             -0.0,
                             0.0,
                             INFINITY,
                             -INFINITY,
                             std::numeric_limits<double>::denorm_min(),
                             -std::numeric_limits<double>::denorm_min(),
                             std::numeric_limits<double>::max(),
                             std::numeric_limits<double>::lowest()};
  for (int trial = 0; trial < 20000; ++trial) {
    const size_t n = rng() % 41;
    const int special_share = static_cast<int>(rng() % 101);  // percent
    std::vector<double> v(n);
    for (double& x : v) {
      x = static_cast<int>(rng() % 100) < special_share
              ? specials[rng() % std::size(specials)]
              : (static_cast<double>(rng() >> 11) * 0x1.0p-53 - 0.5) * 1e3;
    }
    StatsAccumulator page(&col), each(&col);
    page.UpdateFloats<double>(reinterpret_cast<const char*>(v.data()), n);
    for (double x : v) each.UpdateFloat(x);
    ASSERT_EQ(page.nan_count(), each.nan_count()) << trial;
    ASSERT_EQ(page.has_bounds(), each.has_bounds()) << trial;
    if (!each.has_bounds()) continue;
    ASSERT_EQ(*page.IcebergLower(), *each.IcebergLower()) << trial;
    ASSERT_EQ(*page.IcebergUpper(), *each.IcebergUpper()) << trial;
    const Statistics a = page.ToParquet(0, 64), b = each.ToParquet(0, 64);
    ASSERT_EQ(a.min_value, b.min_value) << trial;
    ASSERT_EQ(a.max_value, b.max_value) << trial;
  }
}

TEST_F(StatsTest, IcebergBoundsPerType) {
  StatsAccumulator ts(&Column(iceberg::Primitive(TypeId::kTimestampTz)));
  ts.UpdateInt(1510871468000001LL);
  EXPECT_BYTES_EQ("01 c3 26 2d 21 5e 05 00", *ts.IcebergLower());
  StatsAccumulator d(&Column(iceberg::Primitive(TypeId::kDate)));
  d.UpdateInt(17486);
  EXPECT_BYTES_EQ("4e 44 00 00", *d.IcebergLower());
  StatsAccumulator b(&Column(iceberg::Primitive(TypeId::kBoolean)));
  b.UpdateBool(true);
  b.UpdateBool(false);
  EXPECT_BYTES_EQ("00", *b.IcebergLower());
  EXPECT_BYTES_EQ("01", *b.IcebergUpper());
  StatsAccumulator bin(&Column(iceberg::Primitive(TypeId::kBinary)));
  bin.UpdateBytes(std::string(20, '\x01'));
  EXPECT_EQ(*bin.IcebergLower(), std::string(16, '\x01'));
  EXPECT_EQ(*bin.IcebergUpper(), std::string(15, '\x01') + "\x02");
  StatsAccumulator none(&Column(iceberg::Primitive(TypeId::kLong)));
  EXPECT_FALSE(none.IcebergLower().has_value());
}

}  // namespace
}  // namespace icestream::format::parquet
