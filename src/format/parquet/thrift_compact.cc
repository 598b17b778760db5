// Thrift compact protocol encoder (thrift-compact-protocol.md).
#include "format/parquet/thrift_compact.h"

#include <cstring>

namespace icestream::format::parquet {

void CompactWriter::Varint(uint64_t v) {
  while (v >= 0x80) {
    out_->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out_->push_back(static_cast<char>(v));
}

void CompactWriter::ZigZag32(int32_t v) {
  Varint((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31));
}

void CompactWriter::ZigZag64(int64_t v) {
  Varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}

void CompactWriter::FieldHeader(int16_t id, CType type) {
  int delta = id - last_id_;
  if (delta > 0 && delta <= 15) {
    out_->push_back(static_cast<char>((delta << 4) | static_cast<int>(type)));
  } else {
    out_->push_back(static_cast<char>(type));
    ZigZag32(id);
  }
  last_id_ = id;
}

void CompactWriter::BeginStruct() {
  stack_.push_back(last_id_);
  last_id_ = 0;
}

void CompactWriter::EndStruct() {
  out_->push_back(0);
  last_id_ = stack_.empty() ? 0 : stack_.back();
  if (!stack_.empty()) stack_.pop_back();
}

void CompactWriter::FieldBool(int16_t id, bool v) {
  FieldHeader(id, v ? CType::kBoolTrue : CType::kBoolFalse);
}

void CompactWriter::FieldI8(int16_t id, int8_t v) {
  FieldHeader(id, CType::kI8);
  out_->push_back(static_cast<char>(v));
}

void CompactWriter::FieldI16(int16_t id, int16_t v) {
  FieldHeader(id, CType::kI16);
  ZigZag32(v);
}

void CompactWriter::FieldI32(int16_t id, int32_t v) {
  FieldHeader(id, CType::kI32);
  ZigZag32(v);
}

void CompactWriter::FieldI64(int16_t id, int64_t v) {
  FieldHeader(id, CType::kI64);
  ZigZag64(v);
}

void CompactWriter::FieldDouble(int16_t id, double v) {
  FieldHeader(id, CType::kDouble);
  char b[8];
  std::memcpy(b, &v, 8);  // little-endian host (static_assert in common/bytes.h)
  out_->append(b, 8);
}

void CompactWriter::FieldBinary(int16_t id, std::string_view v) {
  FieldHeader(id, CType::kBinary);
  ElemBinary(v);
}

void CompactWriter::FieldStructBegin(int16_t id) {
  FieldHeader(id, CType::kStruct);
  BeginStruct();
}

void CompactWriter::FieldListBegin(int16_t id, CType elem, size_t size) {
  FieldHeader(id, CType::kList);
  if (size <= 14) {
    out_->push_back(static_cast<char>((size << 4) | static_cast<int>(elem)));
  } else {
    out_->push_back(static_cast<char>(0xF0 | static_cast<int>(elem)));
    Varint(size);
  }
}

void CompactWriter::ElemI32(int32_t v) { ZigZag32(v); }
void CompactWriter::ElemI64(int64_t v) { ZigZag64(v); }

void CompactWriter::ElemBinary(std::string_view v) {
  Varint(v.size());
  out_->append(v.data(), v.size());
}

void CompactWriter::ElemBool(bool v) { out_->push_back(v ? 1 : 2); }

void CompactWriter::ElemStructBegin() { BeginStruct(); }

}  // namespace icestream::format::parquet
