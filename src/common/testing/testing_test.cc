// The test helpers themselves: each assertion passes and fails when it should, and its
// failure message carries the status; TempDir makes and removes its directory.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"

namespace icestream::testing {
namespace {

Result<int> Value(int v) { return v; }
Result<int> Missing() { return NotFound("no such thing"); }

TEST(StatusAssertionsTest, PassOnTheExpectedOutcome) {
  ASSERT_OK(Status::OK());
  EXPECT_OK(Value(1));
  ASSERT_OK_AND_ASSIGN(int v, Value(7));
  EXPECT_EQ(v, 7);
  ASSERT_OK_AND_ASSIGN(v, Value(8));  // an existing variable
  EXPECT_EQ(v, 8);
  ASSERT_STATUS(kNotFound, Missing());
  EXPECT_STATUS(kInvalidArgument, InvalidArgument("x"));
  ASSERT_NOT_OK(Missing());
  EXPECT_NOT_OK(Corruption("y"));
}

TEST(StatusAssertionsTest, FailuresPrintTheStatus) {
  EXPECT_FATAL_FAILURE(ASSERT_OK(Missing()), "Missing() failed: NotFound: no such thing");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(Corruption("bad crc")), "failed: Corruption: bad crc");
  EXPECT_FATAL_FAILURE(
      {
        ASSERT_OK_AND_ASSIGN(int v, Missing());
        (void)v;
      },
      "Missing() failed: NotFound: no such thing");
  EXPECT_FATAL_FAILURE(ASSERT_STATUS(kConflict, Missing()),
                       "expected Conflict (::icestream::StatusCode::kConflict), got NotFound: no "
                       "such thing");
  EXPECT_NONFATAL_FAILURE(EXPECT_STATUS(kNotFound, Value(1)), "expected NotFound");
  EXPECT_NONFATAL_FAILURE(EXPECT_NOT_OK(Value(1)), "Value(1) succeeded; expected an error");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(Missing()) << "while testing", "while testing");
}

TEST(TempDirTest, ExistsEmptyAndIsRemovedWithItsContents) {
  std::filesystem::path kept;
  {
    TempDir a, b;
    kept = a.path();
    EXPECT_NE(a.path(), b.path());
    ASSERT_TRUE(std::filesystem::is_directory(a.path()));
    EXPECT_TRUE(std::filesystem::is_empty(a.path()));
    EXPECT_NE(a.path().filename().string().find("TempDirTest.ExistsEmpty"), std::string::npos)
        << a.path();
    std::filesystem::create_directories(a.path() / "x" / "y");
    std::ofstream(a.Path("x/y/z.txt")) << "data";
    EXPECT_EQ(a.Path("x"), (a.path() / "x").string());
    EXPECT_EQ(a.Path(), a.path().string());
  }
  EXPECT_FALSE(std::filesystem::exists(kept));
}

}  // namespace
}  // namespace icestream::testing
