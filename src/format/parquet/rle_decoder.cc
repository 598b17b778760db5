// RLE / bit-packed hybrid decoder (Encodings.md "Run Length Encoding / Bit-Packing
// Hybrid").
#include "format/parquet/rle_decoder.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace icestream::format::parquet {

void UnpackBits(const uint8_t* in, size_t len, int bit_width, size_t n, uint64_t* out) {
  if (bit_width == 0) {
    std::fill(out, out + n, 0);
    return;
  }
  const uint64_t mask = bit_width == 64 ? ~uint64_t{0} : (uint64_t{1} << bit_width) - 1;
  // Fast path while 9 bytes can be loaded from the value's first byte.
  size_t i = 0;
  uint64_t bit = 0;
  for (; i < n; ++i, bit += static_cast<uint64_t>(bit_width)) {
    size_t byte = bit >> 3;
    unsigned shift = bit & 7;
    if (byte + 9 > len) break;
    uint64_t w;
    std::memcpy(&w, in + byte, 8);
    uint64_t v = w >> shift;
    if (shift + static_cast<unsigned>(bit_width) > 64)
      v |= static_cast<uint64_t>(in[byte + 8]) << (64 - shift);
    out[i] = v & mask;
  }
  // Tail: byte by byte, zero past the end.
  for (; i < n; ++i, bit += static_cast<uint64_t>(bit_width)) {
    uint64_t v = 0;
    for (int b = 0; b < bit_width; ++b) {
      uint64_t pos = bit + static_cast<uint64_t>(b);
      size_t byte = pos >> 3;
      if (byte < len && (in[byte] >> (pos & 7) & 1)) v |= uint64_t{1} << b;
    }
    out[i] = v;
  }
}

Status RleDecoder::NextRun() {
  // ULEB128 header.
  uint64_t header = 0;
  for (int shift = 0;; shift += 7) {
    if (pos_ >= size_) return Corruption("RLE: stream ends inside a run header");
    if (shift > 63) return Corruption("RLE: run header longer than 10 bytes");
    uint8_t b = data_[pos_++];
    header |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) break;
  }
  if ((header & 1) == 0) {
    rle_ = true;
    left_ = header >> 1;
    size_t width_bytes = static_cast<size_t>((bit_width_ + 7) / 8);
    if (size_ - pos_ < width_bytes) return Corruption("RLE: stream ends inside a run value");
    rle_value_ = 0;
    for (size_t b = 0; b < width_bytes; ++b)
      rle_value_ |= static_cast<uint64_t>(data_[pos_ + b]) << (8 * b);
    pos_ += width_bytes;
    if (bit_width_ < 64 && (rle_value_ >> bit_width_) != 0) {
      return Corruption("RLE: run value wider than " + std::to_string(bit_width_) + " bits");
    }
  } else {
    rle_ = false;
    uint64_t groups = header >> 1;
    // A run holds groups * 8 values in groups * bit_width bytes; keep what the
    // stream has.
    uint64_t want = groups * static_cast<uint64_t>(bit_width_);
    if (groups > (uint64_t{1} << 40)) want = UINT64_MAX;
    size_t have = static_cast<size_t>(std::min<uint64_t>(want, size_ - pos_));
    packed_ = data_ + pos_;
    packed_len_ = have;
    pos_ += have;
    left_ = bit_width_ == 0
                ? groups * 8
                : std::min<uint64_t>(groups * 8, have * 8 / static_cast<uint64_t>(bit_width_));
    packed_next_ = 0;
  }
  return Status::OK();
}

template <typename T>
Status RleDecoder::Get(T* out, size_t n) {
  uint64_t buf[64];
  while (n > 0) {
    if (left_ == 0) {
      RETURN_IF_ERROR(NextRun());
      continue;
    }
    size_t take = static_cast<size_t>(std::min<uint64_t>(left_, n));
    if (rle_) {
      std::fill(out, out + take, static_cast<T>(rle_value_));
    } else {
      take = std::min<size_t>(take, 64);
      // Unpack from the byte holding the next value; 8 values span whole bytes.
      uint64_t first_bit = packed_next_ * static_cast<uint64_t>(bit_width_);
      size_t byte = static_cast<size_t>(first_bit >> 3);
      if ((first_bit & 7) == 0) {
        UnpackBits(packed_ + byte, packed_len_ - byte, bit_width_, take, buf);
      } else {
        // Only reached when a previous call stopped mid-group: unpack from the group start.
        uint64_t skip = packed_next_ % 8;
        size_t gbyte =
            static_cast<size_t>((packed_next_ - skip) * static_cast<uint64_t>(bit_width_) / 8);
        uint64_t tmp[72];
        UnpackBits(packed_ + gbyte, packed_len_ - gbyte, bit_width_,
                   static_cast<size_t>(skip) + take, tmp);
        std::copy(tmp + skip, tmp + skip + take, buf);
      }
      for (size_t i = 0; i < take; ++i) out[i] = static_cast<T>(buf[i]);
      packed_next_ += take;
    }
    left_ -= take;
    out += take;
    n -= take;
  }
  return Status::OK();
}

template Status RleDecoder::Get<uint8_t>(uint8_t*, size_t);
template Status RleDecoder::Get<uint16_t>(uint16_t*, size_t);
template Status RleDecoder::Get<uint32_t>(uint32_t*, size_t);

}  // namespace icestream::format::parquet
