// Time formatting in UTC without locale or time-zone state.
#include "common/time_format.h"

#include <ctime>

#include <fmt/format.h>

namespace icestream {
namespace {

std::tm Utc(int64_t epoch_ms) {
  std::time_t t = static_cast<std::time_t>(epoch_ms >= 0 ? epoch_ms / 1000 : (epoch_ms - 999) / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return tm;
}

constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

}  // namespace

std::string FormatHttpDate(int64_t epoch_ms) {
  std::tm tm = Utc(epoch_ms);
  return fmt::format("{}, {:02d} {} {} {:02d}:{:02d}:{:02d} GMT", kDays[tm.tm_wday], tm.tm_mday,
                     kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string FormatIso8601Ms(int64_t epoch_ms) {
  std::tm tm = Utc(epoch_ms);
  int ms = static_cast<int>(((epoch_ms % 1000) + 1000) % 1000);
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

std::string FormatAmzDate(int64_t epoch_ms) {
  std::tm tm = Utc(epoch_ms);
  return fmt::format("{:04d}{:02d}{:02d}T{:02d}{:02d}{:02d}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

namespace {
// The decimal number of s[pos, pos + len), or -1 when a character is not a digit.
int Digits(std::string_view s, size_t pos, size_t len) {
  int v = 0;
  for (size_t i = pos; i < pos + len; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}
}  // namespace

std::optional<int64_t> ParseAmzDate(std::string_view s) {
  if (s.size() != 16 || s[8] != 'T' || s[15] != 'Z') return std::nullopt;
  auto num = [&](size_t pos, size_t len) { return Digits(s, pos, len); };
  std::tm tm{};
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(4, 2) - 1;
  tm.tm_mday = num(6, 2);
  tm.tm_hour = num(9, 2);
  tm.tm_min = num(11, 2);
  tm.tm_sec = num(13, 2);
  if (tm.tm_year < 0 || tm.tm_mon < 0 || tm.tm_mday < 1 || tm.tm_hour < 0 || tm.tm_min < 0 ||
      tm.tm_sec < 0) {
    return std::nullopt;
  }
  return static_cast<int64_t>(timegm(&tm)) * 1000;
}

std::optional<int64_t> ParseHttpDate(std::string_view s) {
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  // "Sun, 06 Nov 1994 08:49:37 GMT": fixed positions after the weekday's comma.
  size_t comma = s.find(", ");
  if (comma == std::string_view::npos) return std::nullopt;
  s.remove_prefix(comma + 2);
  if (s.size() != 24 || s[2] != ' ' || s[6] != ' ' || s[11] != ' ' || s[14] != ':' ||
      s[17] != ':' || s.substr(20) != " GMT") {
    return std::nullopt;
  }
  auto num = [&](size_t pos, size_t len) { return Digits(s, pos, len); };
  std::tm tm{};
  tm.tm_mon = -1;
  for (int m = 0; m < 12; ++m) {
    if (s.substr(3, 3) == kMonths[m]) tm.tm_mon = m;
  }
  tm.tm_mday = num(0, 2);
  tm.tm_year = num(7, 4) - 1900;
  tm.tm_hour = num(12, 2);
  tm.tm_min = num(15, 2);
  tm.tm_sec = num(18, 2);
  if (tm.tm_mon < 0 || tm.tm_mday < 1 || tm.tm_year < 0 || tm.tm_hour < 0 || tm.tm_min < 0 ||
      tm.tm_sec < 0) {
    return std::nullopt;
  }
  return static_cast<int64_t>(timegm(&tm)) * 1000;
}

std::string FormatJavaDate(int64_t epoch_ms) {
  std::tm tm = Utc(epoch_ms);
  return fmt::format("{} {} {:02d} {:02d}:{:02d}:{:02d} UTC {}", kDays[tm.tm_wday],
                     kMonths[tm.tm_mon], tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     tm.tm_year + 1900);
}

}  // namespace icestream
