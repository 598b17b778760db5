// Avro binary encoding of primitive values (Avro specification, "Binary Encoding"):
//
//   int, long    zig-zag, then little-endian base-128 varint (int <= 5 bytes, long <= 10)
//   float/double 4 / 8 bytes IEEE 754, little endian
//   bytes/string long length, then the bytes
//   fixed        the bytes, no length
//   union        long branch index, then the value
//   array/map    blocks of (long count [, long byte size if count < 0], items), ended by 0
//
// The Put* functions append to a std::string. Decoder reads from a caller-owned buffer
// with bounds checks: every read of untrusted bytes fails with kCorruption instead of
// reading past the end.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace icestream::format::avro {

void PutLong(std::string* out, int64_t v);
inline void PutInt(std::string* out, int32_t v) { PutLong(out, v); }
inline void PutBoolean(std::string* out, bool v) { out->push_back(v ? '\x01' : '\x00'); }
void PutFloat(std::string* out, float v);
void PutDouble(std::string* out, double v);
// bytes and string: length, then the bytes.
void PutBytes(std::string* out, std::string_view v);
inline void PutString(std::string* out, std::string_view v) { PutBytes(out, v); }
inline void PutFixed(std::string* out, std::string_view v) { out->append(v); }
// A union branch index.
inline void PutUnionBranch(std::string* out, int branch) { PutLong(out, branch); }

// Reads Avro primitives from a byte range. Not thread-safe; cheap to copy.
class Decoder {
 public:
  explicit Decoder(std::string_view data) : data_(data) {}

  Result<int64_t> ReadLong();
  // A long that must fit in 32 bits (Avro int).
  Result<int32_t> ReadInt();
  Result<bool> ReadBoolean();
  Result<float> ReadFloat();
  Result<double> ReadDouble();
  // bytes and string: the returned view points into the decoder's buffer.
  Result<std::string_view> ReadBytes();
  Result<std::string_view> ReadFixed(size_t size);
  Status Skip(size_t n);

  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }
  bool at_end() const { return pos_ == data_.size(); }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace icestream::format::avro
