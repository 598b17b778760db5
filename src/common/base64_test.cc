#include "common/base64.h"

#include <gtest/gtest.h>

#include <random>

namespace icestream::base64 {
namespace {

TEST(Base64Test, Rfc4648Vectors) {
  EXPECT_EQ(Encode(""), "");
  EXPECT_EQ(Encode("f"), "Zg==");
  EXPECT_EQ(Encode("fo"), "Zm8=");
  EXPECT_EQ(Encode("foo"), "Zm9v");
  EXPECT_EQ(Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(*Decode("Zm9vYmE="), "fooba");
  EXPECT_EQ(*Decode("Zg=="), "f");
  EXPECT_EQ(*Decode(""), "");
}

TEST(Base64Test, RejectsBadInput) {
  EXPECT_FALSE(Decode("Zg="));      // length not a multiple of 4
  EXPECT_FALSE(Decode("Zm9*"));     // bad character
  EXPECT_FALSE(Decode("Z===") );    // too much padding
  EXPECT_FALSE(Decode("Zg==Zg=="));  // padding in the middle
  EXPECT_FALSE(Decode("Zm9v\n"));
}

TEST(Base64Test, RandomRoundTrip) {
  std::mt19937 rng(7);
  for (int i = 0; i < 500; ++i) {
    std::string s(rng() % 300, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    EXPECT_EQ(*Decode(Encode(s)), s);
    EXPECT_EQ(*DecodeUrl(EncodeUrl(s)), s);
  }
}

}  // namespace
}  // namespace icestream::base64
