#include "common/pattern.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>

#include "common/testing/status_assertions.h"

namespace icestream {
namespace {

// The model patterns the Kinesis and channel handlers use.
const char* const kModelPatterns[] = {
    R"(arn:aws.*:kinesis:.*:\d{12}:stream/\S+)",
    R"(arn:aws[-a-z0-9]*:iam::\d{12}:role/[a-zA-Z_0-9+=,.@\-_/]+)",
    R"(arn:aws[-a-z0-9]*:glue:[-a-z0-9]+:\d{12}:schema/[-a-zA-Z0-9_$#.]+/[-a-zA-Z0-9_$#.]+)",
    R"(arn:aws[-a-z0-9]*:s3:::[a-z0-9._-]{3,63})",
    R"([a-zA-Z0-9._]+)",
    R"([0-9A-Za-z!\-_'.*()/=:{}]+)",
    R"(0|([1-9]\d{0,128}))",
    R"(^(arn):aws.*:kinesis:.*:\d{12}:.*stream\/[a-zA-Z0-9_.-]+\/consumer\/[a-zA-Z0-9_.-]+:[0-9]+)",
    R"((a|b)*c?d{2,3})",
    R"(x(?:y|)z)",
};

// std::regex is the oracle here, on inputs short enough for its recursion.
TEST(PatternTest, AgreesWithStdRegexOnRandomShortInputs) {
  std::mt19937 rng(20261201);
  const std::string alphabet = "arn:awskinesis-us-east-1:0123456789/stream/consumerabcdxyz_.$# \n";
  for (const char* src : kModelPatterns) {
    Pattern p = Pattern::MustCompile(src);
    std::regex re(src, std::regex::ECMAScript);
    for (int i = 0; i < 3000; ++i) {
      std::string s;
      // Half the inputs are mutations of a matching-looking ARN, so both answers occur.
      if (i % 2) s = "arn:aws:kinesis:us-east-1:000000000000:stream/orders/consumer/c:1";
      size_t n = rng() % 24;
      for (size_t k = 0; k < n; ++k) {
        char c = alphabet[rng() % alphabet.size()];
        if (!s.empty() && rng() % 2)
          s[rng() % s.size()] = c;
        else
          s.push_back(c);
      }
      EXPECT_EQ(p.Matches(s), std::regex_match(s, re)) << src << " on '" << s << "'";
      EXPECT_EQ(p.MatchesPrefix(s),
                std::regex_search(s, re, std::regex_constants::match_continuous))
          << src << " on '" << s << "'";
    }
  }
}

TEST(PatternTest, KnownAnswers) {
  Pattern arn = Pattern::MustCompile(R"(arn:aws.*:kinesis:.*:\d{12}:stream/\S+)");
  EXPECT_TRUE(arn.Matches("arn:aws:kinesis:us-east-1:000000000000:stream/orders"));
  EXPECT_TRUE(arn.Matches("arn:aws-cn:kinesis:x:000000000000:stream/a b/c:123456789012:stream/d"));
  EXPECT_FALSE(arn.Matches("arn:aws:kinesis:us-east-1:00000000000:stream/orders"));
  EXPECT_FALSE(arn.Matches("arn:aws:kinesis:us-east-1:000000000000:stream/"));
  EXPECT_FALSE(arn.Matches("arn:aws:kinesis:us-east-1:000000000000:stream/a b"));
  Pattern seq = Pattern::MustCompile(R"(0|([1-9]\d{0,128}))");
  EXPECT_TRUE(seq.Matches("0"));
  EXPECT_TRUE(seq.Matches(std::string("1") + std::string(128, '7')));
  EXPECT_FALSE(seq.Matches(std::string("1") + std::string(129, '7')));
  EXPECT_FALSE(seq.Matches("01"));
  EXPECT_FALSE(seq.Matches(""));
}

// The inputs that crashed std::regex (issue 19): tens of thousands of characters, and a
// matching ARN of 16 MB, answered in linear time without recursion.
TEST(PatternTest, LongInputsRunInLinearTime) {
  Pattern arn = Pattern::MustCompile(R"(arn:aws.*:kinesis:.*:\d{12}:stream/\S+)");
  std::string head = "arn:aws:kinesis:us-east-1:000000000000:stream/";
  EXPECT_TRUE(arn.Matches(head + std::string(30000, 'x')));
  EXPECT_FALSE(arn.Matches(head + std::string(30000, 'x') + " "));
  EXPECT_FALSE(arn.Matches(std::string(30000, ':')));
  std::string big = "arn:aws" + std::string(16 << 20, ':') + "kinesis::000000000000:stream/s";
  EXPECT_TRUE(arn.Matches(big));
  // Every byte value, many times over: the DFA cache starts over and stays correct.
  std::mt19937 rng(7);
  std::string noise = head;
  for (int i = 0; i < 1 << 20; ++i) noise.push_back(static_cast<char>(rng() % 255 + 1));
  bool has_space = noise.find_first_of(" \t\n\r\f\v", head.size()) != std::string::npos;
  EXPECT_EQ(arn.Matches(noise), !has_space);
  Pattern nested = Pattern::MustCompile("((a|aa)*b?)*c");
  EXPECT_FALSE(nested.Matches(std::string(100000, 'a')));
  EXPECT_TRUE(nested.Matches(std::string(100000, 'a') + "c"));
}

TEST(PatternTest, RejectsWhatItCannotRunSafely) {
  EXPECT_NOT_OK(Pattern::Compile(std::string(5000, 'a')));
  EXPECT_NOT_OK(Pattern::Compile(std::string(40, '(') + "a" + std::string(40, ')')));
  EXPECT_NOT_OK(Pattern::Compile("((a{1000}){1000})"));  // too many states
  EXPECT_NOT_OK(Pattern::Compile("a{3,2}"));
  EXPECT_NOT_OK(Pattern::Compile("*a"));
  EXPECT_NOT_OK(Pattern::Compile("(a"));
  EXPECT_NOT_OK(Pattern::Compile("a)"));
  EXPECT_NOT_OK(Pattern::Compile("[z-a]"));
  EXPECT_NOT_OK(Pattern::Compile("[abc"));
  EXPECT_NOT_OK(Pattern::Compile("a\\"));
  EXPECT_NOT_OK(Pattern::Compile("(?=a)"));
  EXPECT_OK(Pattern::Compile(std::string(30, '(') + "a" + std::string(30, ')')));
}

}  // namespace
}  // namespace icestream
