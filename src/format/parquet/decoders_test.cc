// Tests of the page decoders: RLE / bit-packed hybrid (against the encoder and the
// spec's byte examples), DELTA_BINARY_PACKED / DELTA_LENGTH_BYTE_ARRAY /
// DELTA_BYTE_ARRAY (a test-side encoder written from Encodings.md), BYTE_STREAM_SPLIT,
// PLAIN, and their refusal of damaged input.
#include <gtest/gtest.h>

#include <random>

#include "common/bytes.h"
#include "common/testing/status_assertions.h"
#include "format/parquet/delta_decoder.h"
#include "format/parquet/rle_decoder.h"
#include "format/parquet/rle_encoder.h"
#include "format/parquet/test_hex.h"
#include "format/parquet/value_decoder.h"

namespace icestream::format::parquet {
namespace {

using testing::Unhex;

TEST(RleDecoderTest, SpecExamples) {
  // Formats.md A.7: 100 x 1 with width 1 -> C8 01 01; [1,1,0,1,1] bit-packed -> 03 1B.
  std::vector<uint16_t> out(100);
  // The decoders view their input: keep it alive.
  const std::string ea = Unhex("C8 01 01"), eb = Unhex("03 1B"), ec = Unhex("03 88 C6 FA");
  RleDecoder a(ea, 1);
  ASSERT_OK(a.Get(out.data(), 100));
  for (auto v : out) EXPECT_EQ(v, 1);
  RleDecoder b(eb, 1);
  ASSERT_OK(b.Get(out.data(), 5));
  EXPECT_EQ(std::vector<uint16_t>(out.begin(), out.begin() + 5),
            (std::vector<uint16_t>{1, 1, 0, 1, 1}));
  // Encodings.md: 0..7 with width 3 bit-packed = 88 C6 FA.
  RleDecoder c(ec, 3);
  ASSERT_OK(c.Get(out.data(), 8));
  for (uint16_t i = 0; i < 8; ++i) EXPECT_EQ(out[i], i);
}

TEST(RleDecoderTest, RoundTripsTheEncoderAtEveryWidth) {
  std::mt19937 rng(7);
  for (int width = 0; width <= 32; ++width) {
    for (int trial = 0; trial < 20; ++trial) {
      size_t n = rng() % 3000;
      std::vector<uint32_t> values(n);
      uint64_t max = width == 32 ? 0xFFFFFFFFull : (uint64_t{1} << width) - 1;
      for (auto& v : values) {
        // Runs and noise.
        v = static_cast<uint32_t>((rng() % 4 == 0 ? rng() : 3) & max);
      }
      std::string enc;
      RleEncode(values.data(), values.size(), width, &enc);
      RleDecoder d(enc, width);
      std::vector<uint32_t> got(n);
      // Read in uneven pieces to cross run boundaries mid-group.
      size_t at = 0;
      while (at < n) {
        size_t take = std::min<size_t>(n - at, 1 + rng() % 37);
        ASSERT_OK(d.Get(got.data() + at, take)) << "width " << width;
        at += take;
      }
      ASSERT_EQ(got, values) << "width " << width;
      std::vector<uint32_t> more(1);
      if (width > 0) {
        // Past the end only padding of the last group remains, then nothing.
        std::vector<uint32_t> lots(16);
        EXPECT_STATUS(kCorruption, d.Get(lots.data(), 16));
      }
    }
  }
}

TEST(RleDecoderTest, RefusesDamage) {
  std::vector<uint32_t> out(10);
  EXPECT_STATUS(kCorruption, RleDecoder("", 3).Get(out.data(), 1));  // empty
  EXPECT_STATUS(
      kCorruption,
      RleDecoder(Unhex("FF FF FF FF FF FF FF FF FF FF FF"), 3).Get(out.data(), 1));  // varint
  EXPECT_STATUS(kCorruption, RleDecoder(Unhex("08"), 9).Get(out.data(), 1));  // value bytes missing
  EXPECT_STATUS(kCorruption,
                RleDecoder(Unhex("08 07"), 2).Get(out.data(), 1));  // value wider than 2 bits
  // A huge RLE run decodes lazily: asking for 10 values costs nothing.
  EXPECT_OK(RleDecoder(Unhex("FE FF FF FF 0F 01"), 1).Get(out.data(), 10));
}

// ---------------------------------------------------------------- delta encodings
void Uleb(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void ZigZag(int64_t v, std::string* out) {
  Uleb((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63), out);
}

// DELTA_BINARY_PACKED with blocks of 128 values in 4 miniblocks of 32.
std::string EncodeDelta(const std::vector<int64_t>& v) {
  std::string out;
  Uleb(128, &out);
  Uleb(4, &out);
  Uleb(v.size(), &out);
  ZigZag(v.empty() ? 0 : v[0], &out);
  for (size_t start = 1; start < v.size(); start += 128) {
    size_t end = std::min(v.size(), start + 128);
    std::vector<uint64_t> deltas;
    for (size_t i = start; i < end; ++i)
      deltas.push_back(static_cast<uint64_t>(v[i]) - static_cast<uint64_t>(v[i - 1]));
    int64_t min = INT64_MAX;
    for (uint64_t d : deltas) min = std::min(min, static_cast<int64_t>(d));
    ZigZag(min, &out);
    std::vector<uint64_t> rel;
    for (uint64_t d : deltas) rel.push_back(d - static_cast<uint64_t>(min));
    rel.resize(128, 0);
    int widths[4];
    for (int m = 0; m < 4; ++m) {
      uint64_t mx = 0;
      for (int k = 0; k < 32; ++k) mx |= rel[static_cast<size_t>(m * 32 + k)];
      widths[m] = 0;
      while (widths[m] < 64 && (mx >> widths[m]) != 0) ++widths[m];
      out.push_back(static_cast<char>(widths[m]));
    }
    size_t used = (deltas.size() + 31) / 32;
    for (size_t m = 0; m < used; ++m) {
      std::string bits(static_cast<size_t>(32 * widths[m] / 8), '\0');
      for (int k = 0; k < 32; ++k) {
        uint64_t x = rel[m * 32 + static_cast<size_t>(k)];
        for (int b = 0; b < widths[m]; ++b) {
          size_t bit = static_cast<size_t>(k * widths[m] + b);
          if ((x >> b) & 1) bits[bit / 8] = static_cast<char>(bits[bit / 8] | (1 << (bit % 8)));
        }
      }
      out += bits;
    }
  }
  return out;
}

TEST(DeltaBinaryPackedTest, HandMadeExampleAndRandomRoundTrips) {
  // 1..5: header 128, 4 miniblocks, 5 values, first 1; block: min delta 1, widths 0.
  std::string ex = Unhex("80 01 04 05 02 02 00 00 00 00");
  std::vector<int64_t> out(5);
  size_t consumed = 0;
  ASSERT_OK(DecodeDeltaBinaryPacked(ex, 5, out.data(), &consumed));
  EXPECT_EQ(out, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(consumed, ex.size());
  EXPECT_STATUS(kCorruption, DecodeDeltaBinaryPacked(ex, 6, out.data(), &consumed))
      << "count differs";

  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int64_t> v(rng() % 1000);
    int64_t x = static_cast<int64_t>(rng());
    for (auto& e : v) {
      switch (trial % 4) {
        case 0:
          e = x += static_cast<int64_t>(rng() % 7);
          break;  // sorted
        case 1:
          e = static_cast<int64_t>(rng());
          break;  // wraps
        case 2:
          e = static_cast<int32_t>(rng());
          break;  // int32 range
        default:
          e = trial % 8 == 3 ? INT64_MIN : INT64_MAX;
          break;
      }
    }
    std::string enc = EncodeDelta(v) + "trailing";
    std::vector<int64_t> got(v.size());
    ASSERT_OK(DecodeDeltaBinaryPacked(enc, v.size(), got.data(), &consumed));
    EXPECT_EQ(got, v);
    EXPECT_EQ(enc.substr(consumed), "trailing");
    // Every truncation fails cleanly.
    for (size_t cut = 0; cut + 8 < enc.size(); cut += 1 + enc.size() / 17) {
      EXPECT_FALSE(
          DecodeDeltaBinaryPacked(enc.substr(0, cut), v.size(), got.data(), &consumed).ok() &&
          !v.empty() && cut < consumed);
    }
  }
  EXPECT_STATUS(kCorruption,
                DecodeDeltaBinaryPacked(Unhex("81 01 04 01 00"), 1, out.data(), &consumed))
      << "block size 129";
  EXPECT_STATUS(kCorruption,
                DecodeDeltaBinaryPacked(Unhex("80 01 03 01 00"), 1, out.data(), &consumed))
      << "3 miniblocks";
}

TEST(DeltaByteArraysTest, LengthAndPrefixEncodings) {
  // Encodings.md examples: "Hello", "World", "Foobar", "ABCDEF".
  std::string dlba = EncodeDelta({5, 5, 6, 6}) + "HelloWorldFoobarABCDEF";
  std::vector<std::string_view> got;
  ASSERT_OK(DecodeDeltaLengthByteArray(dlba, 4, &got));
  EXPECT_EQ(got, (std::vector<std::string_view>{"Hello", "World", "Foobar", "ABCDEF"}));
  got.clear();
  EXPECT_STATUS(kCorruption, DecodeDeltaLengthByteArray(dlba.substr(0, dlba.size() - 1), 4, &got));
  // "axis", "axle", "babble", "babyhood": prefixes 0 2 0 3, suffixes axis le babble yhood.
  std::string dba = EncodeDelta({0, 2, 0, 3}) + EncodeDelta({4, 2, 6, 5}) + "axislebabbleyhood";
  std::string storage;
  got.clear();
  ASSERT_OK(DecodeDeltaByteArray(dba, 4, 1 << 20, &storage, &got));
  EXPECT_EQ(got, (std::vector<std::string_view>{"axis", "axle", "babble", "babyhood"}));
  got.clear();
  EXPECT_STATUS(kResourceExhausted, DecodeDeltaByteArray(dba, 4, 10, &storage, &got));
  std::string bad = EncodeDelta({0, 5}) + EncodeDelta({1, 0}) + "a";
  got.clear();
  EXPECT_STATUS(kCorruption, DecodeDeltaByteArray(bad, 2, 1 << 20, &storage, &got))
      << "prefix longer than the previous value";
  std::string neg = EncodeDelta({-1}) + "";
  got.clear();
  EXPECT_STATUS(kCorruption, DecodeDeltaLengthByteArray(neg, 1, &got));
}

TEST(ByteStreamSplitTest, SpecExampleAndSizes) {
  std::string fixed;
  ASSERT_OK(DecodeByteStreamSplit(Unhex("AA 00 A3 BB 11 B4 CC 22 C5 DD 33 D6"), 4, 3, &fixed));
  EXPECT_EQ(fixed, Unhex("AA BB CC DD 00 11 22 33 A3 B4 C5 D6"));
  EXPECT_STATUS(kCorruption, DecodeByteStreamSplit(Unhex("AA 00 A3"), 4, 3, &fixed));
}

TEST(PlainTest, EveryPhysicalTypeAndShortPages) {
  std::string fixed;
  std::vector<std::string_view> bytes;
  ASSERT_OK(DecodePlain(Unhex("05"), PhysicalType::kBoolean, 0, 3, &fixed, &bytes));
  EXPECT_EQ(fixed, std::string("\x01\x00\x01", 3));
  fixed.clear();
  ASSERT_OK(DecodePlain(Unhex("01000000 FFFFFFFF"), PhysicalType::kInt32, 0, 2, &fixed, &bytes));
  EXPECT_EQ(fixed.size(), 8u);
  EXPECT_STATUS(kCorruption,
                DecodePlain(Unhex("010000"), PhysicalType::kInt32, 0, 1, &fixed, &bytes));
  EXPECT_STATUS(kCorruption,
                DecodePlain(Unhex("0102"), PhysicalType::kFixedLenByteArray, 3, 1, &fixed, &bytes));
  const std::string page = Unhex("02000000 6869 00000000");  // the views point into it
  ASSERT_OK(DecodePlain(page, PhysicalType::kByteArray, 0, 2, &fixed, &bytes));
  EXPECT_EQ(bytes, (std::vector<std::string_view>{"hi", ""}));
  EXPECT_STATUS(kCorruption, DecodePlain(Unhex("FFFFFF7F 6869"), PhysicalType::kByteArray, 0, 1,
                                         &fixed, &bytes));
  EXPECT_STATUS(kUnimplemented,
                DecodePlain(std::string(12, 'x'), PhysicalType::kInt96, 0, 1, &fixed, &bytes));
  std::vector<uint32_t> idx;
  EXPECT_STATUS(kCorruption, DecodeDictionaryIndices(Unhex("21 02 00"), 1, &idx)) << "bit width 33";
  ASSERT_OK(DecodeDictionaryIndices(Unhex("02 03 64 00"), 4, &idx));
  EXPECT_EQ(idx, (std::vector<uint32_t>{0, 1, 2, 1}));
}

}  // namespace
}  // namespace icestream::format::parquet
