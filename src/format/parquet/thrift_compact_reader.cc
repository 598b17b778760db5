// Thrift compact protocol decoder (thrift-compact-protocol.md), bounded by its input.
#include "format/parquet/thrift_compact_reader.h"

#include <cstring>

namespace icestream::format::parquet {

Status CompactReader::Error(std::string_view what) const {
  return Corruption("thrift: " + std::string(what) + " at byte " + std::to_string(pos_));
}

Status CompactReader::Enter() {
  if (++depth_ > kMaxDepth) return Error("nesting deeper than " + std::to_string(kMaxDepth));
  return Status::OK();
}

Status CompactReader::ReadVarint(uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= in_.size()) return Error("truncated varint");
    auto b = static_cast<uint8_t>(in_[pos_++]);
    result |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) {
      *v = result;
      return Status::OK();
    }
  }
  return Error("varint longer than 10 bytes");
}

Status CompactReader::ReadZigZag(int64_t* v) {
  uint64_t u;
  RETURN_IF_ERROR(ReadVarint(&u));
  *v = static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1);
  return Status::OK();
}

Status CompactReader::BeginStruct() {
  RETURN_IF_ERROR(Enter());
  id_stack_.push_back(last_id_);
  last_id_ = 0;
  return Status::OK();
}

void CompactReader::EndStruct() {
  --depth_;
  if (!id_stack_.empty()) {
    last_id_ = id_stack_.back();
    id_stack_.pop_back();
  }
}

Status CompactReader::ReadFieldHeader(int16_t* id, CType* type, bool* stop) {
  if (pos_ >= in_.size()) return Error("truncated struct (no stop byte)");
  auto b = static_cast<uint8_t>(in_[pos_++]);
  if (b == 0) {
    *stop = true;
    return Status::OK();
  }
  *stop = false;
  *type = static_cast<CType>(b & 0x0F);
  int delta = b >> 4;
  if (delta != 0) {
    *id = static_cast<int16_t>(last_id_ + delta);
  } else {
    int64_t v;
    RETURN_IF_ERROR(ReadZigZag(&v));
    if (v < INT16_MIN || v > INT16_MAX) return Error("field id out of range");
    *id = static_cast<int16_t>(v);
  }
  last_id_ = *id;
  return Status::OK();
}

Status CompactReader::ReadI8(int8_t* v) {
  if (pos_ >= in_.size()) return Error("truncated i8");
  *v = static_cast<int8_t>(in_[pos_++]);
  return Status::OK();
}

Status CompactReader::ReadI16(int16_t* v) {
  int64_t x;
  RETURN_IF_ERROR(ReadZigZag(&x));
  if (x < INT16_MIN || x > INT16_MAX) return Error("i16 out of range");
  *v = static_cast<int16_t>(x);
  return Status::OK();
}

Status CompactReader::ReadI32(int32_t* v) {
  int64_t x;
  RETURN_IF_ERROR(ReadZigZag(&x));
  if (x < INT32_MIN || x > INT32_MAX) return Error("i32 out of range");
  *v = static_cast<int32_t>(x);
  return Status::OK();
}

Status CompactReader::ReadI64(int64_t* v) { return ReadZigZag(v); }

Status CompactReader::ReadDouble(double* v) {
  if (remaining() < 8) return Error("truncated double");
  std::memcpy(v, in_.data() + pos_, 8);  // little-endian on the wire and here
  pos_ += 8;
  return Status::OK();
}

Status CompactReader::ReadBinary(std::string_view* v) {
  uint64_t n;
  RETURN_IF_ERROR(ReadVarint(&n));
  if (n > remaining()) return Error("binary length " + std::to_string(n) + " beyond the input");
  *v = in_.substr(pos_, static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
  return Status::OK();
}

Status CompactReader::ReadBoolElement(bool* v) {
  if (pos_ >= in_.size()) return Error("truncated bool");
  *v = in_[pos_++] == 1;
  return Status::OK();
}

Status CompactReader::BeginList(CType* elem, uint32_t* size) {
  if (pos_ >= in_.size()) return Error("truncated list header");
  auto b = static_cast<uint8_t>(in_[pos_++]);
  *elem = static_cast<CType>(b & 0x0F);
  uint64_t n = b >> 4;
  if (n == 15) RETURN_IF_ERROR(ReadVarint(&n));
  // Every element takes at least one byte (bool elements too).
  if (n > remaining()) return Error("list of " + std::to_string(n) + " elements beyond the input");
  *size = static_cast<uint32_t>(n);
  return Enter();
}

Status CompactReader::Skip(CType type) {
  switch (type) {
    case CType::kBoolTrue:
    case CType::kBoolFalse:
      // A bool field has no value bytes; Skip is called for fields only with these.
      return Status::OK();
    case CType::kI8: {
      int8_t v;
      return ReadI8(&v);
    }
    case CType::kI16:
    case CType::kI32:
    case CType::kI64: {
      int64_t v;
      return ReadZigZag(&v);
    }
    case CType::kDouble: {
      double v;
      return ReadDouble(&v);
    }
    case CType::kBinary: {
      std::string_view v;
      return ReadBinary(&v);
    }
    case CType::kList:
    case CType::kSet: {
      CType elem;
      uint32_t n;
      RETURN_IF_ERROR(BeginList(&elem, &n));
      for (uint32_t i = 0; i < n; ++i) {
        if (elem == CType::kBoolTrue || elem == CType::kBoolFalse) {
          bool b;
          RETURN_IF_ERROR(ReadBoolElement(&b));
        } else {
          RETURN_IF_ERROR(Skip(elem));
        }
      }
      EndList();
      return Status::OK();
    }
    case CType::kMap: {
      uint64_t n;
      RETURN_IF_ERROR(ReadVarint(&n));
      if (n == 0) return Status::OK();
      if (pos_ >= in_.size()) return Error("truncated map header");
      auto kv = static_cast<uint8_t>(in_[pos_++]);
      if (n > remaining())
        return Error("map of " + std::to_string(n) + " entries beyond the input");
      RETURN_IF_ERROR(Enter());
      auto k = static_cast<CType>(kv >> 4);
      auto v = static_cast<CType>(kv & 0x0F);
      for (uint64_t i = 0; i < n; ++i) {
        for (CType t : {k, v}) {
          if (t == CType::kBoolTrue || t == CType::kBoolFalse) {
            bool b;
            RETURN_IF_ERROR(ReadBoolElement(&b));
          } else {
            RETURN_IF_ERROR(Skip(t));
          }
        }
      }
      --depth_;
      return Status::OK();
    }
    case CType::kStruct: {
      RETURN_IF_ERROR(BeginStruct());
      while (true) {
        int16_t id;
        CType t;
        bool stop;
        RETURN_IF_ERROR(ReadFieldHeader(&id, &t, &stop));
        if (stop) break;
        RETURN_IF_ERROR(Skip(t));
      }
      EndStruct();
      return Status::OK();
    }
    default:
      // 13 is UUID (16 raw bytes) in newer Thrift versions.
      if (static_cast<int>(type) == 13) {
        if (remaining() < 16) return Error("truncated uuid");
        pos_ += 16;
        return Status::OK();
      }
      return Error("unknown type " + std::to_string(static_cast<int>(type)));
  }
}

}  // namespace icestream::format::parquet
