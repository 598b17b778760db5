// Parquet enums, with the numeric values of parquet.thrift (apache/parquet-format
// src/main/thrift/parquet.thrift: Type, ConvertedType, FieldRepetitionType, Encoding,
// CompressionCodec, PageType).
#pragma once

#include <cstdint>
#include <string_view>

namespace icestream::format::parquet {

enum class PhysicalType : int32_t {
  kBoolean = 0,
  kInt32 = 1,
  kInt64 = 2,
  kFloat = 4,
  kDouble = 5,
  kByteArray = 6,
  kFixedLenByteArray = 7,
};

enum class ConvertedType : int32_t {
  kUtf8 = 0,
  kMap = 1,
  kMapKeyValue = 2,
  kList = 3,
  kDecimal = 5,
  kDate = 6,
  kTimeMicros = 8,
  kTimestampMicros = 10,
};

enum class Repetition : int32_t { kRequired = 0, kOptional = 1, kRepeated = 2 };

enum class Encoding : int32_t {
  kPlain = 0,
  kRle = 3,
  kRleDictionary = 8,
};

enum class Codec : int32_t {
  kUncompressed = 0,
  kSnappy = 1,
  kGzip = 2,
  kZstd = 6,
};

enum class PageType : int32_t { kDataPage = 0, kDictionaryPage = 2, kDataPageV2 = 3 };

// How min/max of a column compare (parquet.thrift ColumnOrder / LogicalTypes.md "Sort
// Order"). kNone: no statistics are defined (never produced by the Iceberg mapping).
enum class SortOrder : uint8_t { kSigned, kUnsigned, kNone };

// "zstd", "snappy", "gzip", "none"/"uncompressed" (case-sensitive, lower case).
bool ParseCodec(std::string_view name, Codec* codec);
std::string_view CodecName(Codec codec);

}  // namespace icestream::format::parquet
