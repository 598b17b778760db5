#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

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

// One bit at a time, straight from the definition: the reference for every length, start
// and alignment (the hardware path cuts long inputs into three lanes of 4 KiB or 128
// bytes and joins them; a wrong join table or lane boundary shows here).
uint32_t BitwiseExtend(uint32_t crc, const uint8_t* p, size_t n) {
  uint32_t c = ~crc;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
  }
  return ~c;
}

TEST(Crc32cTest, EveryLengthStartAndAlignmentMatchesTheDefinition) {
  std::mt19937_64 rng(7);
  std::string buf(3 * 4096 * 2 + 3 * 128 + 64, '\0');
  for (auto& ch : buf) ch = static_cast<char>(rng());
  const auto* bytes = reinterpret_cast<const uint8_t*>(buf.data());
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 1200; ++n) lengths.push_back(n);
  for (size_t n : {3 * 4096 - 1, 3 * 4096, 3 * 4096 + 1, 3 * 4096 + 3 * 128 + 7, 2 * 3 * 4096,
                   2 * 3 * 4096 + 3 * 128 + 15}) {
    lengths.push_back(n);
  }
  for (size_t n : lengths) {
    const size_t offset = rng() % 8;
    const auto start = static_cast<uint32_t>(rng());
    ASSERT_EQ(Extend(start, bytes + offset, n), BitwiseExtend(start, bytes + offset, n))
        << "length " << n << " offset " << offset;
  }
}

TEST(Crc32cTest, MaskRoundTrip) {
  uint32_t c = Value("foo");
  EXPECT_NE(Mask(c), c);
  EXPECT_EQ(Unmask(Mask(c)), c);
}

}  // namespace
}  // namespace icestream::crc32c
