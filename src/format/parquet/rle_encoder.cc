// RLE / bit-packed hybrid encoder (Encodings.md).
#include "format/parquet/rle_encoder.h"

#include <cstring>

namespace icestream::format::parquet {

int BitWidth(uint64_t max_value) {
  int w = 0;
  while (max_value != 0) {
    ++w;
    max_value >>= 1;
  }
  return w;
}

void PutUleb128(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

template <typename T>
void BitPack(const T* values, size_t n, int bit_width, std::string* out) {
  if (bit_width == 0) return;
  size_t start = out->size();
  out->resize(start + (n * bit_width + 7) / 8);
  auto* dst = reinterpret_cast<unsigned char*>(out->data() + start);
  // Bits gather in a word and leave 32 at a time (a value of up to 32 bits shifted by
  // fewer than 32 stays within 64), not a byte at a time: dictionary indices of 8 to 16
  // bits took a store and a loop test per byte.
  uint64_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; ++i) {
    acc |= static_cast<uint64_t>(values[i]) << bits;
    bits += bit_width;
    if (bits >= 32) {
      const auto word = static_cast<uint32_t>(acc);  // little-endian: LSB first
      std::memcpy(dst, &word, 4);
      dst += 4;
      acc >>= 32;
      bits -= 32;
    }
  }
  for (; bits > 0; bits -= 8) {
    *dst++ = static_cast<unsigned char>(acc);
    acc >>= 8;
  }
}

namespace {

template <typename T>
void EmitBitPacked(const T* values, size_t n, int bit_width, std::string* out) {
  if (n == 0) return;
  size_t groups = (n + 7) / 8;
  PutUleb128((groups << 1) | 1, out);
  BitPack(values, n, bit_width, out);
  // Pad the last group to 8 values (zeros) so that it occupies bit_width whole bytes.
  size_t written = (n * bit_width + 7) / 8;
  out->append(groups * bit_width - written, '\0');
}

template <typename T>
void EmitRun(T value, size_t count, int bit_width, std::string* out) {
  PutUleb128(static_cast<uint64_t>(count) << 1, out);
  uint64_t v = value;
  for (int b = 0; b < (bit_width + 7) / 8; ++b) {
    out->push_back(static_cast<char>(v & 0xFF));
    v >>= 8;
  }
}

}  // namespace

template <typename T>
void RleEncode(const T* values, size_t n, int bit_width, std::string* out) {
  if (n == 0) return;
  // Run lengths must stay below 2^31 (Encodings.md); split longer runs.
  constexpr size_t kMaxRun = (size_t{1} << 31) - 8;
  size_t literal_start = 0;  // values[literal_start, i) await bit-packing
  size_t i = 0;
  while (i < n) {
    size_t run = 1;
    while (i + run < n && values[i + run] == values[i] && run < kMaxRun) ++run;
    size_t pending = i - literal_start;
    if (pending % 8 != 0) {
      // Bit-packed runs hold whole groups of 8: top the group up from this run first.
      size_t take = std::min(run, 8 - pending % 8);
      i += take;
      continue;
    }
    if (run >= 8) {
      EmitBitPacked(values + literal_start, pending, bit_width, out);
      EmitRun(values[i], run, bit_width, out);
      i += run;
      literal_start = i;
    } else {
      i += run;
    }
  }
  EmitBitPacked(values + literal_start, n - literal_start, bit_width, out);
}

template void RleEncode<uint8_t>(const uint8_t*, size_t, int, std::string*);
template void RleEncode<uint16_t>(const uint16_t*, size_t, int, std::string*);
template void RleEncode<uint32_t>(const uint32_t*, size_t, int, std::string*);
template void BitPack<uint8_t>(const uint8_t*, size_t, int, std::string*);
template void BitPack<uint16_t>(const uint16_t*, size_t, int, std::string*);
template void BitPack<uint32_t>(const uint32_t*, size_t, int, std::string*);

}  // namespace icestream::format::parquet
