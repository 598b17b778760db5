#include "objectstore/local_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"

namespace icestream::objectstore {
namespace {

class LocalStoreTest : public ::testing::Test {
 protected:
  testing::TempDir tmp_;
  std::filesystem::path root_ = tmp_.path();
};

TEST_F(LocalStoreTest, PutGetHeadListDelete) {
  LocalObjectStore s(root_.string());
  ASSERT_OK(s.CheckBucket("b"));
  ASSERT_OK(s.Put("b", "a/x.json", "hello"));
  ASSERT_OK(s.Put("b", "a/y.json", "world!"));
  ASSERT_OK(s.Put("b", "c.json", "z"));
  EXPECT_EQ(*s.Get("b", "a/x.json"), "hello");
  EXPECT_EQ(*s.GetRange("b", "a/y.json", 1, 3), "orl");
  EXPECT_EQ(*s.GetRange("b", "a/y.json", 4, 100), "d!");
  EXPECT_EQ(s.Head("b", "a/y.json")->size, 6u);
  auto l = *s.List("b", "a/");
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].key, "a/x.json");
  EXPECT_EQ(s.List("b", "")->size(), 3u);
  ASSERT_OK(s.Put("b", "a/x.json", "again"));
  EXPECT_EQ(*s.Get("b", "a/x.json"), "again");
  ASSERT_OK(s.Delete("b", "a/x.json"));
  ASSERT_OK(s.Delete("b", "a/x.json"));
  EXPECT_STATUS(kNotFound, s.Get("b", "a/x.json"));
  EXPECT_STATUS(kNotFound, s.Head("b", "nope"));
  EXPECT_STATUS(kNotFound, s.List("nobucket", ""));
  EXPECT_EQ(s.Uri("b", "k"), "file://" + (root_ / "b" / "k").string());
}

TEST_F(LocalStoreTest, IfNoneMatchAndBadKeys) {
  LocalObjectStore s(root_.string());
  ASSERT_OK(s.Put("b", "k", "1", {.if_none_match = true}));
  EXPECT_STATUS(kConflict, s.Put("b", "k", "2", {.if_none_match = true}));
  EXPECT_EQ(*s.Get("b", "k"), "1");
  for (std::string bad : {"../x", "a/../../x", "/abs", "a//b", ""}) {
    EXPECT_STATUS(kInvalidArgument, s.Put("b", bad, "x")) << bad;
  }
  EXPECT_STATUS(kInvalidArgument, s.Put("..", "k", "x"));
}

TEST_F(LocalStoreTest, ConcurrentConditionalWritesHaveOneWinner) {
  LocalObjectStore s(root_.string());
  std::atomic<int> wins{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i) {
    ts.emplace_back([&, i] {
      if (s.Put("b", "race", std::to_string(i), {.if_none_match = true}).ok()) wins++;
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(wins.load(), 1);
}

TEST(BucketArnTest, Parses) {
  EXPECT_EQ(*BucketFromArn("arn:aws:s3:::my-bucket"), "my-bucket");
  EXPECT_EQ(*BucketFromArn("plain.bucket"), "plain.bucket");
  EXPECT_STATUS(kInvalidArgument, BucketFromArn("arn:aws:s3:::Bad_Bucket"));
  EXPECT_STATUS(kInvalidArgument, BucketFromArn("a/b"));
}

}  // namespace
}  // namespace icestream::objectstore
