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

// AWS's order (aws-api.md §A.7): type errors, then every model violation, then the
// authentication verdict, then a deferred service error.
TEST(ParamsTest, ErrorsComeOutInAwsOrder) {
  ApiError auth{"MissingAuthenticationTokenException", "Missing Authentication Token", 400};
  ApiError later = InvalidArgumentError("Neither StreamARN nor StreamName was provided.");
  json body = {{"Limit", "x"}};
  Params p(body);
  p.SetAuthError(auth);
  p.Defer(later);
  p.Required("partitionKey", false);
  EXPECT_FALSE(p.Int("Limit"));
  EXPECT_EQ(p.Error()->type, "SerializationException");

  json ok = json::object();
  Params q(ok);
  q.SetAuthError(auth);
  q.Defer(later);
  q.Required("a", false);
  q.Required("b", false);
  EXPECT_EQ(q.Error()->message,
            "2 validation errors detected: Value null at 'a' failed to satisfy constraint: Member "
            "must not be null; Value null at 'b' failed to satisfy constraint: Member must not be "
            "null");

  Params r(ok);
  r.SetAuthError(auth);
  r.Defer(later);
  EXPECT_EQ(r.Error()->type, "MissingAuthenticationTokenException");
  Params s(ok);
  s.Defer(later);
  s.Defer(InvalidArgumentError("second"));
  EXPECT_EQ(s.Error()->message, later.message);

  // A nested structure's findings join the outer reader's.
  json inner_body = {{"N", true}};
  Params inner(inner_body);
  inner.Str("N");
  Params outer(ok);
  outer.Absorb(inner);
  EXPECT_EQ(outer.Error()->type, "SerializationException");
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
