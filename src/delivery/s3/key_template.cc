// Output key template engine.
#include "delivery/s3/key_template.h"

#include <ctime>

#include <fmt/format.h>


namespace icestream::delivery::s3 {

std::string_view CompressionExtension(Compression c) {
  switch (c) {
    case Compression::kGzip: return ".gz";
    case Compression::kZstd: return ".zst";
    case Compression::kNone: return "";
  }
  return "";
}

namespace {

bool LiteralCharOk(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '!' ||
         c == '-' || c == '_' || c == '\'' || c == '.' || c == '*' || c == '(' || c == ')' ||
         c == '/' || c == '=';
}

Status Bad(std::string_view why) {
  return InvalidArgument(fmt::format("Invalid OutputKeyTemplate: {}", why));
}

}  // namespace

Result<KeyTemplate> KeyTemplate::Parse(std::string_view text, Compression compression) {
  if (text.empty() || text.size() > 1024) return Bad("length must be 1 to 1024 characters");
  KeyTemplate t;
  t.text_ = std::string(text);
  int extensions = 0;
  int variables = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '!' && i + 1 < text.size() && text[i + 1] == '{') {
      size_t close = text.find('}', i + 2);
      if (close == std::string_view::npos) return Bad("a '!{' is not closed by '}'");
      std::string_view name = text.substr(i + 2, close - i - 2);
      Part p{Kind::kLiteral, ""};
      if (name == "channel-name") p.kind = Kind::kChannelName;
      else if (name == "channel-id") p.kind = Kind::kChannelId;
      else if (name == "stream-name") p.kind = Kind::kStreamName;
      else if (name == "yyyy") p.kind = Kind::kYyyy;
      else if (name == "yy") p.kind = Kind::kYy;
      else if (name == "MM") p.kind = Kind::kMonth;
      else if (name == "dd") p.kind = Kind::kDay;
      else if (name == "HH") p.kind = Kind::kHour;
      else if (name == "mm") p.kind = Kind::kMinute;
      else if (name == "extension") {
        p.kind = Kind::kExtension;
        p.text = std::string(CompressionExtension(compression));
      } else if (name.rfind("extension:", 0) == 0) {
        std::string_view lit = name.substr(10);
        if (lit.size() < 2 || lit[0] != '.') {
          return Bad("a literal extension must start with '.' (e.g. !{extension:.json})");
        }
        for (char c : lit) {
          if (c != '.' && (c < 'a' || c > 'z')) {
            return Bad("a literal extension may contain only lowercase letters and periods");
          }
        }
        p.kind = Kind::kExtension;
        p.text = std::string(lit);
      } else {
        return Bad(fmt::format("unknown variable '!{{{}}}'", name));
      }
      if (p.kind == Kind::kExtension) {
        ++extensions;
        if (close + 1 != text.size()) return Bad("the extension placeholder must end the template");
        t.extension_ = p.text;
      } else {
        ++variables;
      }
      t.parts_.push_back(std::move(p));
      i = close + 1;
      continue;
    }
    char c = text[i];
    if (!LiteralCharOk(c)) {
      return Bad(fmt::format("character '{}' is not allowed outside a placeholder", c));
    }
    if (t.parts_.empty() || t.parts_.back().kind != Kind::kLiteral) {
      t.parts_.push_back({Kind::kLiteral, ""});
    }
    t.parts_.back().text.push_back(c);
    ++i;
  }
  if (extensions > 1) return Bad("at most one extension placeholder is allowed");
  if (text.front() == '/') return Bad("the template must not start with '/'");
  if (text.find("//") != std::string_view::npos) return Bad("the template must not contain '//'");
  if (text.find("..") != std::string_view::npos) return Bad("the template must not contain '..'");
  // A segment that is exactly "." (path traversal).
  for (size_t s = 0; s < text.size();) {
    size_t e = text.find('/', s);
    std::string_view seg = text.substr(s, (e == std::string_view::npos ? text.size() : e) - s);
    if (seg == ".") return Bad("a path segment must not be '.'");
    if (e == std::string_view::npos) break;
    s = e + 1;
  }
  if (text.back() == '/') return Bad("the template must not end with '/' (a key names an object)");
  if (variables == 0 && extensions == 0) return Bad("the template must contain at least one variable");
  if (compression != Compression::kNone && extensions == 0) {
    return Bad("with GZIP or ZSTD compression the template must end with an extension "
               "placeholder (!{extension})");
  }
  return t;
}

std::string KeyTemplate::RenderParts(const KeyContext& ctx, int64_t arrival_ms,
                                     bool with_extension) const {
  std::time_t secs = static_cast<std::time_t>(arrival_ms >= 0 ? arrival_ms / 1000
                                                              : (arrival_ms - 999) / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::string out;
  out.reserve(text_.size() + 64);
  for (const auto& p : parts_) {
    switch (p.kind) {
      case Kind::kLiteral: out += p.text; break;
      case Kind::kChannelName: out += ctx.channel_name; break;
      case Kind::kChannelId: out += ctx.channel_id; break;
      case Kind::kStreamName: out += ctx.stream_name; break;
      case Kind::kYyyy: out += fmt::format("{:04d}", tm.tm_year + 1900); break;
      case Kind::kYy: out += fmt::format("{:02d}", (tm.tm_year + 1900) % 100); break;
      case Kind::kMonth: out += fmt::format("{:02d}", tm.tm_mon + 1); break;
      case Kind::kDay: out += fmt::format("{:02d}", tm.tm_mday); break;
      case Kind::kHour: out += fmt::format("{:02d}", tm.tm_hour); break;
      case Kind::kMinute: out += fmt::format("{:02d}", tm.tm_min); break;
      case Kind::kExtension:
        if (with_extension) out += p.text;
        break;
    }
  }
  return out;
}

std::string KeyTemplate::Render(const KeyContext& ctx, int64_t arrival_ms) const {
  return RenderParts(ctx, arrival_ms, true);
}

std::string KeyTemplate::RenderWithSuffix(const KeyContext& ctx, int64_t arrival_ms,
                                          std::string_view suffix) const {
  std::string out = RenderParts(ctx, arrival_ms, false);
  out += suffix;
  out += extension_;
  return out;
}

Status KeyTemplate::CheckExpandedLength(const KeyContext& ctx) const {
  size_t n = Render(ctx, 0).size();
  if (n > kMaxExpandedKeyLength) {
    return Bad(fmt::format("it expands to {} characters; at most {} are allowed (S3 keys are "
                           "limited to 1024 and a {}-character suffix is appended)",
                           n, kMaxExpandedKeyLength, kSuffixLength));
  }
  return Status::OK();
}

}  // namespace icestream::delivery::s3
