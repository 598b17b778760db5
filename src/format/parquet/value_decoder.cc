// PLAIN, BYTE_STREAM_SPLIT, RLE boolean and dictionary-index decoding (Encodings.md).
#include "format/parquet/value_decoder.h"

#include "common/bytes.h"
#include "format/parquet/rle_decoder.h"

namespace icestream::format::parquet {

size_t FixedWidth(PhysicalType type, int32_t type_length) {
  switch (type) {
    case PhysicalType::kBoolean:
      return 1;
    case PhysicalType::kInt32:
    case PhysicalType::kFloat:
      return 4;
    case PhysicalType::kInt64:
    case PhysicalType::kDouble:
      return 8;
    case PhysicalType::kFixedLenByteArray:
      return type_length > 0 ? static_cast<size_t>(type_length) : 0;
    default:
      return 0;
  }
}

Status DecodePlain(std::string_view in, PhysicalType type, int32_t type_length, size_t n,
                   std::string* fixed, std::vector<std::string_view>* bytes) {
  switch (type) {
    case PhysicalType::kBoolean: {
      // Bit-packed, LSB first.
      if (in.size() < (n + 7) / 8) return Corruption("PLAIN BOOLEAN: page too short");
      size_t at = fixed->size();
      fixed->resize(at + n);
      char* out = fixed->data() + at;
      for (size_t i = 0; i < n; ++i)
        out[i] = static_cast<char>((static_cast<uint8_t>(in[i >> 3]) >> (i & 7)) & 1);
      return Status::OK();
    }
    case PhysicalType::kByteArray: {
      size_t pos = 0;
      for (size_t i = 0; i < n; ++i) {
        if (in.size() - pos < 4) return Corruption("PLAIN BYTE_ARRAY: page ends inside a length");
        uint32_t len = GetFixed32(in.data() + pos);
        pos += 4;
        if (in.size() - pos < len)
          return Corruption("PLAIN BYTE_ARRAY: value of " + std::to_string(len) +
                            " bytes runs past the page");
        bytes->push_back(in.substr(pos, len));
        pos += len;
      }
      return Status::OK();
    }
    case PhysicalType::kInt96:
      return Unimplemented("INT96 values are not supported");
    default: {
      size_t w = FixedWidth(type, type_length);
      if (w == 0) return Corruption("PLAIN: unknown physical type " + PhysicalTypeName(type));
      if (n > in.size() / w)
        return Corruption("PLAIN " + PhysicalTypeName(type) + ": page too short");
      fixed->append(in.data(), n * w);
      return Status::OK();
    }
  }
}

Status DecodeByteStreamSplit(std::string_view in, size_t width, size_t n, std::string* fixed) {
  if (width == 0 || n > in.size() / width || in.size() != n * width) {
    return Corruption("BYTE_STREAM_SPLIT: " + std::to_string(in.size()) + " bytes for " +
                      std::to_string(n) + " values of " + std::to_string(width) + " bytes");
  }
  size_t at = fixed->size();
  fixed->resize(at + n * width);
  char* out = fixed->data() + at;
  for (size_t k = 0; k < width; ++k) {
    const char* stream = in.data() + k * n;
    for (size_t i = 0; i < n; ++i) out[i * width + k] = stream[i];
  }
  return Status::OK();
}

Status DecodeRleBooleans(std::string_view in, size_t n, std::string* fixed) {
  if (in.size() < 4) return Corruption("RLE BOOLEAN: no length prefix");
  uint32_t len = GetFixed32(in.data());
  if (len > in.size() - 4) return Corruption("RLE BOOLEAN: length prefix beyond the page");
  RleDecoder d(in.substr(4, len), 1);
  size_t at = fixed->size();
  fixed->resize(at + n);
  return d.Get(reinterpret_cast<uint8_t*>(fixed->data() + at), n);
}

Status DecodeDictionaryIndices(std::string_view in, size_t n, std::vector<uint32_t>* indices) {
  indices->resize(n);
  if (n == 0) return Status::OK();
  if (in.empty()) return Corruption("dictionary indices: empty page");
  int width = static_cast<uint8_t>(in[0]);
  if (width > 32) return Corruption("dictionary indices: bit width " + std::to_string(width));
  RleDecoder d(in.substr(1), width);
  return d.Get(indices->data(), n);
}

}  // namespace icestream::format::parquet
