// Parquet file writer: row groups, footer, file metrics.
#include "format/parquet/file_writer.h"

#include "common/bytes.h"
#include "iceberg/schema_json.h"

namespace icestream::format::parquet {

Result<std::unique_ptr<FileWriter>> FileWriter::Make(const iceberg::Schema& schema,
                                                     OutputStream* sink, WriterOptions options) {
  if (options.threads < 1 || options.threads > 2) return InvalidArgument("threads must be 1 or 2");
  if (options.page_size <= 0 || options.row_group_size <= 0) {
    return InvalidArgument("page and row-group sizes must be positive");
  }
  ASSIGN_OR_RETURN(ParquetSchema ps, ParquetSchema::Make(schema));
  std::unique_ptr<FileWriter> w(new FileWriter(std::move(ps), sink, std::move(options)));
  ASSIGN_OR_RETURN(w->compressor_, MakeCompressor(w->options_.codec, w->options_.compression_level));
  if (w->options_.threads == 2) {
    ASSIGN_OR_RETURN(w->worker_compressor_,
                     MakeCompressor(w->options_.codec, w->options_.compression_level));
    w->worker_ = std::make_unique<BackgroundWorker>();
  }
  return w;
}

FileWriter::FileWriter(ParquetSchema schema, OutputStream* sink, WriterOptions options)
    : schema_(std::move(schema)), sink_(sink), options_(std::move(options)) {
  for (const auto& c : schema_.columns()) {
    columns_.push_back(std::make_unique<ColumnWriter>(&c, &options_));
    file_stats_.emplace_back(&c);
    ColumnMetrics m;
    m.field_id = c.field_id;
    metrics_.push_back(m);
  }
  footer_.schema = schema_.elements();
  footer_.created_by = options_.created_by;
  footer_.num_leaf_columns = static_cast<int32_t>(columns_.size());
  footer_.key_value_metadata = options_.key_value_metadata;
  footer_.key_value_metadata.push_back({"iceberg.schema", iceberg::SchemaToJson(schema_.iceberg_schema())});
}

FileWriter::~FileWriter() {
  if (worker_) (void)worker_->Drain();
}

Status FileWriter::CutPage(ColumnWriter& column) {
  group_bytes_ += column.EstimatedPageBytes();
  PageData page = column.CutPage();
  ChunkBuilder* builder = &column.builder();
  if (worker_) {
    Compressor* compressor = worker_compressor_.get();
    worker_->Submit([builder, compressor, p = std::move(page)]() mutable {
      return builder->AddPage(std::move(p), compressor);
    });
    return Status::OK();
  }
  return builder->AddPage(std::move(page), compressor_.get());
}

Status FileWriter::EndRecord() {
  if (!error_.ok()) return error_;
  ++rows_in_group_;
  // Every few thousand rows, also give up early on dictionaries that do not pay.
  const bool check_dictionaries = (rows_in_group_ & 4095) == 0;
  for (auto& c : columns_) {
    if (c->EstimatedPageBytes() >= options_.page_size || c->num_levels() >= options_.max_page_levels ||
        (check_dictionaries && c->DictionaryNotPaying())) {
      error_ = CutPage(*c);
      if (!error_.ok()) return error_;
    }
    c->Mark();
  }
  if (group_bytes_ >= options_.row_group_size || rows_in_group_ >= options_.max_row_group_rows) {
    error_ = FlushRowGroup();
  }
  return error_;
}

void FileWriter::AbortRecord() {
  for (auto& c : columns_) c->Rollback();
}

Status FileWriter::FlushRowGroup() {
  if (rows_in_group_ == 0) return Status::OK();
  for (auto& c : columns_) {
    RETURN_IF_ERROR(CutPage(*c));
    c->Mark();
  }
  if (worker_) RETURN_IF_ERROR(worker_->Drain());
  if (!started_) {
    RETURN_IF_ERROR(sink_->Write("PAR1"));
    started_ = true;
  }
  RowGroup rg;
  rg.num_rows = rows_in_group_;
  rg.ordinal = static_cast<int16_t>(footer_.row_groups.size());
  rg.file_offset = sink_->Tell();
  std::string dict_page;
  for (size_t i = 0; i < columns_.size(); ++i) {
    ColumnWriter& c = *columns_[i];
    ColumnChunk chunk;
    RETURN_IF_ERROR(c.builder().Finish(c.dictionary(), compressor_.get(), sink_->Tell(), &dict_page,
                                       &chunk, &file_stats_[i]));
    RETURN_IF_ERROR(sink_->Write(dict_page));
    RETURN_IF_ERROR(sink_->Write(c.builder().data()));
    c.builder().ClearData();
    c.ResetChunk();
    const ColumnMetaData& m = chunk.meta_data;
    rg.total_byte_size += m.total_uncompressed_size;
    rg.total_compressed_size += m.total_compressed_size;
    ColumnMetrics& cm = metrics_[i];
    cm.column_size += m.total_compressed_size;
    cm.value_count = cm.value_count.value_or(0) + m.num_values;
    cm.null_count = cm.null_count.value_or(0) + m.statistics->null_count.value_or(0);
    rg.columns.push_back(std::move(chunk));
  }
  split_offsets_.push_back(rg.file_offset);
  footer_.num_rows += rows_in_group_;
  footer_.row_groups.push_back(std::move(rg));
  total_rows_ += rows_in_group_;
  rows_in_group_ = 0;
  group_bytes_ = 0;
  return Status::OK();
}

Result<FileMetrics> FileWriter::Close() {
  if (closed_) return FailedPrecondition("Parquet writer already closed");
  closed_ = true;
  if (!error_.ok()) return error_;
  RETURN_IF_ERROR(FlushRowGroup());
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
      if (c.physical == PhysicalType::kFloat || c.physical == PhysicalType::kDouble) {
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
