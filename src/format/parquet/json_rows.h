// Rows of a Parquet file as JSON lines, in the file's own schema (FileSchema's Iceberg
// view): what `icestream parquet cat` prints, and what tests compare.
//
// One object per row, fields in schema order, null for null. Value forms:
//   boolean, int, long         JSON true/false and integers (longs in full, unquoted)
//   float, double              shortest round-trip decimal; NaN and infinities as the
//                              strings "NaN", "Infinity", "-Infinity"
//   decimal(P,S)               string of the exact value: "-12.30"
//   date                       "YYYY-MM-DD"
//   time                       "HH:MM:SS.ffffff"
//   timestamp / timestamptz    "YYYY-MM-DDTHH:MM:SS.ffffff", timestamptz with "+00:00"
//   string                     JSON string (invalid UTF-8 bytes become U+FFFD)
//   uuid                       "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
//   fixed, binary              lower-case hex string
//   list                       array; map: array of {"key": k, "value": v}; struct: object
#pragma once

#include <string>

#include "common/status.h"
#include "format/parquet/file_reader.h"

namespace icestream::format::parquet {

// Appends the rows of one row group, each followed by '\n'. Errors: those of
// ParquetFileReader::OpenRowGroup, and kCorruption when the columns disagree on a
// record's shape.
Status AppendJsonRows(const ParquetFileReader& reader, int row_group, std::string* out);

// The same rows in the shape of `target`: columns matched by Iceberg field id
// (column_mapping.h), a field the file lacks is null, widened types are read as the
// target's — how a table reader shows a file written under an older schema. Errors
// also those of PlanCopy (kInvalidArgument when the file cannot fill `target`).
Status AppendJsonRows(const ParquetFileReader& reader, int row_group, const ParquetSchema& target,
                      std::string* out);

}  // namespace icestream::format::parquet
