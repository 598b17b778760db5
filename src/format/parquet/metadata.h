// The Parquet footer and page-header structures, as plain structs (parquet.thrift:
// FileMetaData, SchemaElement, LogicalType, RowGroup, ColumnChunk, ColumnMetaData,
// Statistics, PageHeader, DataPageHeader, DataPageHeaderV2, DictionaryPageHeader).
// Modelled: what the writer sets plus what the reader needs; other fields are skipped
// when read. Serialization is metadata_thrift.cc, parsing metadata_parse.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

#include "format/parquet/types.h"

namespace icestream::format::parquet {

// parquet.thrift union LogicalType (member ids in comments).
struct LogicalType {
  enum class Kind : uint8_t {
    kNone,
    kString,     // 1
    kMap,        // 2
    kList,       // 3
    kEnum,       // 4
    kDecimal,    // 5 DecimalType{1: scale, 2: precision}
    kDate,       // 6
    kTime,       // 7 TimeType{1: isAdjustedToUTC, 2: unit}
    kTimestamp,  // 8 TimestampType{1: isAdjustedToUTC, 2: unit}
    kInteger,    // 10 IntType{1: bitWidth i8, 2: isSigned}
    kUnknown,    // 11 NullType
    kJson,       // 12
    kBson,       // 13
    kUuid,       // 14
    kFloat16,    // 15
    kOther,      // any other member (VARIANT, GEOMETRY, ...): `other_id`
  };
  // TimeUnit union members 1 MILLIS, 2 MICROS, 3 NANOS.
  enum class Unit : uint8_t { kMillis = 1, kMicros = 2, kNanos = 3 };
  Kind kind = Kind::kNone;
  int32_t scale = 0;
  int32_t precision = 0;
  bool adjusted_to_utc = false;  // time/timestamp
  Unit unit = Unit::kMicros;     // time/timestamp (the writer always uses MICROS)
  int8_t bit_width = 0;          // integer
  bool is_signed = true;         // integer
  int16_t other_id = 0;          // kOther: the union member id

  bool operator==(const LogicalType&) const = default;
};

struct SchemaElement {
  std::optional<PhysicalType> type;            // 1 (leaves)
  std::optional<int32_t> type_length;          // 2 (FIXED_LEN_BYTE_ARRAY)
  std::optional<Repetition> repetition_type;   // 3 (all but the root)
  std::string name;                            // 4
  std::optional<int32_t> num_children;         // 5 (groups)
  std::optional<ConvertedType> converted_type; // 6
  std::optional<int32_t> scale;                // 7
  std::optional<int32_t> precision;            // 8
  std::optional<int32_t> field_id;             // 9
  LogicalType logical_type;                    // 10 (absent when kNone)

  bool operator==(const SchemaElement&) const = default;
};

// Deprecated min/max (1, 2) are written only for signed-order columns.
struct Statistics {
  std::optional<std::string> max;            // 1
  std::optional<std::string> min;            // 2
  std::optional<int64_t> null_count;         // 3
  std::optional<int64_t> distinct_count;     // 4 (read only)
  std::optional<std::string> max_value;      // 5
  std::optional<std::string> min_value;      // 6
  std::optional<bool> is_max_value_exact;    // 7
  std::optional<bool> is_min_value_exact;    // 8
  std::optional<int64_t> nan_count;          // 9 (read only)

  bool operator==(const Statistics&) const = default;
};

struct PageEncodingStats {
  PageType page_type = PageType::kDataPage;  // 1
  Encoding encoding = Encoding::kPlain;      // 2
  int32_t count = 0;                         // 3

  bool operator==(const PageEncodingStats&) const = default;
};

struct ColumnMetaData {
  PhysicalType type = PhysicalType::kBoolean;  // 1
  std::vector<Encoding> encodings;             // 2
  std::vector<std::string> path_in_schema;     // 3
  Codec codec = Codec::kUncompressed;          // 4
  int64_t num_values = 0;                      // 5
  int64_t total_uncompressed_size = 0;         // 6
  int64_t total_compressed_size = 0;           // 7
  int64_t data_page_offset = 0;                // 9
  std::optional<int64_t> dictionary_page_offset;  // 11
  std::optional<Statistics> statistics;        // 12
  std::vector<PageEncodingStats> encoding_stats;  // 13

  bool operator==(const ColumnMetaData&) const = default;
};

struct ColumnChunk {
  std::optional<std::string> file_path;  // 1 (never written; the reader refuses it)
  int64_t file_offset = 0;  // 2 (deprecated; 0)
  ColumnMetaData meta_data; // 3 (required by the reader)

  bool operator==(const ColumnChunk&) const = default;
};

struct RowGroup {
  std::vector<ColumnChunk> columns;  // 1
  int64_t total_byte_size = 0;       // 2 (uncompressed)
  int64_t num_rows = 0;              // 3
  int64_t file_offset = 0;           // 5
  int64_t total_compressed_size = 0; // 6
  int16_t ordinal = 0;               // 7

  bool operator==(const RowGroup&) const = default;
};

struct KeyValue {
  std::string key;
  std::string value;

  bool operator==(const KeyValue&) const = default;
};

struct FileMetaData {
  int32_t version = 1;                  // 1
  std::vector<SchemaElement> schema;    // 2
  int64_t num_rows = 0;                 // 3
  std::vector<RowGroup> row_groups;     // 4
  std::vector<KeyValue> key_value_metadata;  // 5
  std::string created_by;               // 6
  // 7 column_orders: TYPE_ORDER for each of this many leaves (0 = omit). Reading
  // sets it to the length of the list, whatever its members.
  int32_t num_leaf_columns = 0;

  bool operator==(const FileMetaData&) const = default;
};

struct DataPageHeader {
  int32_t num_values = 0;                    // 1
  Encoding encoding = Encoding::kPlain;      // 2
  Encoding definition_level_encoding = Encoding::kRle;  // 3
  Encoding repetition_level_encoding = Encoding::kRle;  // 4

  bool operator==(const DataPageHeader&) const = default;
};

struct DictionaryPageHeader {
  int32_t num_values = 0;                // 1
  Encoding encoding = Encoding::kPlain;  // 2
  std::optional<bool> is_sorted;         // 3

  bool operator==(const DictionaryPageHeader&) const = default;
};

// Data page v2: levels are never compressed and carry no length prefix; their byte
// lengths are here.
struct DataPageHeaderV2 {
  int32_t num_values = 0;                       // 1 level entries
  int32_t num_nulls = 0;                        // 2
  int32_t num_rows = 0;                         // 3
  Encoding encoding = Encoding::kPlain;         // 4
  int32_t definition_levels_byte_length = 0;    // 5
  int32_t repetition_levels_byte_length = 0;    // 6
  bool is_compressed = true;                    // 7 (default true)

  bool operator==(const DataPageHeaderV2&) const = default;
};

struct PageHeader {
  PageType type = PageType::kDataPage;  // 1
  int32_t uncompressed_page_size = 0;   // 2
  int32_t compressed_page_size = 0;     // 3
  std::optional<int32_t> crc;           // 4
  std::optional<DataPageHeader> data_page_header;              // 5
  std::optional<DictionaryPageHeader> dictionary_page_header;  // 7
  std::optional<DataPageHeaderV2> data_page_header_v2;         // 8

  bool operator==(const PageHeader&) const = default;
};

// Thrift compact serialization, appended to *out.
void SerializeSchemaElement(const SchemaElement& e, std::string* out);
void SerializeFileMetaData(const FileMetaData& m, std::string* out);
void SerializePageHeader(const PageHeader& h, std::string* out);

// Thrift compact parsing (metadata_parse.cc). Fields of unknown ids are skipped; a
// missing field that parquet.thrift marks required, a truncated or over-deep
// structure, or a length beyond the input is kCorruption naming the struct and field.
// Encrypted footers (encryption_algorithm, crypto_metadata) are kUnimplemented.
Result<FileMetaData> ParseFileMetaData(std::string_view in);
// Parses the page header at the start of `in`; *size = its length in bytes.
Status ParsePageHeader(std::string_view in, PageHeader* out, size_t* size);

}  // namespace icestream::format::parquet
