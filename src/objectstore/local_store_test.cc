#include "objectstore/local_store.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

namespace icestream::objectstore {
namespace {

class LocalStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("objstore-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::filesystem::path root_;
};

TEST_F(LocalStoreTest, PutGetHeadListDelete) {
  LocalObjectStore s(root_.string());
  ASSERT_TRUE(s.CheckBucket("b").ok());
  ASSERT_TRUE(s.Put("b", "a/x.json", "hello").ok());
  ASSERT_TRUE(s.Put("b", "a/y.json", "world!").ok());
  ASSERT_TRUE(s.Put("b", "c.json", "z").ok());
  EXPECT_EQ(*s.Get("b", "a/x.json"), "hello");
  EXPECT_EQ(*s.GetRange("b", "a/y.json", 1, 3), "orl");
  EXPECT_EQ(*s.GetRange("b", "a/y.json", 4, 100), "d!");
  EXPECT_EQ(s.Head("b", "a/y.json")->size, 6u);
  auto l = *s.List("b", "a/");
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].key, "a/x.json");
  EXPECT_EQ(s.List("b", "")->size(), 3u);
  ASSERT_TRUE(s.Put("b", "a/x.json", "again").ok());
  EXPECT_EQ(*s.Get("b", "a/x.json"), "again");
  ASSERT_TRUE(s.Delete("b", "a/x.json").ok());
  ASSERT_TRUE(s.Delete("b", "a/x.json").ok());
  EXPECT_EQ(s.Get("b", "a/x.json").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.Head("b", "nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.List("nobucket", "").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.Uri("b", "k"), "file://" + (root_ / "b" / "k").string());
}

TEST_F(LocalStoreTest, IfNoneMatchAndBadKeys) {
  LocalObjectStore s(root_.string());
  ASSERT_TRUE(s.Put("b", "k", "1", {.if_none_match = true}).ok());
  EXPECT_EQ(s.Put("b", "k", "2", {.if_none_match = true}).code(), StatusCode::kConflict);
  EXPECT_EQ(*s.Get("b", "k"), "1");
  for (std::string bad : {"../x", "a/../../x", "/abs", "a//b", ""}) {
    EXPECT_EQ(s.Put("b", bad, "x").code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(s.Put("..", "k", "x").code(), StatusCode::kInvalidArgument);
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
  EXPECT_FALSE(BucketFromArn("arn:aws:s3:::Bad_Bucket").ok());
  EXPECT_FALSE(BucketFromArn("a/b").ok());
}

}  // namespace
}  // namespace icestream::objectstore
