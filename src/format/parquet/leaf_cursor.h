// LeafCursor: walks the level entries of one target leaf through a decoded file column
// (column_chunk_reader.h) under a LeafPlan (column_mapping.h): levels come out in the
// target's terms, values converted to the target's physical type. Records are
// delimited by repetition level 0. Used by the row copier and the JSON printer.
//
// Not thread-safe; the DecodedColumn must outlive the cursor.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "common/bytes.h"
#include "format/parquet/column_chunk_reader.h"
#include "format/parquet/column_mapping.h"

namespace icestream::format::parquet {

// 128-bit integers for decimal unscaled values (GCC/Clang extension; -Wpedantic-clean).
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

class LeafCursor {
 public:
  // `column` is the plan's source column (nullptr when plan.source_leaf < 0: then
  // `records` entries (0, 0)). `source`: the file leaf; `target`: the target leaf.
  void Init(const LeafPlan* plan, const DecodedColumn* column, const SourceLeaf* source,
            const ColumnDescriptor* target, int64_t records);

  bool done() const { return pos_ >= n_; }
  int16_t rep() const { return rep_ != nullptr ? rep_[pos_] : 0; }
  int16_t def() const { return def_map_[SourceDef()]; }
  bool has_value() const { return !nulls_ && SourceDef() == source_max_def_; }
  void Next() {
    if (has_value()) ++value_;
    ++pos_;
    if (nulls_ && rep_ != nullptr) {
      // Entries inside lists deeper than the anchor are not instances of it.
      while (pos_ < n_ && rep_[pos_] > rep_limit_) {
        if (SourceDef() == source_max_def_) ++value_;
        ++pos_;
      }
    }
  }

  // Values (precondition: has_value()), in the target's physical type.
  bool Bool() const { return column_->fixed[value_] != 0; }
  int32_t Int32() const;
  int64_t Int64() const;
  float Float() const {
    float f;
    std::memcpy(&f, column_->fixed.data() + value_ * 4, 4);
    return f;
  }
  double Double() const {
    if (conversion_ == ValueConversion::kFloatToDouble) return Float();
    double d;
    std::memcpy(&d, column_->fixed.data() + value_ * 8, 8);
    return d;
  }
  // BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY targets; decimals are converted into *scratch.
  std::string_view Bytes(char scratch[16]) const;
  // Whether the current value converts (decimals: fits the target's storage).
  bool ValueFits() const;

 private:
  size_t SourceDef() const {
    return def_ != nullptr ? static_cast<size_t>(def_[pos_]) : source_max_def_;
  }
  std::string_view SourceBytes() const {
    if (source_physical_ == PhysicalType::kByteArray) return column_->bytes[value_];
    return std::string_view(column_->fixed).substr(value_ * width_, width_);
  }
  // The unscaled decimal; false when the stored bytes do not fit 128 bits.
  bool Unscaled(Int128* v) const;

  const DecodedColumn* column_ = nullptr;
  const int16_t* rep_ = nullptr;
  const int16_t* def_ = nullptr;
  const int16_t* def_map_ = nullptr;
  size_t n_ = 0;
  size_t pos_ = 0;
  size_t value_ = 0;
  size_t width_ = 0;  // source fixed width
  size_t source_max_def_ = 0;
  int16_t rep_limit_ = 0;
  bool nulls_ = false;
  ValueConversion conversion_ = ValueConversion::kNone;
  PhysicalType source_physical_ = PhysicalType::kBoolean;
  PhysicalType target_physical_ = PhysicalType::kBoolean;
  int32_t target_width_ = 0;
};

inline int32_t LeafCursor::Int32() const {
  if (conversion_ == ValueConversion::kDecimal) {
    Int128 v = 0;
    Unscaled(&v);
    return static_cast<int32_t>(v);
  }
  return static_cast<int32_t>(GetFixed32(column_->fixed.data() + value_ * 4));
}

inline int64_t LeafCursor::Int64() const {
  switch (conversion_) {
    case ValueConversion::kInt32ToInt64:
      return static_cast<int32_t>(GetFixed32(column_->fixed.data() + value_ * 4));
    case ValueConversion::kUInt32ToInt64:
      return GetFixed32(column_->fixed.data() + value_ * 4);
    case ValueConversion::kMillisToMicros: {
      int64_t ms = width_ == 4
                       ? static_cast<int32_t>(GetFixed32(column_->fixed.data() + value_ * 4))
                       : static_cast<int64_t>(GetFixed64(column_->fixed.data() + value_ * 8));
      return static_cast<int64_t>(static_cast<uint64_t>(ms) * 1000u);  // wraps like Java
    }
    case ValueConversion::kDecimal: {
      Int128 v = 0;
      Unscaled(&v);
      return static_cast<int64_t>(v);
    }
    default:
      return static_cast<int64_t>(GetFixed64(column_->fixed.data() + value_ * 8));
  }
}

}  // namespace icestream::format::parquet
