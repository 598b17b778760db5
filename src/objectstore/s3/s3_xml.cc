// Minimal XML reading for S3 responses.
#include "objectstore/s3/s3_xml.h"

#include <cstdlib>
#include <ctime>

namespace icestream::objectstore::s3 {

std::string XmlDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out.push_back(s[i]);
      continue;
    }
    size_t semi = s.find(';', i);
    if (semi == std::string_view::npos) {
      out.push_back('&');
      continue;
    }
    std::string_view ent = s.substr(i + 1, semi - i - 1);
    if (ent == "amp")
      out.push_back('&');
    else if (ent == "lt")
      out.push_back('<');
    else if (ent == "gt")
      out.push_back('>');
    else if (ent == "quot")
      out.push_back('"');
    else if (ent == "apos")
      out.push_back('\'');
    else if (!ent.empty() && ent[0] == '#') {
      unsigned long cp = ent.size() > 1 && (ent[1] == 'x' || ent[1] == 'X')
                             ? std::strtoul(std::string(ent.substr(2)).c_str(), nullptr, 16)
                             : std::strtoul(std::string(ent.substr(1)).c_str(), nullptr, 10);
      // UTF-8 encode.
      if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
      } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      }
    } else {
      out.append(s.substr(i, semi - i + 1));
    }
    i = semi;
  }
  return out;
}

std::string XmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::vector<std::string_view> XmlElements(std::string_view xml, std::string_view tag) {
  std::vector<std::string_view> out;
  std::string open = "<" + std::string(tag) + ">";
  std::string close = "</" + std::string(tag) + ">";
  size_t pos = 0;
  while (true) {
    size_t a = xml.find(open, pos);
    if (a == std::string_view::npos) break;
    size_t b = xml.find(close, a + open.size());
    if (b == std::string_view::npos) break;
    out.push_back(xml.substr(a + open.size(), b - a - open.size()));
    pos = b + close.size();
  }
  return out;
}

std::optional<std::string> XmlText(std::string_view xml, std::string_view tag) {
  auto els = XmlElements(xml, tag);
  if (els.empty()) return std::nullopt;
  return XmlDecode(els.front());
}

int64_t ParseS3Time(std::string_view s) {
  if (s.size() < 19) return 0;
  std::tm tm{};
  auto num = [&](size_t p, size_t n) { return std::atoi(std::string(s.substr(p, n)).c_str()); };
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(5, 2) - 1;
  tm.tm_mday = num(8, 2);
  tm.tm_hour = num(11, 2);
  tm.tm_min = num(14, 2);
  tm.tm_sec = num(17, 2);
  int64_t ms = static_cast<int64_t>(timegm(&tm)) * 1000;
  if (s.size() >= 23 && s[19] == '.') ms += num(20, 3);
  return ms;
}

ListPage ParseListObjectsV2(std::string_view xml) {
  ListPage page;
  for (auto c : XmlElements(xml, "Contents")) {
    ObjectInfo info;
    info.key = XmlText(c, "Key").value_or("");
    info.size = std::strtoull(XmlText(c, "Size").value_or("0").c_str(), nullptr, 10);
    info.last_modified_ms = ParseS3Time(XmlText(c, "LastModified").value_or(""));
    info.etag = XmlText(c, "ETag").value_or("");
    page.objects.push_back(std::move(info));
  }
  page.truncated = XmlText(xml, "IsTruncated").value_or("false") == "true";
  page.next_token = XmlText(xml, "NextContinuationToken").value_or("");
  return page;
}

}  // namespace icestream::objectstore::s3
