// Sequence-number order.
#include "delivery/position.h"

#include <cstdlib>

namespace icestream::delivery {

int CompareSequenceNumbers(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

bool IsSequenceNumber(std::string_view s) {
  if (s.empty() || s.size() > 129) return false;
  if (s == "0") return true;
  if (s[0] < '1' || s[0] > '9') return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::optional<int64_t> Position::timestamp_ms() const {
  if (sequence.size() < 2 || sequence[0] != '@') return std::nullopt;
  char* end = nullptr;
  long long v = std::strtoll(sequence.c_str() + 1, &end, 10);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(v);
}

int ComparePositions(const Position& a, const Position& b) {
  if (a.at_start() || b.at_start()) {
    if (a.at_start() && b.at_start()) return 0;
    return a.at_start() ? -1 : 1;
  }
  auto ta = a.timestamp_ms(), tb = b.timestamp_ms();
  if (ta || tb) {
    if (ta && tb) return *ta < *tb ? -1 : (*ta > *tb ? 1 : 0);
    return ta ? -1 : 1;
  }
  int c = CompareSequenceNumbers(a.sequence, b.sequence);
  if (c != 0) return c;
  // Same record: a part of it is before the whole of it.
  if (a.sub_sequence == b.sub_sequence) return 0;
  if (!a.sub_sequence) return 1;
  if (!b.sub_sequence) return -1;
  return *a.sub_sequence < *b.sub_sequence ? -1 : 1;
}

std::string PositionText(const Position& p) {
  if (p.at_start()) return "at the start of the shard";
  if (auto t = p.timestamp_ms()) return "from the records that arrived at " + std::to_string(*t) + " ms";
  std::string s = "after " + p.sequence;
  if (p.sub_sequence) s += "#" + std::to_string(*p.sub_sequence);
  return s;
}

}  // namespace icestream::delivery
