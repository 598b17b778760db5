// Where a channel stands in a shard: the Kinesis sequence number of the last record it
// delivered (plus, inside a KPL aggregate, the last user record's sub-sequence number).
// Sequence numbers are decimal strings ("0" or up to 129 digits without a leading zero,
// aws-api.md §C.1); they order as numbers, so a shorter one is smaller. Nothing here
// knows how a source builds them: icestream's own (56 digits), AWS's and kinesalite's
// all compare the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace icestream::delivery {

// <0, 0, >0 as `a` is below, equal to or above `b` as a number. Both must be decimal.
int CompareSequenceNumbers(std::string_view a, std::string_view b);
// True for "0" or [1-9][0-9]{0,128}.
bool IsSequenceNumber(std::string_view s);

struct Position {
  // The last delivered record's sequence number; empty: before the shard's first record;
  // "@<epoch ms>": before the first record that arrived at or after that time (where a
  // channel starting at LATEST or AT_TIMESTAMP begins, on sources that cannot name the
  // record before it; see AtTimestamp).
  std::string sequence;
  // Set when only the user records 0..sub_sequence of the aggregate at `sequence` are
  // delivered (the rest of it is not); unset when the record at `sequence` is delivered
  // whole.
  std::optional<uint32_t> sub_sequence;

  bool at_start() const { return sequence.empty(); }
  // Before the first record that arrived at or after `ms`.
  static Position AtTimestamp(int64_t ms) { return Position{"@" + std::to_string(ms), std::nullopt}; }
  // The time of an AtTimestamp position; nullopt for the others.
  std::optional<int64_t> timestamp_ms() const;
  bool operator==(const Position&) const = default;
};

// Order of positions in one shard (start < a time < any record; times by time; inside an
// aggregate by sub-sequence; a whole record after any of its parts). A time and a record
// are not comparable in general; a record counts as later (a checkpoint that names a
// record is always where delivery has got to).
int ComparePositions(const Position& a, const Position& b);
inline bool operator<(const Position& a, const Position& b) { return ComparePositions(a, b) < 0; }

// "after 4960…0001" / "after 4960…0001#3" / "at the start", for messages.
std::string PositionText(const Position& p);

}  // namespace icestream::delivery
