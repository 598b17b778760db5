// Avro binary encoding of primitives (Avro specification, "Binary Encoding").
#include "format/avro/encoding.h"

#include <cstring>
#include <limits>

#include "common/bytes.h"

namespace icestream::format::avro {

void PutLong(std::string* out, int64_t v) {
  uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  char buf[10];
  int n = 0;
  while (z >= 0x80) {
    buf[n++] = static_cast<char>((z & 0x7F) | 0x80);
    z >>= 7;
  }
  buf[n++] = static_cast<char>(z);
  out->append(buf, n);
}

void PutFloat(std::string* out, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  AppendFixed32(out, bits);
}

void PutDouble(std::string* out, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  AppendFixed64(out, bits);
}

void PutBytes(std::string* out, std::string_view v) {
  PutLong(out, static_cast<int64_t>(v.size()));
  out->append(v);
}

Result<int64_t> Decoder::ReadLong() {
  uint64_t z = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos_ >= data_.size()) return Corruption("avro: truncated varint");
    auto b = static_cast<uint8_t>(data_[pos_++]);
    if (shift == 63 && (b & 0x7E) != 0) return Corruption("avro: varint overflows 64 bits");
    z |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) return static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  return Corruption("avro: varint longer than 10 bytes");
}

Result<int32_t> Decoder::ReadInt() {
  ASSIGN_OR_RETURN(int64_t v, ReadLong());
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    return Corruption("avro: int value out of 32-bit range");
  }
  return static_cast<int32_t>(v);
}

Result<bool> Decoder::ReadBoolean() {
  if (pos_ >= data_.size()) return Corruption("avro: truncated boolean");
  auto b = static_cast<uint8_t>(data_[pos_++]);
  if (b > 1) return Corruption("avro: boolean byte is neither 0 nor 1");
  return b == 1;
}

Result<float> Decoder::ReadFloat() {
  if (remaining() < 4) return Corruption("avro: truncated float");
  uint32_t bits = GetFixed32(data_.data() + pos_);
  pos_ += 4;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

Result<double> Decoder::ReadDouble() {
  if (remaining() < 8) return Corruption("avro: truncated double");
  uint64_t bits = GetFixed64(data_.data() + pos_);
  pos_ += 8;
  double v;
  std::memcpy(&v, &bits, 8);
  return v;
}

Result<std::string_view> Decoder::ReadBytes() {
  ASSIGN_OR_RETURN(int64_t n, ReadLong());
  if (n < 0) return Corruption("avro: negative bytes length");
  return ReadFixed(static_cast<size_t>(n));
}

Result<std::string_view> Decoder::ReadFixed(size_t size) {
  if (remaining() < size) return Corruption("avro: value runs past the end of the data");
  std::string_view v = data_.substr(pos_, size);
  pos_ += size;
  return v;
}

Status Decoder::Skip(size_t n) {
  if (remaining() < n) return Corruption("avro: skip runs past the end of the data");
  pos_ += n;
  return Status::OK();
}

}  // namespace icestream::format::avro
