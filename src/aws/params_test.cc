#include "aws/params.h"

#include <gtest/gtest.h>

namespace icestream::aws {
namespace {

using nlohmann::json;

TEST(ParamsTest, ValidationMessagesFollowAwsShape) {
  json body = {{"StreamName", ""}};
  Params p(body);
  auto name = p.Str("StreamName");
  ASSERT_TRUE(name);
  p.Pattern("streamName", *name, MatchesNameChars(*name), "[a-zA-Z0-9_.-]+");
  p.Length("streamName", *name, 1, 128);
  auto err = p.Error();
  ASSERT_TRUE(err);
  EXPECT_EQ(err->type, "ValidationException");
  EXPECT_EQ(err->message,
            "2 validation errors detected: Value '' at 'streamName' failed to satisfy constraint: "
            "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+; Value '' at "
            "'streamName' failed to satisfy constraint: Member must have length greater than or "
            "equal to 1");
}

TEST(ParamsTest, WrongTypesAreSerializationErrors) {
  json body = {{"ShardCount", "3"}, {"Flag", 1}, {"Name", 5}, {"Ts", "x"}};
  Params p(body);
  EXPECT_FALSE(p.Int("ShardCount"));
  EXPECT_EQ(p.Error()->type, "SerializationException");
  Params q(body);
  EXPECT_FALSE(q.Bool("Flag"));
  EXPECT_EQ(q.Error()->type, "SerializationException");
  Params r(body);
  EXPECT_FALSE(r.TimestampMs("Ts"));
  EXPECT_EQ(r.Error()->type, "SerializationException");
}

TEST(ParamsTest, NumbersAndTimestamps) {
  json body = {{"A", 3.9}, {"B", 99999999999}, {"T", 1441215410.867}, {"U", 1441215410}};
  Params p(body);
  EXPECT_EQ(*p.Int("A"), 3);
  EXPECT_EQ(*p.Int("B"), INT32_MAX);
  EXPECT_EQ(*p.Long("B"), 99999999999);
  EXPECT_EQ(*p.TimestampMs("T"), 1441215410867);
  EXPECT_EQ(*p.TimestampMs("U"), 1441215410000);
  EXPECT_FALSE(p.Error());
}

TEST(ParamsTest, Utf8) {
  EXPECT_EQ(Utf8Length("h\xc3\xa9llo"), 5u);
  EXPECT_TRUE(IsValidUtf8("h\xc3\xa9llo"));
  EXPECT_FALSE(IsValidUtf8("\xc3"));
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));  // surrogate
  EXPECT_TRUE(MatchesDecimal("0", 39));
  EXPECT_FALSE(MatchesDecimal("01", 39));
  EXPECT_FALSE(MatchesDecimal("", 39));
}

}  // namespace
}  // namespace icestream::aws
