#include "registry/ecma_pattern.h"

#include <gtest/gtest.h>

#include <string>

#include "common/testing/status_assertions.h"
#include "registry/definition.h"

namespace icestream::registry {
namespace {

TEST(EcmaPatternTest, AcceptsEcmaScriptSyntax) {
  for (const char* p : {"^x+$", "", "a|b", "(?:ab)+?", "(?<year>\\d{4})-(?=\\d)", "[^]", "[]",
                        "[a-z0-9_\\-]{1,64}", "\\bword\\B", "a{", "x{2,}", "(a)\\1",
                        "^[\\u00e9-\\u00ff]*$", "(?<!x)y", "[\\d-z]", "}", "]", "\xc3\xa9+"}) {
    EXPECT_EQ(CheckEcmaPattern(p), "") << p;
  }
}

TEST(EcmaPatternTest, RefusesMalformedPatterns) {
  for (const char* p : {"(", ")", "a)", "*a", "a**", "+", "(?x)", "[z-a]", "[abc", "a\\", "a{3,2}",
                        "|*", "(?<name", "^*", "\\b+"}) {
    EXPECT_NE(CheckEcmaPattern(p), "") << p;
  }
}

// Issue 19: 50,000 nested groups crashed std::regex's compiler (a stack overflow that
// took every stream down). Now a bounded scan says why the pattern is refused.
TEST(EcmaPatternTest, BoundsSizeAndNesting) {
  std::string deep = std::string(50000, '(') + "a" + std::string(50000, ')');
  EXPECT_NE(CheckEcmaPattern(deep), "");
  std::string ok = std::string(32, '(') + "a" + std::string(32, ')');
  EXPECT_EQ(CheckEcmaPattern(ok), "");
  EXPECT_NE(CheckEcmaPattern(std::string(33, '(') + "a" + std::string(33, ')')), "");
  EXPECT_NE(CheckEcmaPattern(std::string(kMaxSchemaPatternBytes + 1, 'a')), "");
  EXPECT_EQ(CheckEcmaPattern(std::string(kMaxSchemaPatternBytes, 'a')), "");
  // The definition checker answers with AWS's InvalidInputException text.
  for (const std::string& def :
       {R"({"type":"string","pattern":")" + deep + R"("})",
        R"({"type":"object","patternProperties":{")" + deep + R"(":{"type":"string"}}})"}) {
    Status st = CheckDefinition(DataFormat::kJson, def);
    EXPECT_STATUS(kInvalidArgument, st);
    EXPECT_NE(st.message().find("Schema definition of JSON data format is invalid"),
              std::string::npos)
        << st.message();
  }
}

}  // namespace
}  // namespace icestream::registry
