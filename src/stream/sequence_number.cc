// Sequence number codec.
#include "stream/sequence_number.h"

#include <fmt/format.h>

namespace icestream::stream {
namespace {

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t CheckSeed(uint64_t uid, uint32_t shard) { return Mix(Mix(uid) ^ shard); }
uint64_t CheckFromSeed(uint64_t seed, uint64_t position) {
  return Mix(seed ^ position) % 10000000000ull;
}
uint64_t Check(uint64_t uid, uint32_t shard, uint64_t position) {
  return CheckFromSeed(CheckSeed(uid, shard), position);
}

// Writes `v` as exactly `width` decimal digits, zero-padded, ending at `end`.
void PutDigits(char* end, int width, uint64_t v) {
  for (int i = 0; i < width; ++i) {
    *--end = static_cast<char>('0' + v % 10);
    v /= 10;
  }
}

bool ParseDigits(std::string_view s, uint64_t* out) {
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

}  // namespace

std::string SequenceNumber::ToString() const {
  std::string out;
  AppendTo(&out);
  return out;
}

void SequenceNumber::AppendTo(std::string* out) const {
  // Hot path (one per acknowledged record): fixed-width digits without a format parser.
  ShardSequenceWriter(stream_uid, shard_index).Append(position, out);
}

std::optional<SequenceNumber> SequenceNumber::Parse(std::string_view s) {
  if (s.size() != kSequenceNumberDigits || s[0] != '4') return std::nullopt;
  uint64_t uid, shard, pos, check;
  if (!ParseDigits(s.substr(1, 15), &uid) || !ParseDigits(s.substr(16, 10), &shard) ||
      !ParseDigits(s.substr(26, 20), &pos) || !ParseDigits(s.substr(46, 10), &check)) {
    return std::nullopt;
  }
  if (shard > UINT32_MAX) return std::nullopt;
  SequenceNumber sn{uid, static_cast<uint32_t>(shard), pos};
  if (Check(uid, sn.shard_index, pos) != check) return std::nullopt;
  return sn;
}

ShardSequenceWriter::ShardSequenceWriter(uint64_t uid, uint32_t shard)
    : seed_(CheckSeed(uid, shard)) {
  buf_[0] = '4';
  PutDigits(buf_ + 16, 15, uid);
  PutDigits(buf_ + 26, 10, shard);
}

void ShardSequenceWriter::Append(uint64_t position, std::string* out) {
  if (position_ != UINT64_MAX && position == position_ + 1) {
    // Counted up in place: the carry runs past the last digit once in ten.
    char* d = buf_ + 45;
    while (*d == '9') *d-- = '0';
    ++*d;
  } else {
    PutDigits(buf_ + 46, 20, position);
  }
  position_ = position;
  PutDigits(buf_ + 56, 10, CheckFromSeed(seed_, position));
  out->append(buf_, sizeof buf_);
}

}  // namespace icestream::stream
