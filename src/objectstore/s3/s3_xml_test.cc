#include "objectstore/s3/s3_xml.h"

#include <gtest/gtest.h>

namespace icestream::objectstore::s3 {
namespace {

TEST(S3XmlTest, ErrorsAndListPages) {
  std::string err =
      "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The key &amp; &lt;x&gt; "
      "&#233;</Message></Error>";
  EXPECT_EQ(*XmlText(err, "Code"), "NoSuchKey");
  EXPECT_EQ(*XmlText(err, "Message"), "The key & <x> \xc3\xa9");
  EXPECT_FALSE(XmlText(err, "Nope"));
  std::string list =
      "<ListBucketResult><Name>b</Name><IsTruncated>true</IsTruncated>"
      "<Contents><Key>a/1.gz</Key><LastModified>2026-01-02T03:04:05.678Z</LastModified>"
      "<ETag>&quot;abc&quot;</ETag><Size>42</Size></Contents>"
      "<Contents><Key>a/2&amp;.gz</Key><LastModified>2026-01-02T03:04:06.000Z</LastModified>"
      "<Size>7</Size></Contents>"
      "<NextContinuationToken>tok+/=</NextContinuationToken></ListBucketResult>";
  auto page = ParseListObjectsV2(list);
  ASSERT_EQ(page.objects.size(), 2u);
  EXPECT_EQ(page.objects[0].key, "a/1.gz");
  EXPECT_EQ(page.objects[0].size, 42u);
  EXPECT_EQ(page.objects[0].etag, "\"abc\"");
  EXPECT_EQ(page.objects[0].last_modified_ms, 1767323045678);
  EXPECT_EQ(page.objects[1].key, "a/2&.gz");
  EXPECT_TRUE(page.truncated);
  EXPECT_EQ(page.next_token, "tok+/=");
  EXPECT_EQ(XmlEscape("a&<\"'>"), "a&amp;&lt;&quot;&apos;&gt;");
}

}  // namespace
}  // namespace icestream::objectstore::s3
