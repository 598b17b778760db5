// fs helpers against real files: WriteAllDirect on the test's own folder (ext4 on this
// project's machines, where O_DIRECT is taken) and on /dev/shm (tmpfs, which older kernels
// refuse O_DIRECT on: the write then goes buffered).
#include "common/fs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"

namespace icestream::fs {
namespace {

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  uint64_t x = 88172645463325252ull;
  for (char& c : s) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x >> 32);
  }
  return s;
}

// Writes data with WriteAllDirect into a new file under dir; checks the file holds exactly
// data and that the descriptor's flags are as they were.
void WriteAndCheck(const std::string& dir, std::string_view data, const std::string& name) {
  std::string path = Join(dir, name);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path;
  const int before = ::fcntl(fd, F_GETFL);
  Status st = WriteAllDirect(fd, data, path);
  const int after = ::fcntl(fd, F_GETFL);
  ASSERT_EQ(::fsync(fd), 0);
  ::close(fd);
  ASSERT_OK(st);
  EXPECT_EQ(before, after) << name << ": O_DIRECT left set";
  ASSERT_OK_AND_ASSIGN(std::string got, ReadFile(path));
  ASSERT_EQ(got.size(), data.size()) << name;
  EXPECT_TRUE(got == data) << name << ": content differs";
}

void WriteSizes(const std::string& dir) {
  const std::string pool = Pattern((3 << 20) + 3 * 4096);
  // An aligned source (written from the caller's memory) and unaligned ones (through the
  // bounce buffer); sizes below one block, at block and chunk bounds, and past them.
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> aligned(static_cast<char*>(std::aligned_alloc(4096, pool.size())));
  ASSERT_NE(aligned, nullptr);
  std::copy(pool.begin(), pool.end(), aligned.get());
  for (size_t size : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}, size_t{4097},
                      size_t{1} << 20, (size_t{1} << 20) + 1, (size_t{3} << 20) + 4096 + 17}) {
    WriteAndCheck(dir, std::string_view(aligned.get(), size), "aligned-" + std::to_string(size));
    for (size_t skew : {1, 512, 4095}) {
      WriteAndCheck(dir, std::string_view(pool.data() + skew, size),
                    "skew" + std::to_string(skew) + "-" + std::to_string(size));
    }
  }
}

TEST(WriteAllDirectTest, WritesEveryByteOnTheTestFolder) {
  testing::TempDir dir;
  WriteSizes(dir.path().string());
}

TEST(WriteAllDirectTest, WritesEveryByteOnTmpfs) {
  ASSERT_TRUE(Exists("/dev/shm")) << "no /dev/shm on this machine";
  char tmpl[] = "/dev/shm/icestream-fs-test-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  WriteSizes(tmpl);
  ASSERT_OK(RemoveAll(tmpl));
}

TEST(WriteAllDirectTest, AFailedWriteIsAnErrorNamingThePath) {
  testing::TempDir dir;
  std::string path = dir.Path("read-only");
  ASSERT_OK(WriteFileAtomic(path, "x"));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  Status st = WriteAllDirect(fd, Pattern(64 << 10), path);
  ::close(fd);
  EXPECT_STATUS(kIOError, st);
  EXPECT_NE(st.message().find(path), std::string::npos) << st.message();
}

}  // namespace
}  // namespace icestream::fs
