#include "delivery/s3/key_template.h"

#include <gtest/gtest.h>

#include "common/testing/status_assertions.h"

namespace icestream::delivery::s3 {
namespace {

const KeyContext kCtx{"orders", "1f2e3d4c-0000-4000-8000-abcdefabcdef", "orders-stream"};
// 2026-09-03T10:29:59.500Z
constexpr int64_t kT = 1788431399500;

TEST(KeyTemplateTest, DefaultTemplate) {
  ASSERT_OK_AND_ASSIGN(auto t, KeyTemplate::Parse(kDefaultKeyTemplate, Compression::kGzip));
  EXPECT_EQ(t.Render(kCtx, kT),
            "kinesis-channel/orders/1f2e3d4c-0000-4000-8000-abcdefabcdef/2026/09/03/10/"
            "orders-1f2e3d4c-0000-4000-8000-abcdefabcdef-2026-09-03-10-29.gz");
}

TEST(KeyTemplateTest, EveryVariableAndSuffixBeforeExtension) {
  ASSERT_OK_AND_ASSIGN(
      auto t, KeyTemplate::Parse("data/stream=!{stream-name}/!{yy}/!{yyyy}-!{MM}-!{dd}/!{HH}!{mm}/"
                                 "!{channel-name}_!{channel-id}!{extension}",
                                 Compression::kZstd));
  std::string suffix = ObjectSuffix(100000, "shardId-000000000003", kCtx.channel_id, "4123");
  ASSERT_EQ(suffix.size(), kSuffixLength);
  EXPECT_EQ(
      t.RenderWithSuffix(kCtx, kT, suffix),
      "data/stream=orders-stream/26/2026-09-03/1029/orders_" + kCtx.channel_id + suffix + ".zst");
  EXPECT_EQ(suffix.substr(0, 27), "-000000000000100000-000003-");
  // Deterministic: the same inputs give the same suffix; another first record does not.
  EXPECT_EQ(suffix, ObjectSuffix(100000, "shardId-000000000003", kCtx.channel_id, "4123"));
  EXPECT_NE(suffix, ObjectSuffix(100000, "shardId-000000000003", kCtx.channel_id, "4124"));
}

TEST(KeyTemplateTest, LiteralExtensionAndNone) {
  ASSERT_OK_AND_ASSIGN(auto t,
                       KeyTemplate::Parse("x/!{HH}!{extension:.json.gz}", Compression::kNone));
  EXPECT_EQ(t.RenderWithSuffix(kCtx, kT, "-S"), "x/10-S.json.gz");
  ASSERT_OK_AND_ASSIGN(auto n,
                       KeyTemplate::Parse("!{channel-name}/!{channel-id}", Compression::kNone));
  EXPECT_EQ(n.RenderWithSuffix(kCtx, kT, "-S"), "orders/" + kCtx.channel_id + "-S");
  auto e = KeyTemplate::Parse("a/!{mm}!{extension}", Compression::kNone);
  EXPECT_EQ(e->RenderWithSuffix(kCtx, kT, "-S"), "a/29-S");
}

TEST(KeyTemplateTest, RejectsEveryBrokenRule) {
  struct Case {
    const char* text;
    Compression c;
  };
  for (auto [text, c] : std::vector<Case>{
           {"/!{yyyy}/x", Compression::kNone},                  // leading slash
           {"a/../!{yyyy}", Compression::kNone},                // traversal
           {"a/./!{yyyy}", Compression::kNone},                 // '.' segment
           {"a//!{yyyy}", Compression::kNone},                  // '//'
           {"a/!{yyyy", Compression::kNone},                    // unclosed
           {"a/!{partition-id}", Compression::kNone},           // unknown variable
           {"a/!{extension}/!{yyyy}", Compression::kNone},      // extension not at end
           {"a/!{extension}!{extension}", Compression::kNone},  // two extensions
           {"a/!{yyyy}/x", Compression::kGzip},                 // compression without extension
           {"a/!{yyyy}/", Compression::kNone},                  // ends with '/'
           {"static/key", Compression::kNone},                  // no variable
           {"a/!{yyyy}:x", Compression::kNone},                 // ':' outside a placeholder
           {"a/{x}/!{yyyy}", Compression::kNone},               // braces outside
           {"a b/!{yyyy}", Compression::kNone},                 // space
           {"a/!{HH}!{extension:json}", Compression::kNone},    // literal must start with '.'
           {"a/!{HH}!{extension:.JSON}", Compression::kNone},   // lowercase only
           {"", Compression::kNone},
       }) {
    auto r = KeyTemplate::Parse(text, c);
    EXPECT_STATUS(kInvalidArgument, r) << text;
  }
  EXPECT_NOT_OK(KeyTemplate::Parse(std::string(1025, 'a') + "!{HH}", Compression::kNone));
}

TEST(KeyTemplateTest, ExpandedLengthLimit) {
  KeyContext long_names{std::string(128, 'n'), "id", std::string(128, 's')};
  std::string text;
  for (int i = 0; i < 7; ++i) text += "!{channel-name}/!{stream-name}/";
  text += "x";
  ASSERT_OK_AND_ASSIGN(auto t, KeyTemplate::Parse(text, Compression::kNone));
  EXPECT_NOT_OK(t.CheckExpandedLength(long_names));
  EXPECT_OK(t.CheckExpandedLength(kCtx));
}

}  // namespace
}  // namespace icestream::delivery::s3
