// The Parquet footer and page-header structures icestream writes, as plain structs
// (parquet.thrift: FileMetaData, SchemaElement, LogicalType, RowGroup, ColumnChunk,
// ColumnMetaData, Statistics, PageHeader, DataPageHeader, DictionaryPageHeader).
// Only the members a writer sets are modelled; serialization is metadata_thrift.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/parquet/types.h"

namespace icestream::format::parquet {

// parquet.thrift union LogicalType (member ids in comments).
struct LogicalType {
  enum class Kind : uint8_t {
    kNone,
    kString,     // 1
    kMap,        // 2
    kList,       // 3
    kDecimal,    // 5 DecimalType{1: scale, 2: precision}
    kDate,       // 6
    kTime,       // 7 TimeType{1: isAdjustedToUTC, 2: unit}
    kTimestamp,  // 8 TimestampType{1: isAdjustedToUTC, 2: unit}
    kUuid,       // 14
  };
  Kind kind = Kind::kNone;
  int32_t scale = 0;
  int32_t precision = 0;
  bool adjusted_to_utc = false;  // time/timestamp; the unit is always MICROS here
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
};

// Deprecated min/max (1, 2) are written only for signed-order columns.
struct Statistics {
  std::optional<std::string> max;            // 1
  std::optional<std::string> min;            // 2
  std::optional<int64_t> null_count;         // 3
  std::optional<std::string> max_value;      // 5
  std::optional<std::string> min_value;      // 6
  std::optional<bool> is_max_value_exact;    // 7
  std::optional<bool> is_min_value_exact;    // 8
};

struct PageEncodingStats {
  PageType page_type = PageType::kDataPage;  // 1
  Encoding encoding = Encoding::kPlain;      // 2
  int32_t count = 0;                         // 3
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
};

struct ColumnChunk {
  int64_t file_offset = 0;  // 2 (deprecated; 0)
  ColumnMetaData meta_data; // 3
};

struct RowGroup {
  std::vector<ColumnChunk> columns;  // 1
  int64_t total_byte_size = 0;       // 2 (uncompressed)
  int64_t num_rows = 0;              // 3
  int64_t file_offset = 0;           // 5
  int64_t total_compressed_size = 0; // 6
  int16_t ordinal = 0;               // 7
};

struct KeyValue {
  std::string key;
  std::string value;
};

struct FileMetaData {
  int32_t version = 1;                  // 1
  std::vector<SchemaElement> schema;    // 2
  int64_t num_rows = 0;                 // 3
  std::vector<RowGroup> row_groups;     // 4
  std::vector<KeyValue> key_value_metadata;  // 5
  std::string created_by;               // 6
  // 7 column_orders: TYPE_ORDER for each of this many leaves (0 = omit).
  int32_t num_leaf_columns = 0;
};

struct DataPageHeader {
  int32_t num_values = 0;                    // 1
  Encoding encoding = Encoding::kPlain;      // 2
  Encoding definition_level_encoding = Encoding::kRle;  // 3
  Encoding repetition_level_encoding = Encoding::kRle;  // 4
};

struct DictionaryPageHeader {
  int32_t num_values = 0;                // 1
  Encoding encoding = Encoding::kPlain;  // 2
};

struct PageHeader {
  PageType type = PageType::kDataPage;  // 1
  int32_t uncompressed_page_size = 0;   // 2
  int32_t compressed_page_size = 0;     // 3
  std::optional<int32_t> crc;           // 4
  std::optional<DataPageHeader> data_page_header;              // 5
  std::optional<DictionaryPageHeader> dictionary_page_header;  // 7
};

// Thrift compact serialization, appended to *out.
void SerializeSchemaElement(const SchemaElement& e, std::string* out);
void SerializeFileMetaData(const FileMetaData& m, std::string* out);
void SerializePageHeader(const PageHeader& h, std::string* out);

}  // namespace icestream::format::parquet
