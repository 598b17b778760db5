#include "kinesis/tokens.h"

#include <gtest/gtest.h>

#include "common/base64.h"

namespace icestream::kinesis {
namespace {

TEST(TokensTest, IteratorRoundTripAndTamper) {
  TokenCodec codec("secret");
  IteratorToken t{std::string(128, 'n'), 123456789012345, 7, 99, 1700000000000};
  std::string s = codec.EncodeIterator(t);
  EXPECT_LE(s.size(), 512u);
  auto back = codec.DecodeIterator(s);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->stream_name, t.stream_name);
  EXPECT_EQ(back->offset, 99u);
  EXPECT_EQ(back->issued_ms, t.issued_ms);
  EXPECT_FALSE(TokenCodec("other").DecodeIterator(s));
  auto raw = *base64::Decode(s);
  raw[15] ^= 1;  // change the offset
  EXPECT_FALSE(codec.DecodeIterator(base64::Encode(raw)));
  EXPECT_FALSE(codec.DecodeIterator("garbage"));
  EXPECT_FALSE(codec.DecodeIterator(""));
}

TEST(TokensTest, NextToken) {
  TokenCodec codec("k");
  std::string s = codec.EncodeNextToken({{"after", "x"}}, 5);
  auto t = codec.DecodeNextToken(s);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->payload["after"], "x");
  EXPECT_EQ(t->issued_ms, 5);
  EXPECT_FALSE(codec.DecodeIterator(s));
}

}  // namespace
}  // namespace icestream::kinesis
