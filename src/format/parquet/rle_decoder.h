// Decoding of the RLE / bit-packed hybrid (parquet-format Encodings.md "Run Length
// Encoding / Bit-Packing Hybrid"): levels, dictionary indices and RLE booleans. The
// grammar is in rle_encoder.h; the caller strips the u32 length prefix where the page
// layout has one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace icestream::format::parquet {

// Unpacks n values of bit_width (0..64) bits each, packed LSB-first, from in[0, len).
// Bits past the end of the input read as zero.
void UnpackBits(const uint8_t* in, size_t len, int bit_width, size_t n, uint64_t* out);

// Reads values of a fixed bit width (0..32) from one hybrid-encoded stream. Not
// thread-safe; `data` must outlive the decoder.
class RleDecoder {
 public:
  RleDecoder(std::string_view data, int bit_width)
      : data_(reinterpret_cast<const uint8_t*>(data.data())),
        size_(data.size()),
        bit_width_(bit_width) {}

  // Decodes the next n values into out[0, n). Errors (kCorruption): the stream ends
  // before n values, a run header is malformed. A bit-packed run cut short by the end
  // of the stream yields the values its bytes hold (writers that trim the last group).
  template <typename T>
  Status Get(T* out, size_t n);

  // Bytes consumed so far (up to the end of the current run's header and data).
  size_t position() const { return pos_; }

 private:
  Status NextRun();

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  int bit_width_;
  // The current run.
  bool rle_ = true;
  uint64_t left_ = 0;  // values left in the run
  uint64_t rle_value_ = 0;
  const uint8_t* packed_ = nullptr;  // bit-packed: its first byte
  size_t packed_len_ = 0;
  uint64_t packed_next_ = 0;  // bit-packed: index of the next value in the run
};

extern template Status RleDecoder::Get<uint8_t>(uint8_t*, size_t);
extern template Status RleDecoder::Get<uint16_t>(uint16_t*, size_t);
extern template Status RleDecoder::Get<uint32_t>(uint32_t*, size_t);

}  // namespace icestream::format::parquet
