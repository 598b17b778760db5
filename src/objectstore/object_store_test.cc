// One conformance suite for every ObjectStore (Arrow's GenericFileSystemTest is the model):
// the same behaviour from the local-folder store and the in-memory one, then what each adds
// on its own. The S3 store runs the same checks against radosgw (s3/s3_store_check.cc,
// tests/interop/test_s3_store.py).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "common/fs.h"
#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"
#include "objectstore/local_store.h"
#include "objectstore/memory_store.h"

namespace icestream::objectstore {
namespace {

template <typename Store>
class ObjectStoreConformanceTest : public ::testing::Test {
 protected:
  Store& store() { return store_; }
  testing::TempDir dir_;  // the local store's root (unused by the in-memory one)
  Store store_ = Make();

 private:
  Store Make() {
    if constexpr (std::is_same_v<Store, LocalObjectStore>) {
      return LocalObjectStore(dir_.path().string());
    } else {
      return Store();
    }
  }
};

// MemoryObjectStore holds a mutex: built in place rather than moved.
template <>
class ObjectStoreConformanceTest<MemoryObjectStore> : public ::testing::Test {
 protected:
  MemoryObjectStore& store() { return store_; }
  MemoryObjectStore store_;
};

using Stores = ::testing::Types<LocalObjectStore, MemoryObjectStore>;
TYPED_TEST_SUITE(ObjectStoreConformanceTest, Stores);

TYPED_TEST(ObjectStoreConformanceTest, PutGetHeadListDelete) {
  ObjectStore& s = this->store();
  ASSERT_OK(s.CheckBucket("b"));
  ASSERT_OK(s.Put("b", "a/x.json", "hello"));
  ASSERT_OK(s.Put("b", "a/y.json", "world!"));
  ASSERT_OK(s.Put("b", "c.json", "z"));
  EXPECT_EQ(*s.Get("b", "a/x.json"), "hello");
  EXPECT_EQ(*s.GetRange("b", "a/y.json", 1, 3), "orl");
  EXPECT_EQ(*s.GetRange("b", "a/y.json", 4, 100), "d!");  // shorter at the end
  EXPECT_EQ(*s.GetRange("b", "a/y.json", 6, 10), "");
  EXPECT_EQ(s.Head("b", "a/y.json")->size, 6u);
  ASSERT_OK_AND_ASSIGN(auto listed, s.List("b", "a/"));
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].key, "a/x.json");
  EXPECT_EQ(listed[1].key, "a/y.json");
  EXPECT_EQ(listed[1].size, 6u);
  EXPECT_EQ(s.List("b", "")->size(), 3u);
  EXPECT_EQ(s.List("b", "zzz")->size(), 0u);
  ASSERT_OK(s.Put("b", "a/x.json", "again"));  // overwrite is whole
  EXPECT_EQ(*s.Get("b", "a/x.json"), "again");
  ASSERT_OK(s.Delete("b", "a/x.json"));
  ASSERT_OK(s.Delete("b", "a/x.json"));  // deleting a missing key is fine
  EXPECT_STATUS(kNotFound, s.Get("b", "a/x.json"));
  EXPECT_STATUS(kNotFound, s.GetRange("b", "a/x.json", 0, 1));
  EXPECT_STATUS(kNotFound, s.Head("b", "nope"));
  EXPECT_STATUS(kNotFound, s.List("nobucket", ""));
}

TYPED_TEST(ObjectStoreConformanceTest, EmptyObjectsAndBinaryData) {
  ObjectStore& s = this->store();
  std::string binary("\0\x01\xff\n\r", 5);
  ASSERT_OK(s.Put("b", "empty", ""));
  ASSERT_OK(s.Put("b", "bin", binary));
  EXPECT_EQ(*s.Get("b", "empty"), "");
  EXPECT_EQ(s.Head("b", "empty")->size, 0u);
  EXPECT_EQ(*s.Get("b", "bin"), binary);
}

// Sizes around the local store's direct-write threshold and the 4096-byte blocks and 1 MiB
// chunks it writes in, from an aligned and from an unaligned source: every byte comes back.
TYPED_TEST(ObjectStoreConformanceTest, LargeObjectsOfAnySizeComeBackWhole) {
  ObjectStore& s = this->store();
  constexpr size_t kMiB = 1 << 20;
  std::string pool(5 * kMiB + 8192, '\0');
  uint32_t x = 2463534242u;
  for (char& c : pool) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    c = static_cast<char>(x);
  }
  for (size_t size :
       {kMiB - 1, kMiB, kMiB + 1, kMiB + 4095, kMiB + 4096, 4 * kMiB + 1, 5 * kMiB + 4097}) {
    for (size_t skew : {0, 1, 4095}) {
      std::string_view data(pool.data() + skew, size);
      std::string key = "big/" + std::to_string(size) + "-" + std::to_string(skew);
      ASSERT_OK(s.Put("b", key, data));
      ASSERT_OK_AND_ASSIGN(std::string got, s.Get("b", key));
      ASSERT_EQ(got.size(), size) << key;
      EXPECT_TRUE(got == data) << key << ": content differs";
    }
  }
}

TYPED_TEST(ObjectStoreConformanceTest, IfNoneMatchWritesOnlyAbsentKeys) {
  ObjectStore& s = this->store();
  ASSERT_OK(s.Put("b", "k", "1", {.if_none_match = true}));
  EXPECT_STATUS(kConflict, s.Put("b", "k", "2", {.if_none_match = true}));
  EXPECT_EQ(*s.Get("b", "k"), "1");
  ASSERT_OK(s.Put("b", "k", "3"));  // unconditional writes still overwrite
  EXPECT_EQ(*s.Get("b", "k"), "3");
}

TYPED_TEST(ObjectStoreConformanceTest, ConcurrentConditionalWritesHaveOneWinner) {
  ObjectStore& s = this->store();
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

TYPED_TEST(ObjectStoreConformanceTest, EmptyNamesAreRefused) {
  ObjectStore& s = this->store();
  EXPECT_STATUS(kInvalidArgument, s.Put("b", "", "x"));
  EXPECT_STATUS(kInvalidArgument, s.Put("", "k", "x"));
  EXPECT_STATUS(kInvalidArgument, s.Put("a/b", "k", "x"));
}

class LocalStoreTest : public ::testing::Test {
 protected:
  testing::TempDir tmp_;
  std::filesystem::path root_ = tmp_.path();
};

TEST_F(LocalStoreTest, KeysCannotEscapeTheRootAndUrisAreFiles) {
  LocalObjectStore s(root_.string());
  for (std::string bad : {"../x", "a/../../x", "/abs", "a//b"}) {
    EXPECT_STATUS(kInvalidArgument, s.Put("b", bad, "x")) << bad;
  }
  EXPECT_STATUS(kInvalidArgument, s.Put("..", "k", "x"));
  EXPECT_EQ(s.Uri("b", "k"), "file://" + (root_ / "b" / "k").string());
}

// A Put cut short by a crash leaves its temporary file: List removes it once its writer is
// gone, and leaves the temporary files of a writer that runs (this process) in place; neither
// is listed as an object.
TEST_F(LocalStoreTest, ListRemovesTheTemporaryFilesOfDeadWriters) {
  LocalObjectStore s(root_.string());
  ASSERT_OK(s.Put("b", "d/k", "whole"));
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // reaped: its pid runs nothing now
  const auto dead = root_ / "b" / "d" / ("k2.parquet.tmp-" + std::to_string(child) + "-3");
  const auto alive = root_ / "b" / "d" / ("k3.tmp-" + std::to_string(::getpid()) + "-9");
  const auto odd = root_ / "b" / "d" / "k4.tmp-notapid";
  for (const auto& p : {dead, alive, odd}) ASSERT_OK(fs::WriteFileAtomic(p.string(), "partial"));
  ASSERT_OK_AND_ASSIGN(auto listed, s.List("b", ""));
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].key, "d/k");
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(alive));
  EXPECT_TRUE(std::filesystem::exists(odd));
}

TEST(MemoryStoreTest, FaultsOwnersOptionsAndCounts) {
  ManualClock clock{1700000000000};
  MemoryObjectStore s(&clock);
  ASSERT_OK(s.Put("b", "k", "v", {.content_type = "application/json", .storage_class = "GLACIER"}));
  EXPECT_EQ(s.OptionsOf("b", "k")->content_type, "application/json");
  EXPECT_EQ(s.OptionsOf("b", "k")->storage_class, "GLACIER");
  EXPECT_FALSE(s.OptionsOf("b", "nope").has_value());
  EXPECT_EQ(s.Head("b", "k")->last_modified_ms, 1700000000000);
  EXPECT_EQ(s.Head("b", "k")->etag, "\"9e3669d19b675bd57058fd4664205d2a\"");  // MD5 of "v"
  EXPECT_EQ(s.Uri("b", "k"), "mem://b/k");

  // A fault fails the chosen call before it takes effect.
  int failures = 2;
  s.SetFault([&](MemoryObjectStore::Op op, const std::string&, const std::string& key) {
    if (op == MemoryObjectStore::Op::kPut && key == "flaky" && failures-- > 0) {
      return Unavailable("injected");
    }
    return Status::OK();
  });
  EXPECT_STATUS(kUnavailable, s.Put("b", "flaky", "1"));
  EXPECT_STATUS(kUnavailable, s.Put("b", "flaky", "2"));
  EXPECT_STATUS(kNotFound, s.Get("b", "flaky"));  // nothing was written
  ASSERT_OK(s.Put("b", "flaky", "3"));
  EXPECT_EQ(s.Calls(MemoryObjectStore::Op::kPut), 4u);
  s.SetFault(nullptr);

  // x-amz-expected-bucket-owner: a wrong owner is refused (S3's 403), the right one passes.
  s.SetBucketOwner("b", "111122223333");
  EXPECT_STATUS(kFailedPrecondition,
                s.Put("b", "o", "x", {.expected_bucket_owner = "999999999999"}));
  EXPECT_STATUS(kFailedPrecondition, s.Get("b", "k", {.expected_bucket_owner = "999999999999"}));
  ASSERT_OK(s.Put("b", "o", "x", {.expected_bucket_owner = "111122223333"}));
  EXPECT_EQ(s.Objects("b"),
            (std::map<std::string, std::string>{{"flaky", "3"}, {"k", "v"}, {"o", "x"}}));
}

TEST(BucketArnTest, Parses) {
  EXPECT_EQ(*BucketFromArn("arn:aws:s3:::my-bucket"), "my-bucket");
  EXPECT_EQ(*BucketFromArn("plain.bucket"), "plain.bucket");
  EXPECT_STATUS(kInvalidArgument, BucketFromArn("arn:aws:s3:::Bad_Bucket"));
  EXPECT_STATUS(kInvalidArgument, BucketFromArn("a/b"));
  // Any partition; only S3's service, without region or account.
  EXPECT_EQ(*BucketFromArn("arn:aws-cn:s3:::cn-bucket"), "cn-bucket");
  EXPECT_STATUS(kInvalidArgument, BucketFromArn("arn:aws:s3:us-east-1:000000000000:b"));
  EXPECT_STATUS(kInvalidArgument, BucketFromArn("arn:aws:s3tables:::bucket"));
  EXPECT_STATUS(kInvalidArgument, BucketFromArn("arn:aws:s3:::"));
}

}  // namespace
}  // namespace icestream::objectstore
