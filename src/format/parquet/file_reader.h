// ParquetFileReader: a Parquet file held in memory -> its footer, and its rows copied
// into a RecordSink (a FileWriter or RowGroupBuilder) of a target Iceberg schema, for
// compaction (parquet-format README "File Format"; Iceberg spec "Column Projection").
//
//   "PAR1" | column chunks ... | FileMetaData (thrift compact) | u32 LE length | "PAR1"
//
// Columns are matched by Iceberg field id (column_mapping.h: added fields read as
// nulls, dropped ones are not read, int->long, float->double and decimal widening are
// converted). Pages: v1 and v2; encodings and codecs as in column_chunk_reader.h.
// Refused: encrypted files, INT96 and other types without an Iceberg counterpart
// (file_schema.h), chunks stored in other files, LZO/BROTLI/LZ4 codecs.
//
// Lifetime: the file bytes are the caller's and must outlive the reader. A reader is
// immutable after Open; its const methods may run on several threads at once (each
// call decodes into its own buffers).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "format/parquet/column_chunk_reader.h"
#include "format/parquet/column_mapping.h"
#include "format/parquet/file_schema.h"
#include "format/parquet/leaf_cursor.h"
#include "format/parquet/metadata.h"
#include "format/parquet/record_sink.h"

namespace icestream::format::parquet {

struct ReaderOptions {
  // Memory one row group may take once decoded (levels, values, decompressed pages);
  // reading a larger one fails with kResourceExhausted. Bounds what damaged sizes can
  // make the reader allocate.
  int64_t max_row_group_bytes = int64_t{2} << 30;
  // Check PageHeader.crc where a writer set it.
  bool verify_page_crc = true;
};

// The columns of one row group decoded for one target schema, with a cursor per
// target leaf (the JSON printer walks them; CopyRowGroup uses them too).
struct RowGroupCursors {
  int64_t num_rows = 0;
  std::vector<std::unique_ptr<DecodedColumn>> columns;  // by file leaf; null if not read
  std::vector<LeafCursor> leaves;                       // by target leaf
};

class ParquetFileReader {
 public:
  // Checks the magic bytes, parses the footer and the schema, and checks every column
  // chunk's range against the file. Errors: kCorruption (what and where),
  // kUnimplemented (encrypted footer, chunks in other files).
  static Result<std::unique_ptr<ParquetFileReader>> Open(std::string_view file,
                                                         ReaderOptions options = {});

  const FileMetaData& metadata() const { return metadata_; }
  const FileSchema& schema() const { return *schema_; }
  // The whole file, as given to Open.
  std::string_view file() const { return file_; }
  int64_t num_rows() const { return metadata_.num_rows; }
  int num_row_groups() const { return static_cast<int>(metadata_.row_groups.size()); }
  // The footer's key/value entry (e.g. "iceberg.schema"), if any.
  std::optional<std::string_view> FindKeyValue(std::string_view key) const;

  // Copies every row, row group by row group, into `sink` (each record committed with
  // EndRecord()). Errors: kInvalidArgument when the sink's schema cannot be filled from
  // this file (column_mapping.h), the read errors of CopyRowGroup. After an error the
  // rows of earlier row groups stay committed in the sink.
  Status CopyRows(RecordSink* sink) const;
  // Copies the rows of one row group. The row group is decoded whole before the first
  // row is added, so a damaged row group adds no row; a sink error (or a decimal that
  // does not fit, kCorruption) leaves the earlier rows of the group committed and the
  // failing one aborted.
  Status CopyRowGroup(int row_group, RecordSink* sink) const;

  // Decodes what `plans` (PlanCopy against `target`) need of a row group and sets up
  // the cursors. Errors: kCorruption, kUnimplemented, kResourceExhausted.
  Status OpenRowGroup(int row_group, const ParquetSchema& target,
                      const std::vector<LeafPlan>& plans, RowGroupCursors* out) const;

 private:
  ParquetFileReader(std::string_view file, ReaderOptions options)
      : file_(file), options_(options) {}
  Status CopyRowGroup(int row_group, const std::vector<LeafPlan>& plans, RecordSink* sink) const;

  std::string_view file_;
  ReaderOptions options_;
  int64_t footer_start_ = 0;
  FileMetaData metadata_;
  std::unique_ptr<FileSchema> schema_;
};

}  // namespace icestream::format::parquet
