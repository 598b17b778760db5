// Table bucket names and ARNs (arn:<partition>:s3tables:<region>:<account>:bucket/<name>).
#include "iceberg/warehouses.h"

#include <gtest/gtest.h>

#include "common/testing/status_assertions.h"

namespace icestream::iceberg {
namespace {

TEST(WarehousesTest, BucketNamesAndArns) {
  Warehouses w(nullptr, nullptr, nullptr, "us-east-1", "000000000000");
  EXPECT_EQ(w.BucketArn("lake"), "arn:aws:s3tables:us-east-1:000000000000:bucket/lake");
  EXPECT_EQ(*w.BucketName("lake"), "lake");
  EXPECT_EQ(*w.BucketName(w.BucketArn("lake")), "lake");  // what we print, we read
  // Another region or account is not a bucket of this server.
  EXPECT_STATUS(kInvalidArgument,
                w.BucketName("arn:aws:s3tables:eu-west-1:000000000000:bucket/lake"));
  EXPECT_STATUS(kInvalidArgument,
                w.BucketName("arn:aws:s3tables:us-east-1:111122223333:bucket/lake"));
  // Not a table bucket ARN at all, or a name S3 Tables refuses.
  EXPECT_STATUS(kInvalidArgument, w.BucketName("arn:aws:s3:::lake"));
  EXPECT_STATUS(kInvalidArgument,
                w.BucketName("arn:aws:s3tables:us-east-1:000000000000:table/lake"));
  EXPECT_STATUS(kInvalidArgument,
                w.BucketName("arn:aws:s3tables:us-east-1:000000000000:bucket/a/b"));
  EXPECT_STATUS(kInvalidArgument, w.BucketName("ab"));
  EXPECT_STATUS(kInvalidArgument, w.BucketName("-lake"));
  EXPECT_STATUS(kInvalidArgument, w.BucketName("Lake"));
}

}  // namespace
}  // namespace icestream::iceberg
