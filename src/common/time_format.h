// Wall-time formatting for protocols: RFC 1123 (HTTP Date), ISO 8601 (Glue, logs),
// and the compact forms SigV4 uses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace icestream {

std::string FormatHttpDate(int64_t epoch_ms);      // "Sun, 06 Nov 1994 08:49:37 GMT"
std::string FormatIso8601Ms(int64_t epoch_ms);     // "2021-11-06T16:30:02.089Z"
std::string FormatAmzDate(int64_t epoch_ms);       // "20211106T163002Z"
// Parses "YYYYMMDDTHHMMSSZ" (SigV4 X-Amz-Date).
std::optional<int64_t> ParseAmzDate(std::string_view s);
// Parses an RFC 1123 HTTP date, "Sun, 06 Nov 1994 08:49:37 GMT" (SigV4's `Date` form).
std::optional<int64_t> ParseHttpDate(std::string_view s);
// "Thu Jan 22 01:22:02 UTC 2015" (Java Date.toString in UTC, as Kinesis error texts use).
std::string FormatJavaDate(int64_t epoch_ms);

}  // namespace icestream
