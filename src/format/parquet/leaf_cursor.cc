// LeafCursor: set-up and decimal conversion (LogicalTypes.md "DECIMAL": unscaled
// two's-complement, big-endian in FIXED_LEN_BYTE_ARRAY / BYTE_ARRAY).
#include "format/parquet/leaf_cursor.h"

#include "format/parquet/value_decoder.h"

namespace icestream::format::parquet {

void LeafCursor::Init(const LeafPlan* plan, const DecodedColumn* column, const SourceLeaf* source,
                      const ColumnDescriptor* target, int64_t records) {
  static const int16_t kZero[1] = {0};
  nulls_ = plan->nulls;
  conversion_ = plan->conversion;
  rep_limit_ = plan->rep_limit;
  def_map_ = plan->def_map.data();
  target_physical_ = target->physical;
  target_width_ = target->type_length;
  pos_ = value_ = 0;
  if (column == nullptr) {
    column_ = nullptr;
    rep_ = def_ = nullptr;
    def_map_ = kZero;
    source_max_def_ = 0;
    n_ = static_cast<size_t>(records);
    return;
  }
  column_ = column;
  rep_ = column->rep.empty() ? nullptr : column->rep.data();
  def_ = column->def.empty() ? nullptr : column->def.data();
  n_ = static_cast<size_t>(column->num_entries);
  source_max_def_ = static_cast<size_t>(source->max_def);
  source_physical_ = source->physical;
  width_ = FixedWidth(source->physical, source->type_length);
}

bool LeafCursor::Unscaled(Int128* v) const {
  switch (source_physical_) {
    case PhysicalType::kInt32:
      *v = static_cast<int32_t>(GetFixed32(column_->fixed.data() + value_ * 4));
      return true;
    case PhysicalType::kInt64:
      *v = static_cast<int64_t>(GetFixed64(column_->fixed.data() + value_ * 8));
      return true;
    default:
      break;
  }
  std::string_view b = SourceBytes();
  if (b.empty()) {
    *v = 0;
    return true;
  }
  // Sign-extension bytes beyond 16 must repeat the sign.
  const auto sign = static_cast<uint8_t>(static_cast<uint8_t>(b[0]) & 0x80 ? 0xFF : 0x00);
  while (b.size() > 16) {
    if (static_cast<uint8_t>(b[0]) != sign) return false;
    b.remove_prefix(1);
  }
  if (b.size() == 16 && ((static_cast<uint8_t>(b[0]) ^ sign) & 0x80) != 0) return false;
  UInt128 u = sign ? ~static_cast<UInt128>(0) : 0;
  for (char c : b) u = (u << 8) | static_cast<uint8_t>(c);
  *v = static_cast<Int128>(u);
  return true;
}

bool LeafCursor::ValueFits() const {
  if (conversion_ != ValueConversion::kDecimal) return true;
  Int128 v;
  if (!Unscaled(&v)) return false;
  switch (target_physical_) {
    case PhysicalType::kInt32:
      return v >= INT32_MIN && v <= INT32_MAX;
    case PhysicalType::kInt64:
      return v >= INT64_MIN && v <= INT64_MAX;
    default: {
      if (target_width_ >= 16) return true;
      const Int128 limit = static_cast<Int128>(1) << (8 * target_width_ - 1);
      return v >= -limit && v < limit;
    }
  }
}

std::string_view LeafCursor::Bytes(char scratch[16]) const {
  if (conversion_ != ValueConversion::kDecimal) return SourceBytes();
  Int128 v = 0;
  Unscaled(&v);
  auto u = static_cast<UInt128>(v);
  const int w = target_width_ > 16 ? 16 : target_width_;
  for (int i = w - 1; i >= 0; --i) {
    scratch[i] = static_cast<char>(static_cast<uint8_t>(u));
    u >>= 8;
  }
  return std::string_view(scratch, static_cast<size_t>(w));
}

}  // namespace icestream::format::parquet
