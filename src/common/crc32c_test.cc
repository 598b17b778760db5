#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <string>

namespace icestream::crc32c {
namespace {

// Test vectors from RFC 3720 (iSCSI) Appendix B.4.
TEST(Crc32cTest, StandardVectors) {
  std::string zeros(32, '\0');
  EXPECT_EQ(Value(zeros), 0x8a9136aau);
  std::string ones(32, '\xff');
  EXPECT_EQ(Value(ones), 0x62a8ab43u);
  std::string inc(32, '\0');
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<char>(i);
  EXPECT_EQ(Value(inc), 0x46dd794eu);
  EXPECT_EQ(Value("123456789"), 0xe3069283u);
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  std::string s = "hello world, this is a longer string for crc extension";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    uint32_t a = Extend(Value(s.data(), cut), s.data() + cut, s.size() - cut);
    EXPECT_EQ(a, Value(s)) << cut;
  }
}

TEST(Crc32cTest, MaskRoundTrip) {
  uint32_t c = Value("foo");
  EXPECT_NE(Mask(c), c);
  EXPECT_EQ(Unmask(Mask(c)), c);
}

}  // namespace
}  // namespace icestream::crc32c
