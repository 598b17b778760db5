// Row-group assembly: page cuts at record boundaries, chunk finishing.
#include "format/parquet/row_group_builder.h"

namespace icestream::format::parquet {

Result<std::unique_ptr<RowGroupBuilder>> RowGroupBuilder::Make(const ParquetSchema* schema,
                                                               const WriterOptions* options,
                                                               bool background_pages) {
  std::unique_ptr<RowGroupBuilder> b(new RowGroupBuilder(schema, options));
  ASSIGN_OR_RETURN(b->compressor_, MakeCompressor(options->codec, options->compression_level));
  if (background_pages) {
    ASSIGN_OR_RETURN(b->worker_compressor_,
                     MakeCompressor(options->codec, options->compression_level));
    b->worker_ = std::make_unique<BackgroundWorker>();
  }
  return b;
}

RowGroupBuilder::RowGroupBuilder(const ParquetSchema* schema, const WriterOptions* options)
    : schema_(schema), options_(options) {
  for (const auto& c : schema_->columns())
    columns_.push_back(std::make_unique<ColumnWriter>(&c, options_));
}

RowGroupBuilder::~RowGroupBuilder() {
  if (worker_) (void)worker_->Drain();
}

Status RowGroupBuilder::CutPage(ColumnWriter& column) {
  bytes_ += column.EstimatedPageBytes();
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

Status RowGroupBuilder::EndRecord() {
  if (!error_.ok()) return error_;
  ++rows_;
  // Page sizes are targets: looking every 8 records is close enough and keeps the
  // per-record cost to the marks. After the first 1,024 rows and every 4,096 rows, also
  // give up early on dictionaries that do not pay.
  if ((rows_ & 7) == 0) {
    const bool first_check = rows_ == 1024;
    const bool check_dictionaries = (rows_ & 4095) == 0 || first_check;
    for (auto& c : columns_) {
      c->FlushDictionary();  // eight records' values a batch (their cache misses overlap)
      if (c->EstimatedPageBytes() >= options_->page_size ||
          c->num_levels() >= options_->max_page_levels || c->DictionaryFull() ||
          c->DictionaryWillOverflow() ||
          (check_dictionaries && c->DictionaryNotPaying(first_check))) {
        error_ = CutPage(*c);
        if (!error_.ok()) return error_;
      }
    }
  }
  for (auto& c : columns_) c->Mark();
  return Status::OK();
}

void RowGroupBuilder::AbortRecord() {
  for (auto& c : columns_) c->Rollback();
}

Status RowGroupBuilder::Finish(RowGroupData* out) {
  RETURN_IF_ERROR(error_);
  for (auto& c : columns_) {
    RETURN_IF_ERROR(CutPage(*c));
    c->Mark();
  }
  if (worker_) RETURN_IF_ERROR(worker_->Drain());
  out->num_rows = rows_;
  out->chunks.clear();
  out->stats.clear();
  out->pieces.resize(2 * columns_.size());
  size_t offset = 0;
  for (size_t i = 0; i < columns_.size(); ++i) {
    ColumnWriter& c = *columns_[i];
    std::string& dict_page = out->pieces[2 * i];
    std::string& data = out->pieces[2 * i + 1];
    ColumnChunk chunk;
    out->stats.emplace_back(&c.descriptor());
    RETURN_IF_ERROR(c.builder().Finish(c.dictionary(), compressor_.get(),
                                       static_cast<int64_t>(offset), &dict_page, &chunk,
                                       &out->stats.back()));
    // The chunk's pages leave the builder without a copy; the builder goes on with
    // the buffer this RowGroupData held before (emptied, its capacity kept).
    data.clear();
    c.builder().SwapData(&data);
    offset += dict_page.size() + data.size();
    c.ResetChunk();
    out->chunks.push_back(std::move(chunk));
  }
  rows_ = 0;
  bytes_ = 0;
  return Status::OK();
}

}  // namespace icestream::format::parquet
