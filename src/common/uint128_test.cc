#include "common/uint128.h"

#include <gtest/gtest.h>

namespace icestream {
namespace {

TEST(Uint128Test, DecimalRoundTrip) {
  EXPECT_EQ(ToDecimal(kUint128Max), "340282366920938463463374607431768211455");
  EXPECT_EQ(*ParseDecimal128("340282366920938463463374607431768211455"), kUint128Max);
  EXPECT_FALSE(ParseDecimal128("340282366920938463463374607431768211456"));
  EXPECT_FALSE(ParseDecimal128(""));
  EXPECT_FALSE(ParseDecimal128("-1"));
  EXPECT_FALSE(ParseDecimal128("12a"));
  EXPECT_EQ(ToDecimal(0), "0");
  EXPECT_EQ(*ParseDecimal128("0"), 0u);
}

}  // namespace
}  // namespace icestream
