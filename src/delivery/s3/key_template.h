// Output key templates of S3 channels (kds-delivery-spec.md §3.2–§3.4): parsing with every
// rule AWS documents, rendering per record time (UTC), and the 38-character unique suffix
// inserted before the extension.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "delivery/channel.h"
#include "delivery/object_naming.h"

namespace icestream::delivery::s3 {

std::string_view CompressionExtension(Compression c);  // "", ".gz", ".zst"

inline constexpr std::string_view kDefaultKeyTemplate =
    "kinesis-channel/!{channel-name}/!{channel-id}/!{yyyy}/!{MM}/!{dd}/!{HH}/"
    "!{channel-name}-!{channel-id}-!{yyyy}-!{MM}-!{dd}-!{HH}-!{mm}!{extension}";
inline constexpr size_t kMaxExpandedKeyLength = 986;  // 1024 minus the 38-char suffix

struct KeyContext {
  std::string channel_name;
  std::string channel_id;
  std::string stream_name;
};

class KeyTemplate {
 public:
  // Validates `text` against the template rules for the given compression. Errors are
  // kInvalidArgument with a message naming the broken rule.
  static Result<KeyTemplate> Parse(std::string_view text, Compression compression);

  // The key for a record that arrived at `arrival_ms` (UTC), without suffix.
  std::string Render(const KeyContext& ctx, int64_t arrival_ms) const;
  // The same with `suffix` inserted before the extension (or at the end).
  std::string RenderWithSuffix(const KeyContext& ctx, int64_t arrival_ms,
                               std::string_view suffix) const;
  // Checks that the expansion for these names fits kMaxExpandedKeyLength.
  Status CheckExpandedLength(const KeyContext& ctx) const;
  const std::string& text() const { return text_; }

 private:
  enum class Kind {
    kLiteral, kChannelName, kChannelId, kStreamName, kYyyy, kYy, kMonth, kDay, kHour, kMinute,
    kExtension
  };
  struct Part {
    Kind kind;
    std::string text;  // literal text, or the extension for kExtension
  };
  std::string RenderParts(const KeyContext& ctx, int64_t arrival_ms, bool with_extension) const;

  std::string text_;
  std::vector<Part> parts_;
  std::string extension_;  // what the extension placeholder expands to
};

}  // namespace icestream::delivery::s3
