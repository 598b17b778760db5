// Parquet file writer: places row groups, writes the footer, reports file metrics.
#include "format/parquet/file_writer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/bytes.h"
#include "iceberg/schema/schema_json.h"

namespace icestream::format::parquet {

Result<std::unique_ptr<FileWriter>> FileWriter::Make(const iceberg::Schema& schema,
                                                     OutputStream* sink, WriterOptions options) {
  if (options.threads < 1 || options.threads > 2) return InvalidArgument("threads must be 1 or 2");
  if (options.page_size <= 0 || options.row_group_size <= 0 || options.max_page_levels <= 0 ||
      options.max_row_group_rows <= 0) {
    return InvalidArgument("page and row-group sizes must be positive");
  }
  ASSIGN_OR_RETURN(ParquetSchema ps, ParquetSchema::Make(schema));
  std::unique_ptr<FileWriter> w(new FileWriter(std::move(ps), sink, std::move(options)));
  ASSIGN_OR_RETURN(w->builder_,
                   RowGroupBuilder::Make(&w->schema_, &w->options_, w->options_.threads == 2));
  return w;
}

FileWriter::FileWriter(ParquetSchema schema, OutputStream* sink, WriterOptions options)
    : schema_(std::move(schema)), sink_(sink), options_(std::move(options)) {
  for (const auto& c : schema_.columns()) {
    file_stats_.emplace_back(&c);
    ColumnMetrics m;
    m.field_id = c.field_id;
    metrics_.push_back(m);
  }
  nan_unknown_.assign(schema_.columns().size(), false);
  footer_.schema = schema_.elements();
  footer_.created_by = options_.created_by;
  footer_.num_leaf_columns = static_cast<int32_t>(schema_.columns().size());
  footer_.key_value_metadata = options_.key_value_metadata;
  footer_.key_value_metadata.push_back(
      {"iceberg.schema", iceberg::SchemaToJson(schema_.iceberg_schema())});
}

FileWriter::~FileWriter() = default;

Result<std::unique_ptr<RowGroupBuilder>> FileWriter::NewRowGroupBuilder() const {
  return RowGroupBuilder::Make(&schema_, &options_, false);
}

Status FileWriter::EndRecord() {
  if (!error_.ok()) return error_;
  error_ = builder_->EndRecord();
  if (error_.ok() && builder_->full()) error_ = FlushOwnRowGroup();
  return error_;
}

void FileWriter::AbortRecord() { builder_->AbortRecord(); }

Status FileWriter::FlushOwnRowGroup() {
  if (builder_->num_rows() == 0) return Status::OK();
  RETURN_IF_ERROR(builder_->Finish(&scratch_));
  return AppendRowGroup(&scratch_);
}

Status FileWriter::AppendRowGroup(RowGroupData* data) {
  if (closed_) return FailedPrecondition("Parquet writer already closed");
  if (data != &scratch_ && builder_->num_rows() > 0) {
    error_ = FlushOwnRowGroup();
  }
  RETURN_IF_ERROR(error_);
  if (data->num_rows == 0) return Status::OK();
  if (!started_) {
    error_ = sink_->Write("PAR1");
    RETURN_IF_ERROR(error_);
    started_ = true;
  }
  RowGroup rg;
  rg.num_rows = data->num_rows;
  rg.ordinal = static_cast<int16_t>(footer_.row_groups.size());
  const int64_t base = sink_->Tell();
  rg.file_offset = base;
  for (size_t i = 0; i < data->chunks.size(); ++i) {
    ColumnChunk& chunk = data->chunks[i];
    ColumnMetaData& m = chunk.meta_data;
    // Offsets were relative to the row group's first byte.
    m.data_page_offset += base;
    if (m.dictionary_page_offset) *m.dictionary_page_offset += base;
    rg.total_byte_size += m.total_uncompressed_size;
    rg.total_compressed_size += m.total_compressed_size;
    ColumnMetrics& cm = metrics_[i];
    cm.column_size += m.total_compressed_size;
    cm.value_count = cm.value_count.value_or(0) + m.num_values;
    cm.null_count = cm.null_count.value_or(0) + m.statistics->null_count.value_or(0);
    file_stats_[i].Merge(data->stats[i]);
    rg.columns.push_back(std::move(chunk));
  }
  for (auto& piece : data->pieces) {
    if (piece.empty()) continue;
    error_ = sink_->Write(piece);
    RETURN_IF_ERROR(error_);
    piece.clear();  // the capacity stays, for the builder that fills this RowGroupData next
  }
  split_offsets_.push_back(rg.file_offset);
  footer_.num_rows += rg.num_rows;
  total_rows_ += rg.num_rows;
  footer_.row_groups.push_back(std::move(rg));
  data->num_rows = 0;
  data->chunks.clear();
  data->stats.clear();
  return Status::OK();
}

namespace {

size_t PlainStatSize(const ColumnDescriptor& c) {
  switch (c.physical) {
    case PhysicalType::kBoolean:
      return 1;
    case PhysicalType::kInt32:
    case PhysicalType::kFloat:
      return 4;
    case PhysicalType::kInt64:
    case PhysicalType::kDouble:
      return 8;
    case PhysicalType::kFixedLenByteArray:
      return static_cast<size_t>(c.type_length);
    default:
      return 0;  // any length
  }
}

bool IsNan(const ColumnDescriptor& c, const std::string& v) {
  if (c.physical == PhysicalType::kFloat) {
    float f;
    std::memcpy(&f, v.data(), 4);
    return std::isnan(f);
  }
  if (c.physical == PhysicalType::kDouble) {
    double d;
    std::memcpy(&d, v.data(), 8);
    return std::isnan(d);
  }
  return false;
}

}  // namespace

Status FileWriter::PrepareAsIs(const ParquetFileReader& reader, int row_group,
                               RowGroupData* out) const {
  const FileMetaData& in = reader.metadata();
  if (in.schema != footer_.schema) {
    return FailedPrecondition("the file's schema is not the writer's");
  }
  if (row_group < 0 || row_group >= reader.num_row_groups()) {
    return InvalidArgument("no row group " + std::to_string(row_group));
  }
  const RowGroup& rg = in.row_groups[static_cast<size_t>(row_group)];
  const auto& columns = schema_.columns();
  if (rg.columns.size() != columns.size()) {
    return FailedPrecondition("the row group's chunks are not the schema's leaves");
  }
  // The chunks must be back to back, in leaf order: one range of the file is copied.
  auto chunk_start = [](const ColumnMetaData& m) {
    return m.dictionary_page_offset ? std::min(*m.dictionary_page_offset, m.data_page_offset)
                                    : m.data_page_offset;
  };
  const int64_t start = rg.columns.empty() ? 0 : chunk_start(rg.columns[0].meta_data);
  int64_t end = start;
  out->num_rows = rg.num_rows;
  out->chunks.clear();
  out->stats.clear();
  for (size_t i = 0; i < columns.size(); ++i) {
    const ColumnChunk& chunk = rg.columns[i];
    const ColumnMetaData& m = chunk.meta_data;
    const ColumnDescriptor& c = columns[i];
    if (chunk.file_path || chunk_start(m) != end || m.total_compressed_size < 0 ||
        m.path_in_schema != c.path || m.type != c.physical) {
      return FailedPrecondition("the row group's chunks are not back to back in leaf order");
    }
    end += m.total_compressed_size;
    // Bounds: exact minimum and maximum wherever the chunk holds a value (a truncated
    // string bound is still a bound, and is what this writer would truncate to).
    if (!m.statistics || !m.statistics->null_count) {
      return FailedPrecondition("a chunk has no null count");
    }
    const Statistics& st = *m.statistics;
    StatsAccumulator acc(&c);
    if (*st.null_count < m.num_values || st.min_value || st.max_value) {
      const size_t width = PlainStatSize(c);
      if (!st.min_value || !st.max_value ||
          (width != 0 && (st.min_value->size() != width || st.max_value->size() != width)) ||
          IsNan(c, *st.min_value) || IsNan(c, *st.max_value)) {
        // All-NaN float chunks have no bounds either: their rows are decoded.
        return FailedPrecondition("a chunk has no usable minimum and maximum");
      }
      acc.UpdatePlain(*st.min_value);
      acc.UpdatePlain(*st.max_value);
    }
    ColumnChunk copy = chunk;
    copy.file_offset = 0;
    copy.meta_data.data_page_offset -= start;
    if (copy.meta_data.dictionary_page_offset) *copy.meta_data.dictionary_page_offset -= start;
    out->chunks.push_back(std::move(copy));
    out->stats.push_back(std::move(acc));
  }
  const std::string_view file = reader.file();
  if (end > static_cast<int64_t>(file.size()) || start < 4) {
    return FailedPrecondition("the row group's chunks are outside the file");
  }
  out->pieces.resize(1);
  out->pieces[0].assign(file.substr(static_cast<size_t>(start), static_cast<size_t>(end - start)));
  return Status::OK();
}

Status FileWriter::AppendFileAsIs(const ParquetFileReader& reader,
                                  const std::map<int32_t, int64_t>& nan_counts) {
  if (closed_) return FailedPrecondition("Parquet writer already closed");
  std::vector<RowGroupData> groups(static_cast<size_t>(reader.num_row_groups()));
  for (int g = 0; g < reader.num_row_groups(); ++g) {
    RETURN_IF_ERROR(PrepareAsIs(reader, g, &groups[static_cast<size_t>(g)]));
  }
  for (auto& g : groups) RETURN_IF_ERROR(AppendRowGroup(&g));
  const auto& columns = schema_.columns();
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].physical != PhysicalType::kFloat &&
        columns[i].physical != PhysicalType::kDouble) {
      continue;
    }
    auto it = nan_counts.find(columns[i].field_id);
    if (it != nan_counts.end()) {
      file_stats_[i].AddNanCount(it->second);
    } else if (reader.num_rows() > 0) {
      nan_unknown_[i] = true;
    }
  }
  return Status::OK();
}

Result<FileMetrics> FileWriter::Close() {
  if (closed_) return FailedPrecondition("Parquet writer already closed");
  RETURN_IF_ERROR(error_);
  RETURN_IF_ERROR(FlushOwnRowGroup());
  closed_ = true;
  if (!started_) {
    RETURN_IF_ERROR(sink_->Write("PAR1"));
    started_ = true;
  }
  std::string footer;
  SerializeFileMetaData(footer_, &footer);
  AppendFixed32(&footer, static_cast<uint32_t>(footer.size()));
  footer.append("PAR1");
  RETURN_IF_ERROR(sink_->Write(footer));
  FileMetrics fm;
  fm.record_count = total_rows_;
  fm.file_size = sink_->Tell();
  RETURN_IF_ERROR(sink_->Close());
  fm.split_offsets = split_offsets_;
  for (size_t i = 0; i < metrics_.size(); ++i) {
    ColumnMetrics m = metrics_[i];
    const ColumnDescriptor& c = schema_.columns()[i];
    if (c.inside_repeated) {
      m.value_count.reset();
      m.null_count.reset();
    } else {
      m.value_count = m.value_count.value_or(0);
      m.null_count = m.null_count.value_or(0);
      if ((c.physical == PhysicalType::kFloat || c.physical == PhysicalType::kDouble) &&
          !nan_unknown_[i]) {
        m.nan_count = file_stats_[i].nan_count();
      }
      m.lower_bound = file_stats_[i].IcebergLower();
      m.upper_bound = file_stats_[i].IcebergUpper();
    }
    fm.columns.push_back(std::move(m));
  }
  return fm;
}

}  // namespace icestream::format::parquet
