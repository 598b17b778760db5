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

// Loads n <= 16 bytes as two words (overlapping loads, no per-byte loop or memcpy
// call); equal byte strings of equal length give equal words.
inline void LoadShort(const char* p, size_t n, uint64_t* a, uint64_t* b) {
  if (n >= 8) {
    std::memcpy(a, p, 8);
    std::memcpy(b, p + n - 8, 8);
  } else if (n >= 4) {
    uint32_t x, y;
    std::memcpy(&x, p, 4);
    std::memcpy(&y, p + n - 4, 4);
    *a = x;
    *b = y;
  } else if (n > 0) {
    *a = static_cast<uint64_t>(static_cast<uint8_t>(p[0])) |
         static_cast<uint64_t>(static_cast<uint8_t>(p[n / 2])) << 8 |
         static_cast<uint64_t>(static_cast<uint8_t>(p[n - 1])) << 16;
    *b = 0;
  } else {
    *a = *b = 0;
  }
}

// 64x64 -> 128-bit multiply, folded (the wyhash mixing step).
inline uint64_t Mix(uint64_t a, uint64_t b) {
  __extension__ typedef unsigned __int128 u128;
  u128 m = static_cast<u128>(a) * b;
  return static_cast<uint64_t>(m) ^ static_cast<uint64_t>(m >> 64);
}

inline uint64_t HashBytes(const char* p, size_t n) {
  constexpr uint64_t k0 = 0xA0761D6478BD642Full, k1 = 0xE7037ED1A0B428DBull,
                     k2 = 0x8EBC6AF09C88C6E3ull;
  uint64_t a, b;
  if (n <= 16) {
    LoadShort(p, n, &a, &b);
    return Mix(a ^ k0 ^ n, b ^ k1);
  }
  uint64_t h = k2 ^ n;
  size_t i = 0;
  for (; i + 16 < n; i += 16) {
    std::memcpy(&a, p + i, 8);
    std::memcpy(&b, p + i + 8, 8);
    h = Mix(a ^ k0 ^ h, b ^ k1);
  }
  std::memcpy(&a, p + n - 16, 8);  // the last 16 bytes, overlapping the loop's
  std::memcpy(&b, p + n - 8, 8);
  return Mix(a ^ k0 ^ h, b ^ k2);
}

class Dictionary {
 public:
  // BYTE_ARRAY entries are stored with their u32 length prefix; all other types as
  // their PLAIN bytes, `width` each (the column's physical width; 0: not known).
  explicit Dictionary(bool byte_array, size_t width = 0)
      : byte_array_(byte_array), word_keys_(!byte_array && width > 0 && width <= 8) {
    Clear();
  }

  // Index of the value whose raw bytes are data[0, n), added if new. Without
  // byte_array, every value of the dictionary must have the same n (one column's
  // physical width).
  uint32_t Insert(const char* data, size_t n) {
    if (word_keys_) {
      const uint64_t key = Word(data, n);
      return InsertWord(key, HashWord(key), data, n);
    }
    return InsertHashed(HashBytes(data, n), data, n);
  }

  // Insert() on every value of a page's PLAIN buffer, plain[0, size) (BYTE_ARRAY values
  // with their u32 length prefix; others `width` bytes each), appending their indices to
  // *out. The values are hashed a batch ahead and their slots prefetched, so that the
  // cache misses of a batch overlap instead of coming one after another (a dictionary of
  // thousands of entries is larger than the L2 cache).
  void InsertAll(const char* plain, size_t size, size_t width, std::vector<uint32_t>* out) {
    constexpr size_t kBatch = 16;
    const char* values[kBatch];
    size_t lengths[kBatch];
    uint64_t hashes[kBatch], keys[kBatch];
    size_t pos = 0;
    while (pos < size) {
      size_t m = 0;
      for (; m < kBatch && pos < size; ++m) {
        size_t n = width;
        if (byte_array_) {
          uint32_t len;
          std::memcpy(&len, plain + pos, 4);
          pos += 4;
          n = len;
        }
        values[m] = plain + pos;
        lengths[m] = n;
        pos += n;
        if (word_keys_) {
          keys[m] = Word(values[m], n);
          hashes[m] = HashWord(keys[m]);
          __builtin_prefetch(&words_[hashes[m] & (words_.size() - 1)]);
        } else {
          hashes[m] = HashBytes(values[m], n);
          __builtin_prefetch(&slots_[hashes[m] & (slots_.size() - 1)]);
        }
      }
      for (size_t k = 0; k < m; ++k) {
        out->push_back(word_keys_ ? InsertWord(keys[k], hashes[k], values[k], lengths[k])
                                  : InsertHashed(hashes[k], values[k], lengths[k]));
      }
    }
  }

  size_t size() const { return offsets_.size(); }
  // The dictionary page body (PLAIN encoding of every entry).
  const std::string& plain() const { return plain_; }
  // Raw bytes of entry i (without the length prefix).
  std::string_view entry(uint32_t i) const { return {plain_.data() + offsets_[i], lengths_[i]}; }

  // memcmp() == 0, without a call for values of up to 16 bytes.
  static bool Equal(const char* a, const char* b, size_t n) {
    if (n <= 16) {
      uint64_t a0, a1, b0, b1;
      LoadShort(a, n, &a0, &a1);
      LoadShort(b, n, &b0, &b1);
      return a0 == b0 && a1 == b1;
    }
    return std::memcmp(a, b, n) == 0;
  }

  void Clear() {
    plain_.clear();
    offsets_.clear();
    lengths_.clear();
    if (word_keys_) {
      words_.assign(1024, WordSlot{});
    } else {
      slots_.assign(1024, 0);
    }
  }

 private:
  // Values of at most 8 bytes (INT32, INT64, FLOAT, DOUBLE) are their own key: a slot
  // holds the value and its entry, so that a probe costs one cache miss rather than two
  // (the slot, then the entry's bytes to compare). With thousands of distinct doubles in
  // a chunk (coordinates) the second miss was a third of Insert's time.
  struct WordSlot {
    uint64_t key = 0;
    uint32_t entry = 0;  // entry + 1; 0 = empty
  };

  static uint64_t Word(const char* data, size_t n) {
    uint64_t w = 0;
    if (n == 8) {
      std::memcpy(&w, data, 8);
    } else if (n == 4) {
      uint32_t v;
      std::memcpy(&v, data, 4);
      w = v;
    } else {
      std::memcpy(&w, data, n);
    }
    return w;
  }

  static uint64_t HashWord(uint64_t w) {
    return Mix(w ^ 0xA0761D6478BD642Full, w ^ 0xE7037ED1A0B428DBull);
  }

  uint32_t InsertWord(uint64_t key, uint64_t hash, const char* data, size_t n) {
    const size_t mask = words_.size() - 1;
    for (size_t s = hash & mask;; s = (s + 1) & mask) {
      WordSlot& slot = words_[s];
      if (slot.entry == 0) {
        auto index = static_cast<uint32_t>(offsets_.size());
        slot.key = key;
        slot.entry = index + 1;
        Append(data, n);
        if (offsets_.size() * 2 > words_.size()) GrowWords();
        return index;
      }
      if (slot.key == key) return slot.entry - 1;
    }
  }

  uint32_t InsertHashed(uint64_t h, const char* data, size_t n) {
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
      if (!byte_array_) {
        // Every entry of a fixed-width column has the column's width, back to back: the
        // entry is found without loading its offset and length (two more cache misses
        // per probe in a dictionary of thousands of numbers).
        if (Equal(plain_.data() + static_cast<size_t>(e) * n, data, n)) return e;
        continue;
      }
      if (lengths_[e] == n && Equal(plain_.data() + offsets_[e], data, n)) return e;
    }
  }

  void GrowWords() {
    std::vector<WordSlot> words(words_.size() * 2);
    const size_t mask = words.size() - 1;
    for (const WordSlot& w : words_) {
      if (w.entry == 0) continue;
      size_t s = HashWord(w.key) & mask;
      while (words[s].entry != 0) s = (s + 1) & mask;
      words[s] = w;
    }
    words_.swap(words);
  }

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
  bool word_keys_;
  std::string plain_;
  std::vector<uint32_t> offsets_;
  std::vector<uint32_t> lengths_;
  std::vector<uint64_t> slots_;  // hash tag | entry index + 1; 0 = empty
  std::vector<WordSlot> words_;  // word_keys_: the index instead of slots_
};

}  // namespace icestream::format::parquet
