// TempDir: a fresh directory for one test, removed with everything in it when the test ends.
//
//   class ShardLogTest : public ::testing::Test {
//    protected:
//     testing::TempDir dir_;  // declared first: removed after everything that writes into it
//   };
//   ... ShardLog::Open(dir_.Path("shard-0"), ...)
//
// The directory lives under $TMPDIR (or /tmp), is named after the running test
// (icestream-<Suite>.<Test>-XXXXXX, made by mkdtemp, so parallel runs and repeated tests
// never share one) and exists, empty, once the constructor returns.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace icestream::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();  // removes the directory tree; errors are ignored (the test is over)
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // path() / relative, as a string (most APIs under test take std::string paths).
  std::string Path(std::string_view relative = "") const;

 private:
  std::filesystem::path path_;
};

}  // namespace icestream::testing
