// The dictionary of one column chunk (Encodings.md "Dictionary Encoding"): distinct
// values in insertion order, kept PLAIN-encoded so that the buffer is the dictionary
// page body, plus an open-addressing hash index over them. Not thread-safe.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "format/parquet/types.h"

namespace icestream::format::parquet {

inline uint64_t HashBytes(const char* p, size_t n) {
  if (n == 8 || n == 4) {
    // One multiply-xorshift round for the common fixed widths.
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    uint64_t h = (w ^ (n << 59)) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29) ^ (h << 32);
  }
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xC2B2AE3D27D4EB4Full);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
  }
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  return h;
}

class Dictionary {
 public:
  // BYTE_ARRAY entries are stored with their u32 length prefix; all other types as
  // their PLAIN bytes.
  explicit Dictionary(bool byte_array) : byte_array_(byte_array) { Clear(); }

  // Index of the value whose raw bytes are data[0, n), added if new.
  uint32_t Insert(const char* data, size_t n) {
    uint64_t h = HashBytes(data, n);
    // A slot holds (hash high bits << 32 | entry + 1): most probes are decided without
    // touching the entry arrays.
    const uint64_t tag = h & 0xFFFFFFFF00000000ull;
    size_t mask = slots_.size() - 1;
    for (size_t s = h & mask;; s = (s + 1) & mask) {
      uint64_t slot = slots_[s];
      if (slot == 0) {
        auto index = static_cast<uint32_t>(offsets_.size());
        slots_[s] = tag | (index + 1);
        Append(data, n);
        if (offsets_.size() * 2 > slots_.size()) Grow();
        return index;
      }
      if ((slot & 0xFFFFFFFF00000000ull) != tag) continue;
      auto e = static_cast<uint32_t>(slot) - 1;
      if (lengths_[e] == n && Equal(plain_.data() + offsets_[e], data, n)) return e;
    }
  }

  size_t size() const { return offsets_.size(); }
  // The dictionary page body (PLAIN encoding of every entry).
  const std::string& plain() const { return plain_; }
  // Raw bytes of entry i (without the length prefix).
  std::string_view entry(uint32_t i) const { return {plain_.data() + offsets_[i], lengths_[i]}; }

  // memcmp() == 0, inlined for the common fixed widths.
  static bool Equal(const char* a, const char* b, size_t n) {
    uint64_t x[2], y[2];
    switch (n) {
      case 4:
        std::memcpy(x, a, 4);
        std::memcpy(y, b, 4);
        return static_cast<uint32_t>(x[0]) == static_cast<uint32_t>(y[0]);
      case 8:
        std::memcpy(x, a, 8);
        std::memcpy(y, b, 8);
        return x[0] == y[0];
      case 16:
        std::memcpy(x, a, 16);
        std::memcpy(y, b, 16);
        return x[0] == y[0] && x[1] == y[1];
      default:
        return std::memcmp(a, b, n) == 0;
    }
  }

  void Clear() {
    plain_.clear();
    offsets_.clear();
    lengths_.clear();
    slots_.assign(1024, 0);
  }

 private:
  void Append(const char* data, size_t n) {
    if (byte_array_) {
      auto len = static_cast<uint32_t>(n);
      plain_.append(reinterpret_cast<const char*>(&len), 4);
    }
    offsets_.push_back(static_cast<uint32_t>(plain_.size()));
    lengths_.push_back(static_cast<uint32_t>(n));
    plain_.append(data, n);
  }

  void Grow() {
    std::vector<uint64_t> slots(slots_.size() * 2, 0);
    size_t mask = slots.size() - 1;
    for (uint32_t e = 0; e < offsets_.size(); ++e) {
      uint64_t h = HashBytes(plain_.data() + offsets_[e], lengths_[e]);
      size_t s = h & mask;
      while (slots[s] != 0) s = (s + 1) & mask;
      slots[s] = (h & 0xFFFFFFFF00000000ull) | (e + 1);
    }
    slots_.swap(slots);
  }

  bool byte_array_;
  std::string plain_;
  std::vector<uint32_t> offsets_;
  std::vector<uint32_t> lengths_;
  std::vector<uint64_t> slots_;  // hash tag | entry index + 1; 0 = empty
};

}  // namespace icestream::format::parquet
