// RecordSink: where record shredding writes one record's level entries and values
// (the columns of a row group being built), with record-level commit and rollback.
#pragma once

#include "common/status.h"
#include "format/parquet/column_writer.h"
#include "format/parquet/schema_mapping.h"

namespace icestream::format::parquet {

class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual const ParquetSchema& schema() const = 0;
  // Leaf column `leaf` (schema order). The reference stays valid for the sink's life.
  virtual ColumnWriter& column(int leaf) = 0;
  // Commits the record whose entries were added since the previous EndRecord().
  virtual Status EndRecord() = 0;
  // Drops every entry added since the previous EndRecord().
  virtual void AbortRecord() = 0;
};

}  // namespace icestream::format::parquet
