// Dictionary: entries in first-insertion order and the same index for equal bytes, for
// values kept by their bytes (BYTE_ARRAY, wide FIXED_LEN_BYTE_ARRAY) and for those that
// are their own hash key (widths of 1 to 8 bytes), through many table growths; the page
// body is every entry's PLAIN encoding.
#include "format/parquet/dictionary.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

namespace icestream::format::parquet {
namespace {

void ExpectAgreesWithMap(bool byte_array, size_t width, uint64_t seed) {
  SCOPED_TRACE("byte_array " + std::to_string(byte_array) + " width " + std::to_string(width));
  std::mt19937_64 rng(seed);
  Dictionary dict(byte_array, byte_array ? 0 : width);
  std::map<std::string, uint32_t> want;
  std::string plain;
  for (int round = 0; round < 3; ++round) {
    dict.Clear();
    want.clear();
    plain.clear();
    for (int i = 0; i < 50000; ++i) {
      // Distinct values from a few thousand, among them ones that differ in one byte and
      // zeros (an all-zero word must not look like an empty slot).
      const uint64_t pick = rng() % 6000;
      std::string v(byte_array ? pick % 23 : width, '\0');
      for (size_t b = 0; b < v.size() && pick != 0; ++b) {
        v[b] = static_cast<char>((pick * 0x9E3779B97F4A7C15ull) >> (8 * (b % 8)));
      }
      auto [it, fresh] = want.emplace(v, static_cast<uint32_t>(want.size()));
      if (fresh) {
        if (byte_array) {
          const auto len = static_cast<uint32_t>(v.size());
          plain.append(reinterpret_cast<const char*>(&len), 4);
        }
        plain += v;
      }
      ASSERT_EQ(dict.Insert(v.data(), v.size()), it->second) << "value " << i;
    }
    EXPECT_EQ(dict.size(), want.size());
    EXPECT_TRUE(dict.plain() == plain);
    for (const auto& [v, index] : want) EXPECT_EQ(dict.entry(index), v);
  }
}

TEST(DictionaryTest, AgreesWithAMapForEveryKindOfKey) {
  for (size_t width : {1, 2, 4, 8}) ExpectAgreesWithMap(false, width, width);
  ExpectAgreesWithMap(false, 16, 16);  // UUIDs, wide decimals: kept by their bytes
  ExpectAgreesWithMap(true, 0, 99);
}

}  // namespace
}  // namespace icestream::format::parquet
