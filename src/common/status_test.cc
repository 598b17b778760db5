#include "common/status.h"

#include <gtest/gtest.h>

#include "common/json_depth.h"
#include "common/testing/status_assertions.h"

namespace icestream {
namespace {

Result<int> Half(int v) {
  if (v % 2) return InvalidArgument("odd");
  return v / 2;
}

Result<int> Quarter(int v) {
  ASSIGN_OR_RETURN(int h, Half(v));
  ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status Check(int v) {
  RETURN_IF_ERROR(Half(v).status());
  return Status::OK();
}

TEST(StatusTest, OkAndErrors) {
  EXPECT_OK(Status::OK());
  Status s = NotFound("x");
  EXPECT_STATUS(kNotFound, s);
  EXPECT_EQ(s.ToString(), "NotFound: x");
  EXPECT_EQ(s.WithContext("ctx").message(), "ctx: x");
}

TEST(StatusTest, ResultPropagation) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_STATUS(kInvalidArgument, Quarter(6));
  EXPECT_OK(Check(2));
  EXPECT_STATUS(kInvalidArgument, Check(3));
}

enum class FirstKind { kA, kB };
enum class OtherKind { kA };

TEST(StatusTest, SubcodesSurviveContextAndNeverMatchAnotherEnum) {
  Status s = WithSubcode(NotFound("no such table: t"), FirstKind::kB);
  EXPECT_STATUS(kNotFound, s);
  EXPECT_EQ(s.message(), "no such table: t");
  EXPECT_TRUE(s.Is(FirstKind::kB));
  EXPECT_FALSE(s.Is(FirstKind::kA));
  EXPECT_FALSE(s.Is(OtherKind::kA));  // same number, another enum
  EXPECT_EQ(s.subcode<FirstKind>(), FirstKind::kB);
  EXPECT_EQ(s.subcode<OtherKind>(), std::nullopt);
  Status wrapped = s.WithContext("loading db.t");
  EXPECT_EQ(wrapped.message(), "loading db.t: no such table: t");
  EXPECT_TRUE(wrapped.Is(FirstKind::kB));
  Result<int> r = wrapped;
  EXPECT_TRUE(r.status().Is(FirstKind::kB));
  EXPECT_FALSE(NotFound("no such table: t").Is(FirstKind::kB));           // the text says nothing
  EXPECT_EQ(WithSubcode(Status::OK(), FirstKind::kA).detail(), nullptr);  // OK stays OK
  EXPECT_TRUE(WithSubcode(s, FirstKind::kA).Is(FirstKind::kA));           // replaced
  EXPECT_EQ(s.detail()->ToString(), "subcode 1");
}

TEST(StatusTest, RedactPaths) {
  EXPECT_EQ(RedactPaths("pwrite /var/lib/icestream/streams/1/0/x.log: No space left on device"),
            "pwrite <path>: No space left on device");
  EXPECT_EQ(RedactPaths("create dir '/tmp/a/b' failed"), "create dir '<path>' failed");
  EXPECT_EQ(RedactPaths("path=/srv/data/x."), "path=<path>.");
  EXPECT_EQ(RedactPaths("POST / with X-Amz-Target"), "POST / with X-Amz-Target");
  EXPECT_EQ(RedactPaths("a/b and 1/2 stay"), "a/b and 1/2 stay");
  EXPECT_EQ(RedactPaths("see file:///tmp/x/y"), "see file:///tmp/x/y");
}

TEST(JsonDepthTest, CountsBracketsOutsideStrings) {
  EXPECT_EQ(JsonNestingDepth("", 10), 0u);
  EXPECT_EQ(JsonNestingDepth(R"({"a":[1,{"b":2}]})", 10), 3u);
  EXPECT_EQ(JsonNestingDepth(R"({"a":"[[[[\"{{{"})", 10), 1u);
  EXPECT_EQ(JsonNestingDepth(std::string(100000, '['), 64), 65u);
  EXPECT_EQ(JsonNestingDepth("[[]][[[]]]", 10), 3u);
}

}  // namespace
}  // namespace icestream
