// The few pieces of S3's XML responses icestream reads: error code/message,
// ListObjectsV2 pages, multipart upload ids. Not a general XML parser: S3's responses are
// flat, entity-escaped and never use CDATA.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "objectstore/object_store.h"

namespace icestream::objectstore::s3 {

// Text of the first <tag>…</tag> in `xml` (entities decoded), or nullopt.
std::optional<std::string> XmlText(std::string_view xml, std::string_view tag);
// Every <tag>…</tag> element's inner XML, in order.
std::vector<std::string_view> XmlElements(std::string_view xml, std::string_view tag);
std::string XmlDecode(std::string_view s);
std::string XmlEscape(std::string_view s);

struct ListPage {
  std::vector<ObjectInfo> objects;
  bool truncated = false;
  std::string next_token;
};
ListPage ParseListObjectsV2(std::string_view xml);
// Parses "2024-01-02T03:04:05.000Z"; 0 when malformed.
int64_t ParseS3Time(std::string_view s);

}  // namespace icestream::objectstore::s3
