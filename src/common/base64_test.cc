#include "common/base64.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string_view>

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

// AWS refuses a last group whose unused bits are not zero (kinesalite's suite, recorded
// against AWS): "+/+=" and "+/8=" differ only there.
TEST(Base64Test, OnlyCanonicalEncodingsDecode) {
  EXPECT_FALSE(Decode("+/+="));
  EXPECT_EQ(*Decode("+/8="), std::string("\xfb\xff"));
  EXPECT_FALSE(Decode("QR=="));  // 'R' leaves bits set below the byte
  EXPECT_EQ(*Decode("QQ=="), "A");
  EXPECT_EQ(DecodeError("+/+="), "Invalid last non-pad Base64 character dectected");
  EXPECT_EQ(DecodeError("=+/="), "Invalid Base64 character: '='");
  EXPECT_EQ(DecodeError("23456"),
            "Base64 encoded length is expected a multiple of 4 bytes but found: 5");
  EXPECT_EQ(DecodeError("Zm9v"), "");
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

// A plain reference decoder (alphabet search, one character at a time) for the standard
// alphabet with padding.
std::optional<std::string> Reference(std::string_view t) {
  static constexpr std::string_view kAlpha =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (t.size() % 4 != 0) return std::nullopt;
  size_t pad = 0;
  while (pad < 2 && pad < t.size() && t[t.size() - 1 - pad] == '=') ++pad;
  std::string bits_out;
  uint32_t acc = 0;
  int nbits = 0;
  for (size_t i = 0; i < t.size() - pad; ++i) {
    size_t v = kAlpha.find(t[i]);
    if (v == std::string_view::npos) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    nbits += 6;
    if (nbits >= 8) {
      nbits -= 8;
      bits_out.push_back(static_cast<char>((acc >> nbits) & 0xff));
    }
  }
  if (pad && (t.size() - pad) % 4 < 2) return std::nullopt;
  return bits_out;
}

// Every byte value at many positions of long inputs (which take the 32-character vector
// path) is accepted or refused exactly as the reference decides, with the same output.
TEST(Base64Test, AgreesWithReferenceOnEveryByteAtEveryPosition) {
  std::mt19937 rng(11);
  std::string payload(150, '\0');
  for (auto& c : payload) c = static_cast<char>(rng());
  const std::string good = Encode(payload);  // 200 characters, no padding
  for (size_t pos = 0; pos < good.size(); pos += 3) {
    for (int b = 0; b < 256; ++b) {
      std::string t = good;
      t[pos] = static_cast<char>(b);
      auto ref = Reference(t);
      auto got = Decode(t);
      ASSERT_EQ(got.has_value(), ref.has_value()) << "byte " << b << " at " << pos;
      if (got) {
        ASSERT_EQ(*got, *ref) << "byte " << b << " at " << pos;
      }
    }
  }
  for (size_t len = 0; len < 400; ++len) {
    std::string s(len, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    std::string e = Encode(s);
    ASSERT_EQ(*Reference(e), s);
    ASSERT_EQ(*Decode(e), s) << len;
    std::string u = EncodeUrl(s);
    ASSERT_EQ(*DecodeUrl(u), s) << len;
    if (!u.empty()) {
      u[rng() % u.size()] = '+';  // not in the URL alphabet
      EXPECT_FALSE(DecodeUrl(u).has_value());
    }
  }
}

}  // namespace
}  // namespace icestream::base64
