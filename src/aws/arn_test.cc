// aws::Arn: every ARN shape the server meets parses into its five fields and prints back.
#include "aws/arn.h"

#include <gtest/gtest.h>

namespace icestream::aws {
namespace {

TEST(ArnTest, ParsesEveryShapeAndPrintsItBack) {
  struct Case {
    const char* text;
    Arn want;
  };
  const Case cases[] = {
      {"arn:aws:kinesis:us-east-1:000000000000:stream/orders",
       {"aws", "kinesis", "us-east-1", "000000000000", "stream/orders"}},
      {"arn:aws:kinesis:us-east-1:000000000000:stream/orders/consumer/c1:1700000000",
       {"aws", "kinesis", "us-east-1", "000000000000", "stream/orders/consumer/c1:1700000000"}},
      {"arn:aws:s3:::my-bucket", {"aws", "s3", "", "", "my-bucket"}},
      {"arn:aws-cn:s3tables:cn-north-1:111122223333:bucket/tables",
       {"aws-cn", "s3tables", "cn-north-1", "111122223333", "bucket/tables"}},
      {"arn:aws:glue:eu-west-1:000000000000:schema/reg/s",
       {"aws", "glue", "eu-west-1", "000000000000", "schema/reg/s"}},
      {"arn:aws:iam::000000000000:role/delivery",
       {"aws", "iam", "", "000000000000", "role/delivery"}},
  };
  for (const auto& c : cases) {
    auto arn = ParseArn(c.text);
    ASSERT_TRUE(arn.has_value()) << c.text;
    EXPECT_EQ(*arn, c.want) << c.text;
    EXPECT_EQ(arn->ToString(), c.text);
  }
  auto consumer = ParseArn(cases[1].text);
  EXPECT_EQ(consumer->ResourceType(), "stream");
  EXPECT_EQ(consumer->ResourceId(), "orders/consumer/c1:1700000000");
  EXPECT_TRUE(consumer->Is("kinesis", "stream"));
  EXPECT_FALSE(consumer->Is("kinesis", "channel"));
  auto bucket = ParseArn(cases[2].text);
  EXPECT_EQ(bucket->ResourceType(), "");
  EXPECT_EQ(bucket->ResourceId(), "my-bucket");
  EXPECT_TRUE(bucket->Is("s3", ""));
}

TEST(ArnTest, RefusesWhatIsNotAnArn) {
  for (const char* bad :
       {"", "arn", "arn:", "arn:aws:kinesis:us-east-1:000000000000", "arn::kinesis:r:a:stream/x",
        "arn:aws::r:a:stream/x", "arn:aws:kinesis:r:a:", "ARN:aws:s3:::b", "urn:aws:s3:::b",
        "orders", "arn:aws:s3::"}) {
    EXPECT_FALSE(ParseArn(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace icestream::aws
