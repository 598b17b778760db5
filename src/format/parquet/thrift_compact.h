// A writer for the Thrift compact protocol (apache/thrift doc/specs/
// thrift-compact-protocol.md), enough for Parquet metadata: structs, i8/i16/i32/i64,
// bool, double, binary, lists. Only encoding; icestream never reads Thrift.
//
//   field header:  [delta:4][type:4]                 when 1 <= delta <= 15
//                  [0000][type:4] zigzag-varint(id)  otherwise
//   list header:   [size:4][elem:4]                  when size <= 14
//                  [1111][elem:4] varint(size)       otherwise
//   struct:        fields..., 0x00
//
// Not thread-safe; appends to a caller-owned string that must outlive the writer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace icestream::format::parquet {

// Compact-protocol type nibbles (spec "Struct encoding").
enum class CType : uint8_t {
  kBoolTrue = 1,
  kBoolFalse = 2,
  kI8 = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
};

class CompactWriter {
 public:
  explicit CompactWriter(std::string* out) : out_(out) {}

  // A top-level struct (the message itself): Begin ... End.
  void BeginStruct();
  void EndStruct();  // writes the stop byte

  void FieldBool(int16_t id, bool v);
  void FieldI8(int16_t id, int8_t v);
  void FieldI16(int16_t id, int16_t v);
  void FieldI32(int16_t id, int32_t v);
  void FieldI64(int16_t id, int64_t v);
  void FieldDouble(int16_t id, double v);
  void FieldBinary(int16_t id, std::string_view v);
  // A struct-valued field: FieldStructBegin(id) ... EndStruct().
  void FieldStructBegin(int16_t id);
  // A list-valued field; follow with exactly `size` Elem* calls.
  void FieldListBegin(int16_t id, CType elem, size_t size);

  void ElemI32(int32_t v);
  void ElemI64(int64_t v);
  void ElemBinary(std::string_view v);
  // Booleans inside lists: 1 = true, 2 = false (what the Java/C#/Python libraries
  // write and every reader accepts).
  void ElemBool(bool v);
  // A struct element of a list: ElemStructBegin() ... EndStruct().
  void ElemStructBegin();

  // Primitive encoders, exposed for tests.
  void Varint(uint64_t v);
  void ZigZag32(int32_t v);
  void ZigZag64(int64_t v);

 private:
  void FieldHeader(int16_t id, CType type);

  std::string* out_;
  int16_t last_id_ = 0;
  std::vector<int16_t> stack_;
};

}  // namespace icestream::format::parquet
