// Byte-exact tests of the RLE / bit-packed hybrid encoder (Encodings.md examples and
// hand-computed layouts), plus a decode-back property test with an independent
// decoder written here from the spec text.
#include "format/parquet/rle_encoder.h"

#include <gtest/gtest.h>

#include <random>

#include "format/parquet/test_hex.h"

namespace icestream::format::parquet {
namespace {

template <typename T>
std::string Enc(std::vector<T> v, int w) {
  std::string out;
  RleEncode(v.data(), v.size(), w, &out);
  return out;
}

TEST(RleTest, SpecExamples) {
  EXPECT_BYTES_EQ("c8 01 01", Enc(std::vector<uint16_t>(100, 1), 1));
  EXPECT_BYTES_EQ("03 1b", Enc(std::vector<uint16_t>{1, 1, 0, 1, 1}, 1));
  // Dictionary indices [0,1,2,1] with width 2 (formats.md A.7: "02 03 64 00" with the
  // width byte first).
  EXPECT_BYTES_EQ("03 64 00", Enc(std::vector<uint32_t>{0, 1, 2, 1}, 2));
  // Encodings.md bit-packing example: 0..7 with width 3.
  EXPECT_BYTES_EQ("03 88 c6 fa", Enc(std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}, 3));
}

TEST(RleTest, MixedRunsKeepGroupsWhole) {
  // 3 literals, then 10 x 5: three of the fives top the group up, 7 remain -> bit-packed
  // with them (a run of 7 is not worth an RLE run); total 13 -> 2 groups.
  std::vector<uint32_t> v{1, 2, 3};
  v.insert(v.end(), 10, 5);
  EXPECT_BYTES_EQ("05 d1 da b6 6d 5b 00", Enc(v, 3));
  // 8 literals then a run of 20: bit-packed group, then RLE.
  std::vector<uint32_t> w{0, 1, 0, 1, 0, 1, 0, 1};
  w.insert(w.end(), 20, 1);
  EXPECT_BYTES_EQ("03 aa 28 01", Enc(w, 1));
  // Width 0 (one-entry dictionary): one RLE run, no value bytes.
  EXPECT_BYTES_EQ("14", Enc(std::vector<uint32_t>(10, 0), 0));
  // Width 9: RLE values take two bytes.
  EXPECT_BYTES_EQ("10 ff 01", Enc(std::vector<uint32_t>(8, 511), 9));
  EXPECT_BYTES_EQ("", Enc(std::vector<uint32_t>{}, 4));
}

// BitPack against a bit-by-bit packing written here from the spec text (value i's bit b
// is bit i * width + b of the output, LSB first), at every width and at lengths around
// the 32-bit words it stores, after bytes already in the buffer.
TEST(RleTest, BitPackMatchesBitByBit) {
  std::mt19937_64 rng(3);
  for (int width = 1; width <= 32; ++width) {
    for (size_t n : {0, 1, 3, 4, 7, 8, 9, 31, 32, 33, 63, 64, 65, 250}) {
      std::vector<uint32_t> v(n);
      const uint64_t mask = (uint64_t{1} << width) - 1;
      for (auto& x : v) x = static_cast<uint32_t>(rng() & mask);
      std::string want = "ab";
      want.resize(2 + (n * static_cast<size_t>(width) + 7) / 8, '\0');
      for (size_t i = 0; i < n; ++i) {
        for (int b = 0; b < width; ++b) {
          if ((v[i] >> b) & 1) {
            const size_t bit = i * static_cast<size_t>(width) + static_cast<size_t>(b);
            want[2 + bit / 8] = static_cast<char>(want[2 + bit / 8] | (1 << (bit % 8)));
          }
        }
      }
      std::string got = "ab";
      BitPack(v.data(), n, width, &got);
      ASSERT_EQ(testing::Hexdump(got), testing::Hexdump(want)) << "width " << width << ", " << n;
      // The narrower value types give the same bytes.
      if (width <= 16) {
        std::vector<uint16_t> v16(v.begin(), v.end());
        std::string got16 = "ab";
        BitPack(v16.data(), n, width, &got16);
        ASSERT_EQ(got16, want) << "uint16, width " << width << ", " << n;
      }
    }
  }
}

TEST(RleTest, BitWidth) {
  EXPECT_EQ(BitWidth(0), 0);
  EXPECT_EQ(BitWidth(1), 1);
  EXPECT_EQ(BitWidth(2), 2);
  EXPECT_EQ(BitWidth(3), 2);
  EXPECT_EQ(BitWidth(4), 3);
  EXPECT_EQ(BitWidth(0xFFFFFFFFu), 32);
}

// Decoder written from the spec text, for the property test.
std::vector<uint32_t> Decode(const std::string& s, int w, size_t n) {
  std::vector<uint32_t> out;
  size_t pos = 0;
  auto uleb = [&] {
    uint64_t v = 0;
    int shift = 0;
    while (true) {
      auto b = static_cast<unsigned char>(s.at(pos++));
      v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
      shift += 7;
    }
  };
  while (out.size() < n) {
    uint64_t h = uleb();
    if (h & 1) {
      size_t count = (h >> 1) * 8;
      uint64_t acc = 0;
      int bits = 0;
      for (size_t i = 0; i < count; ++i) {
        while (bits < w) {
          acc |= uint64_t(static_cast<unsigned char>(s.at(pos++))) << bits;
          bits += 8;
        }
        uint32_t v = w == 0 ? 0 : static_cast<uint32_t>(acc & ((uint64_t{1} << w) - 1));
        acc >>= w;
        bits -= w;
        if (out.size() < n) out.push_back(v);
      }
    } else {
      uint64_t v = 0;
      for (int b = 0; b < (w + 7) / 8; ++b)
        v |= uint64_t(static_cast<unsigned char>(s.at(pos++))) << (8 * b);
      for (uint64_t i = 0; i < (h >> 1); ++i) out.push_back(static_cast<uint32_t>(v));
    }
  }
  EXPECT_EQ(pos, s.size()) << "trailing bytes";
  return out;
}

TEST(RleTest, RandomRoundTrip) {
  std::mt19937 rng(42);
  for (int iter = 0; iter < 300; ++iter) {
    int w = static_cast<int>(rng() % 33);
    size_t n = rng() % 2000;
    std::vector<uint32_t> v;
    uint32_t mask = w == 32 ? 0xFFFFFFFFu : (1u << w) - 1;
    while (v.size() < n) {
      uint32_t x = rng() & mask;
      size_t run = (rng() % 4 == 0) ? rng() % 50 : 1;
      for (size_t i = 0; i < run && v.size() < n; ++i) v.push_back(x);
    }
    std::string enc;
    RleEncode(v.data(), v.size(), w, &enc);
    ASSERT_EQ(Decode(enc, w, n), v) << "width " << w << " n " << n;
  }
}

}  // namespace
}  // namespace icestream::format::parquet
