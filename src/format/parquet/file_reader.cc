// Parquet file reader: footer, validation, row copying (parquet-format README "File
// Format", "Nested Encoding").
#include "format/parquet/file_reader.h"

#include "common/bytes.h"

namespace icestream::format::parquet {
namespace {

constexpr std::string_view kMagic = "PAR1";

// Adds the entries of one record of cursor `c` to writer `w`, typed by the target's
// physical type. Precondition: the cursor is at the record's first entry.
template <typename Add>
inline void EachEntry(LeafCursor& c, ColumnWriter& w, Add&& add) {
  do {
    if (c.has_value()) {
      add(c.rep());
    } else {
      w.AddNull(c.rep(), c.def());
    }
    c.Next();
  } while (!c.done() && c.rep() != 0);
}

Status CopyRecord(LeafCursor& c, ColumnWriter& w) {
  const ColumnDescriptor& d = w.descriptor();
  switch (d.physical) {
    case PhysicalType::kBoolean:
      EachEntry(c, w, [&](int16_t r) { w.AddBool(r, c.Bool()); });
      break;
    case PhysicalType::kInt32:
    case PhysicalType::kInt64:
    case PhysicalType::kFixedLenByteArray: {
      // Decimal conversions can meet a value the target cannot hold (damaged input).
      bool fits = true;
      char scratch[16];
      EachEntry(c, w, [&](int16_t r) {
        if (!c.ValueFits()) {
          fits = false;
          w.AddNull(r, static_cast<int16_t>(d.max_def - 1));
          return;
        }
        if (d.physical == PhysicalType::kInt32) {
          w.AddInt32(r, c.Int32());
        } else if (d.physical == PhysicalType::kInt64) {
          w.AddInt64(r, c.Int64());
        } else {
          w.AddBytes(r, c.Bytes(scratch));
        }
      });
      if (!fits)
        return Corruption("column " + std::to_string(d.field_id) +
                          ": a decimal does not fit the target type");
      break;
    }
    case PhysicalType::kFloat:
      EachEntry(c, w, [&](int16_t r) { w.AddFloat(r, c.Float()); });
      break;
    case PhysicalType::kDouble:
      EachEntry(c, w, [&](int16_t r) { w.AddDouble(r, c.Double()); });
      break;
    case PhysicalType::kByteArray: {
      char scratch[16];
      EachEntry(c, w, [&](int16_t r) { w.AddBytes(r, c.Bytes(scratch)); });
      break;
    }
    case PhysicalType::kInt96:
      return Internal("INT96 target column");
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<ParquetFileReader>> ParquetFileReader::Open(std::string_view file,
                                                                   ReaderOptions options) {
  if (file.size() < 12)
    return Corruption("parquet: file of " + std::to_string(file.size()) + " bytes is too short");
  if (file.substr(0, 4) != kMagic) return Corruption("parquet: no PAR1 magic at the start");
  std::string_view tail = file.substr(file.size() - 4);
  if (tail == "PARE") return Unimplemented("parquet: encrypted footers are not supported");
  if (tail != kMagic) return Corruption("parquet: no PAR1 magic at the end (truncated file?)");
  const uint32_t footer_len = GetFixed32(file.data() + file.size() - 8);
  if (footer_len > file.size() - 12) {
    return Corruption("parquet: footer length " + std::to_string(footer_len) +
                      " beyond the file of " + std::to_string(file.size()) + " bytes");
  }
  std::unique_ptr<ParquetFileReader> r(new ParquetFileReader(file, options));
  r->footer_start_ = static_cast<int64_t>(file.size() - 8 - footer_len);
  auto meta = ParseFileMetaData(file.substr(static_cast<size_t>(r->footer_start_), footer_len));
  if (!meta.ok()) return meta.status().WithContext("parquet footer");
  r->metadata_ = std::move(*meta);
  auto schema = FileSchema::Make(r->metadata_.schema);
  if (!schema.ok()) return schema.status();
  r->schema_ = std::make_unique<FileSchema>(std::move(*schema));

  const auto& leaves = r->schema_->leaves();
  int64_t rows = 0;
  for (size_t g = 0; g < r->metadata_.row_groups.size(); ++g) {
    const RowGroup& rg = r->metadata_.row_groups[g];
    const std::string where = "parquet: row group " + std::to_string(g);
    if (rg.columns.size() != leaves.size()) {
      return Corruption(where + " has " + std::to_string(rg.columns.size()) +
                        " column chunks for " + std::to_string(leaves.size()) + " leaf columns");
    }
    if (rg.num_rows < 0 || rg.num_rows > INT64_MAX - rows)
      return Corruption(where + ": bad num_rows");
    rows += rg.num_rows;
    for (size_t c = 0; c < rg.columns.size(); ++c) {
      const ColumnChunk& chunk = rg.columns[c];
      const ColumnMetaData& m = chunk.meta_data;
      const std::string col = where + ", column " + leaves[c].path;
      if (chunk.file_path)
        return Unimplemented(col + ": chunk stored in another file (" + *chunk.file_path + ")");
      if (m.type != leaves[c].physical) {
        return Corruption(col + ": chunk type " + PhysicalTypeName(m.type) +
                          " differs from the schema's " + PhysicalTypeName(leaves[c].physical));
      }
      int64_t start = m.data_page_offset;
      if (m.dictionary_page_offset && *m.dictionary_page_offset >= 4 &&
          *m.dictionary_page_offset < start) {
        start = *m.dictionary_page_offset;
      }
      if (start < 4 || m.total_compressed_size < 0 || start > r->footer_start_ ||
          m.total_compressed_size > r->footer_start_ - start) {
        return Corruption(col + ": chunk [" + std::to_string(start) + ", +" +
                          std::to_string(m.total_compressed_size) + ") outside the data area [4, " +
                          std::to_string(r->footer_start_) + ")");
      }
      if (m.num_values < 0) return Corruption(col + ": negative num_values");
      if (m.num_values < rg.num_rows) {
        return Corruption(col + ": " + std::to_string(m.num_values) + " values for " +
                          std::to_string(rg.num_rows) + " rows");
      }
    }
  }
  if (rows != r->metadata_.num_rows) {
    return Corruption("parquet: the row groups hold " + std::to_string(rows) +
                      " rows, the footer says " + std::to_string(r->metadata_.num_rows));
  }
  return r;
}

std::optional<std::string_view> ParquetFileReader::FindKeyValue(std::string_view key) const {
  for (const auto& kv : metadata_.key_value_metadata) {
    if (kv.key == key) return std::string_view(kv.value);
  }
  return std::nullopt;
}

Status ParquetFileReader::OpenRowGroup(int row_group, const ParquetSchema& target,
                                       const std::vector<LeafPlan>& plans,
                                       RowGroupCursors* out) const {
  if (row_group < 0 || row_group >= num_row_groups())
    return InvalidArgument("no row group " + std::to_string(row_group));
  const RowGroup& rg = metadata_.row_groups[static_cast<size_t>(row_group)];
  const auto& leaves = schema_->leaves();
  out->num_rows = rg.num_rows;
  out->columns.clear();
  out->columns.resize(leaves.size());
  out->leaves.clear();
  out->leaves.resize(plans.size());
  std::vector<bool> wanted(leaves.size(), false);
  bool any = false;
  for (const LeafPlan& p : plans) {
    if (p.source_leaf >= 0) wanted[static_cast<size_t>(p.source_leaf)] = any = true;
  }
  if (!any && rg.num_rows > 0) {
    // Only null-filled columns: one readable column still vouches for the row count.
    int best = -1;
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (leaves[i].supported &&
          (best < 0 || leaves[i].max_rep < leaves[static_cast<size_t>(best)].max_rep)) {
        best = static_cast<int>(i);
      }
    }
    if (best >= 0) wanted[static_cast<size_t>(best)] = true;
  }
  ReadBudget budget(options_.max_row_group_bytes);
  Decompressor decompressor;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!wanted[i]) continue;
    auto col = std::make_unique<DecodedColumn>();
    RETURN_IF_ERROR(ReadColumnChunk(file_, footer_start_, rg.columns[i], leaves[i],
                                    options_.verify_page_crc, &decompressor, &budget, col.get()));
    if (col->num_records != rg.num_rows) {
      return Corruption("parquet: row group " + std::to_string(row_group) + ", column " +
                        leaves[i].path + " holds " + std::to_string(col->num_records) +
                        " records, the row group " + std::to_string(rg.num_rows));
    }
    out->columns[i] = std::move(col);
  }
  for (size_t t = 0; t < plans.size(); ++t) {
    const LeafPlan& p = plans[t];
    const DecodedColumn* col =
        p.source_leaf >= 0 ? out->columns[static_cast<size_t>(p.source_leaf)].get() : nullptr;
    const SourceLeaf* src =
        p.source_leaf >= 0 ? &leaves[static_cast<size_t>(p.source_leaf)] : nullptr;
    out->leaves[t].Init(&p, col, src, &target.columns()[static_cast<size_t>(p.target_leaf)],
                        rg.num_rows);
  }
  return Status::OK();
}

Status ParquetFileReader::CopyRowGroup(int row_group, const std::vector<LeafPlan>& plans,
                                       RecordSink* sink) const {
  RowGroupCursors cursors;
  RETURN_IF_ERROR(OpenRowGroup(row_group, sink->schema(), plans, &cursors));
  const size_t n = cursors.leaves.size();
  for (int64_t row = 0; row < cursors.num_rows; ++row) {
    for (size_t t = 0; t < n; ++t) {
      LeafCursor& c = cursors.leaves[t];
      Status st = c.done() ? Corruption("parquet: a column ends before its row group")
                           : CopyRecord(c, sink->column(static_cast<int>(t)));
      if (!st.ok()) {
        sink->AbortRecord();
        return st.WithContext("row group " + std::to_string(row_group) + ", row " +
                              std::to_string(row));
      }
    }
    RETURN_IF_ERROR(sink->EndRecord());
  }
  return Status::OK();
}

Status ParquetFileReader::CopyRowGroup(int row_group, RecordSink* sink) const {
  ASSIGN_OR_RETURN(std::vector<LeafPlan> plans, PlanCopy(*schema_, sink->schema()));
  return CopyRowGroup(row_group, plans, sink);
}

Status ParquetFileReader::CopyRows(RecordSink* sink) const {
  ASSIGN_OR_RETURN(std::vector<LeafPlan> plans, PlanCopy(*schema_, sink->schema()));
  for (int g = 0; g < num_row_groups(); ++g) RETURN_IF_ERROR(CopyRowGroup(g, plans, sink));
  return Status::OK();
}

}  // namespace icestream::format::parquet
