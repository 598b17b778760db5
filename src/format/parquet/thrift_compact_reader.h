// A bounded reader of the Thrift compact protocol (apache/thrift doc/specs/
// thrift-compact-protocol.md), for Parquet metadata read from untrusted files.
//
//   field header:  [delta:4][type:4]                 delta 1..15 from the previous id
//                  [0000][type:4] zigzag-varint(id)  otherwise
//   bool field:    the type nibble is the value (1 true, 2 false), no value byte
//   list header:   [size:4][elem:4]                  size <= 14
//                  [1111][elem:4] varint(size)       otherwise
//   map header:    0x00 (empty) | varint(size) [ktype:4][vtype:4]
//   struct:        fields..., 0x00
//
// Every length and element count is checked against the bytes that remain (an element
// takes at least one byte), nesting is limited, and unknown fields of every type are
// skipped. Errors are kCorruption with the byte offset. Not thread-safe; the input must
// outlive the reader and any string_view it returned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "format/parquet/thrift_compact.h"

namespace icestream::format::parquet {

class CompactReader {
 public:
  // Structs, lists and maps nested deeper than this are refused (Parquet metadata
  // needs about 6 levels).
  static constexpr int kMaxDepth = 64;

  explicit CompactReader(std::string_view in) : in_(in) {}

  size_t position() const { return pos_; }
  size_t remaining() const { return in_.size() - pos_; }

  // A struct: BeginStruct(), then ReadFieldHeader() until it reports a stop, then
  // EndStruct(). Field values are read with the typed readers below or skipped.
  Status BeginStruct();
  void EndStruct();
  // Reads the next field header. *stop is true at the struct's stop byte. For bool
  // fields the value is in *type (kBoolTrue / kBoolFalse) and has no bytes.
  Status ReadFieldHeader(int16_t* id, CType* type, bool* stop);

  Status ReadI8(int8_t* v);
  Status ReadI16(int16_t* v);
  Status ReadI32(int32_t* v);
  Status ReadI64(int64_t* v);
  Status ReadDouble(double* v);
  Status ReadBinary(std::string_view* v);
  // A bool list element (one byte: 1 true; 0 or 2 false, as the Java reader accepts).
  Status ReadBoolElement(bool* v);
  // List or set header; *size is at most remaining(). Call EndList() after the elements.
  Status BeginList(CType* elem, uint32_t* size);
  void EndList() { --depth_; }

  // Skips one value of the given type (a field's or an element's), nested ones too.
  Status Skip(CType type);

  // A kCorruption "thrift: <what> at byte N".
  Status Error(std::string_view what) const;

 private:
  Status ReadVarint(uint64_t* v);
  Status ReadZigZag(int64_t* v);
  Status Enter();

  std::string_view in_;
  size_t pos_ = 0;
  int depth_ = 0;
  int16_t last_id_ = 0;
  std::vector<int16_t> id_stack_;
};

}  // namespace icestream::format::parquet
