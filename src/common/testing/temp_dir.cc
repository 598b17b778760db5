// TempDir (temp_dir.h): mkdtemp under the system temporary directory.
#include "common/testing/temp_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace icestream::testing {
namespace {

// Characters of a test name that are safe in a file name ('/' appears in parameterized names).
std::string Sanitized(std::string_view s) {
  std::string out;
  for (char c : s) out.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '.' ? c : '_');
  return out;
}

}  // namespace

TempDir::TempDir() {
  std::string name = "icestream-";
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info()) {
    name += Sanitized(std::string(info->test_suite_name()) + "." + info->name());
  } else {
    name += "test";
  }
  std::string templ = (std::filesystem::temp_directory_path() / (name + "-XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr) {
    // No directory means no test: stop loudly rather than write somewhere shared.
    std::fprintf(stderr, "TempDir: mkdtemp %s: %s\n", templ.c_str(), std::strerror(errno));
    std::abort();
  }
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Path(std::string_view relative) const {
  if (relative.empty()) return path_.string();
  return (path_ / relative).string();
}

}  // namespace icestream::testing
