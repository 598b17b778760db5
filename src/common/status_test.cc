#include "common/status.h"

#include <gtest/gtest.h>

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
  EXPECT_TRUE(Status::OK().ok());
  Status s = NotFound("x");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NotFound: x");
  EXPECT_EQ(s.WithContext("ctx").message(), "ctx: x");
}

TEST(StatusTest, ResultPropagation) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Check(2).ok());
  EXPECT_FALSE(Check(3).ok());
}

}  // namespace
}  // namespace icestream
