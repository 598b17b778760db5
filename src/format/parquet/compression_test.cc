// Tests of the page codecs: exact framing Parquet readers insist on (a gzip member, a
// zstd frame carrying its content size, a raw snappy block) and round trips.
#include "format/parquet/compression.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <random>

#include "common/testing/status_assertions.h"

namespace icestream::format::parquet {
namespace {

std::string Sample(size_t n) {
  std::mt19937 rng(7);
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(rng() % 4 == 0 ? rng() : 'a' + i % 7));
  return s;
}

TEST(CompressionTest, FramingAndRoundTrip) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, size_t{300000}}) {
    std::string in = Sample(n);
    for (Codec codec : {Codec::kUncompressed, Codec::kSnappy, Codec::kGzip, Codec::kZstd}) {
      ASSERT_OK_AND_ASSIGN(auto c, MakeCompressor(codec));
      std::string out = "prefix";  // Compress appends
      ASSERT_OK(c->Compress(in, &out));
      ASSERT_EQ(out.substr(0, 6), "prefix");
      std::string body = out.substr(6);
      switch (codec) {
        case Codec::kGzip:
          ASSERT_GE(body.size(), 18u);
          EXPECT_EQ(static_cast<uint8_t>(body[0]), 0x1f);  // RFC 1952 member
          EXPECT_EQ(static_cast<uint8_t>(body[1]), 0x8b);
          break;
        case Codec::kZstd:
          EXPECT_EQ(ZSTD_getFrameContentSize(body.data(), body.size()), n);  // RFC 8878 frame
          break;
        case Codec::kUncompressed:
          EXPECT_EQ(body, in);
          break;
        default:
          break;
      }
      auto back = Decompress(codec, body, n);
      ASSERT_OK(back) << CodecName(codec) << " ";
      EXPECT_EQ(*back, in);
      EXPECT_STATUS(kCorruption, Decompress(codec, body, n + 1)) << CodecName(codec);
    }
  }
}

TEST(CompressionTest, Names) {
  Codec c;
  EXPECT_TRUE(ParseCodec("zstd", &c));
  EXPECT_EQ(c, Codec::kZstd);
  EXPECT_TRUE(ParseCodec("none", &c));
  EXPECT_EQ(c, Codec::kUncompressed);
  EXPECT_FALSE(ParseCodec("lz4", &c));
  EXPECT_EQ(CodecName(Codec::kSnappy), "snappy");
}

}  // namespace
}  // namespace icestream::format::parquet
