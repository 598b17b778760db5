#include "log/format.h"

#include <gtest/gtest.h>

#include <string>

#include "common/testing/status_assertions.h"

namespace icestream::log {
namespace {

std::string Frame(uint64_t offset, int64_t t, std::string_view pk, std::string_view data) {
  std::string f(FrameSize(pk.size(), data.size()), '\0');
  EncodeFrame(f.data(), offset, t, pk, data);
  return f;
}

TEST(FormatTest, FrameRoundTrip) {
  std::string f = Frame(42, 1700000000123, "key", "hello");
  ASSERT_EQ(f.size(), kFrameHeaderSize + 3 + 5);
  FrameView v;
  ASSERT_EQ(ParseFrame(f, &v), FrameParse::kOk);
  EXPECT_EQ(v.offset, 42u);
  EXPECT_EQ(v.arrival_ms, 1700000000123);
  EXPECT_EQ(v.partition_key, "key");
  EXPECT_EQ(v.data, "hello");
  EXPECT_EQ(v.frame_size, f.size());
}

TEST(FormatTest, EveryFlippedByteIsDetected) {
  std::string f = Frame(7, 99, "pk", "some payload bytes");
  for (size_t i = 0; i < f.size(); ++i) {
    std::string g = f;
    g[i] ^= 0x01;
    FrameView v;
    EXPECT_NE(ParseFrame(g, &v), FrameParse::kOk) << "byte " << i;
  }
}

TEST(FormatTest, TruncatedFrameIsIncomplete) {
  std::string f = Frame(1, 2, "k", "0123456789");
  for (size_t n = 0; n < f.size(); ++n) {
    FrameView v;
    EXPECT_EQ(ParseFrame(std::string_view(f).substr(0, n), &v), FrameParse::kIncomplete) << n;
  }
}

TEST(FormatTest, ImpossibleLengthIsCorrupt) {
  std::string f = Frame(1, 2, "k", "x");
  f[4] = '\x7f';  // len no longer matches pk_len + data_len
  FrameView v;
  EXPECT_EQ(ParseFrame(f, &v), FrameParse::kCorrupt);
}

TEST(FormatTest, SegmentHeader) {
  std::string h = EncodeSegmentHeader(12345);
  ASSERT_EQ(h.size(), kSegmentHeaderSize);
  EXPECT_EQ(*DecodeSegmentHeader(h), 12345u);
  h[17] ^= 1;
  EXPECT_STATUS(kCorruption, DecodeSegmentHeader(h));
}

TEST(FormatTest, IndexRoundTripAndDamage) {
  SegmentIndex idx;
  idx.base_offset = 100;
  idx.end_offset = 250;
  idx.valid_bytes = 123456;
  idx.last_arrival_ms = 777;
  idx.entries = {{100, 32, 5}, {180, 65600, 6}};
  std::string b = EncodeIndex(idx);
  ASSERT_OK_AND_ASSIGN(auto back, DecodeIndex(b));
  EXPECT_EQ(back.end_offset, 250u);
  EXPECT_EQ(back.valid_bytes, 123456u);
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[1].position, 65600u);
  b[40] ^= 4;
  EXPECT_STATUS(kCorruption, DecodeIndex(b));
  EXPECT_STATUS(kCorruption, DecodeIndex(std::string_view(b).substr(0, b.size() - 1)));
}

}  // namespace
}  // namespace icestream::log
