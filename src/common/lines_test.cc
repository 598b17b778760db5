#include "common/lines.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace icestream {
namespace {

std::vector<std::string> Split(std::string_view s) {
  std::vector<std::string> out;
  ForEachLine(s.data(), s.data() + s.size(),
              [&](const char* b, const char* e) { out.emplace_back(b, e); });
  return out;
}

// The reference: one memchr-free scan, byte by byte.
std::vector<std::string> Naive(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n') {
      out.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

TEST(LinesTest, Edges) {
  EXPECT_EQ(Split(""), std::vector<std::string>{});
  EXPECT_EQ(Split("\n"), std::vector<std::string>{""});
  EXPECT_EQ(Split("a"), std::vector<std::string>{"a"});
  EXPECT_EQ(Split("a\n"), std::vector<std::string>{"a"});
  EXPECT_EQ(Split("a\n\nb"), (std::vector<std::string>{"a", "", "b"}));
  const std::string line63(63, 'x');
  EXPECT_EQ(Split(line63 + "\n" + line63), (std::vector<std::string>{line63, line63}));
}

TEST(LinesTest, AgreesWithByteScanOnRandomText) {
  std::mt19937 rng(20);
  for (int round = 0; round < 2000; ++round) {
    const size_t n = rng() % 400;
    const unsigned newline_every = 1 + rng() % 80;
    std::string s(n, 'a');
    for (auto& c : s) c = rng() % newline_every == 0 ? '\n' : static_cast<char>('a' + rng() % 26);
    // Every start offset, so that the 64-byte steps meet the text at every alignment.
    const size_t skip = rng() % 64;
    if (skip > s.size()) continue;
    std::string_view view = std::string_view(s).substr(skip);
    ASSERT_EQ(Split(view), Naive(view)) << "round " << round;
  }
}

}  // namespace
}  // namespace icestream
