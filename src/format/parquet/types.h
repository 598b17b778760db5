// Parquet enums, with the numeric values of parquet.thrift (apache/parquet-format
// src/main/thrift/parquet.thrift: Type, ConvertedType, FieldRepetitionType, Encoding,
// CompressionCodec, PageType).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace icestream::format::parquet {

enum class PhysicalType : int32_t {
  kBoolean = 0,
  kInt32 = 1,
  kInt64 = 2,
  kInt96 = 3,  // deprecated; read only to refuse it
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
  kEnum = 4,
  kDecimal = 5,
  kDate = 6,
  kTimeMillis = 7,
  kTimeMicros = 8,
  kTimestampMillis = 9,
  kTimestampMicros = 10,
  kUint8 = 11,
  kUint16 = 12,
  kUint32 = 13,
  kUint64 = 14,
  kInt8 = 15,
  kInt16 = 16,
  kInt32 = 17,
  kInt64 = 18,
  kJson = 19,
  kBson = 20,
  kInterval = 21,
};

enum class Repetition : int32_t { kRequired = 0, kOptional = 1, kRepeated = 2 };

enum class Encoding : int32_t {
  kPlain = 0,
  kPlainDictionary = 2,  // deprecated spelling of kRleDictionary (read only)
  kRle = 3,
  kBitPacked = 4,  // deprecated (read: refused)
  kDeltaBinaryPacked = 5,
  kDeltaLengthByteArray = 6,
  kDeltaByteArray = 7,
  kRleDictionary = 8,
  kByteStreamSplit = 9,
};

// The reader decodes the codecs the writer writes; the others are named so that the
// error can say which one a file uses.
enum class Codec : int32_t {
  kUncompressed = 0,
  kSnappy = 1,
  kGzip = 2,
  kLzo = 3,     // read: refused
  kBrotli = 4,  // read: refused
  kLz4 = 5,     // read: refused (deprecated Hadoop framing)
  kZstd = 6,
  kLz4Raw = 7,  // read: refused
};

enum class PageType : int32_t { kDataPage = 0, kIndexPage = 1, kDictionaryPage = 2, kDataPageV2 = 3 };

// How min/max of a column compare (parquet.thrift ColumnOrder / LogicalTypes.md "Sort
// Order"). kNone: no statistics are defined (never produced by the Iceberg mapping).
enum class SortOrder : uint8_t { kSigned, kUnsigned, kNone };

// "zstd", "snappy", "gzip", "none"/"uncompressed" (case-sensitive, lower case).
bool ParseCodec(std::string_view name, Codec* codec);
std::string_view CodecName(Codec codec);
// Names for error messages ("DELTA_BINARY_PACKED", "INT96", "encoding 42").
std::string EncodingName(Encoding encoding);
std::string PhysicalTypeName(PhysicalType type);

}  // namespace icestream::format::parquet
