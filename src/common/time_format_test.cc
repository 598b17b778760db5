#include "common/time_format.h"

#include <gtest/gtest.h>

namespace icestream {
namespace {

TEST(TimeFormatTest, Formats) {
  int64_t t = 784111777000;  // Sun, 06 Nov 1994 08:49:37 GMT
  EXPECT_EQ(FormatHttpDate(t), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(FormatIso8601Ms(t + 89), "1994-11-06T08:49:37.089Z");
  EXPECT_EQ(FormatAmzDate(t), "19941106T084937Z");
  EXPECT_EQ(*ParseAmzDate("19941106T084937Z"), t);
  EXPECT_FALSE(ParseAmzDate("1994-11-06T08:49"));
  EXPECT_EQ(*ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT"), t);
  EXPECT_FALSE(ParseHttpDate("Sun, 06 Nov 1994 08:49:37 UTC"));
  EXPECT_FALSE(ParseHttpDate("06 Nov 1994 08:49:37 GMT"));
  EXPECT_FALSE(ParseHttpDate("Sun, 06 Foo 1994 08:49:37 GMT"));
  EXPECT_EQ(FormatJavaDate(1421889722000), "Thu Jan 22 01:22:02 UTC 2015");
}

}  // namespace
}  // namespace icestream
