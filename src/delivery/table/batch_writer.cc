// A table channel's batch → data files and DLQ records.
#include "delivery/table/batch_writer.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

#include "format/parquet/file_writer.h"
#include "format/parquet/output_stream.h"

namespace icestream::delivery::table {

namespace {

namespace pq = format::parquet;

constexpr int64_t kHourMicros = 3600LL * 1000 * 1000;

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

Result<std::unique_ptr<BatchWriter>> BatchWriter::Make(const TableLayout* layout, BatchWriterOptions options) {
  std::unique_ptr<BatchWriter> w(new BatchWriter(layout, std::move(options)));
  ASSIGN_OR_RETURN(auto ps, pq::ParquetSchema::Make(layout->schema.schema));
  w->pschema_ = std::make_unique<pq::ParquetSchema>(std::move(ps));
  return w;
}

Status BatchWriter::Run(RecordSource* source, const Decoder& decode,
                        const FilePlacer& place_file, BatchOutput* out) {
  *out = BatchOutput{};
  DeliveryCounts& counts = out->counts;
  struct OpenFile {
    std::string bytes;
    std::unique_ptr<pq::StringOutputStream> stream;
    std::unique_ptr<pq::FileWriter> writer;
  };
  std::map<int64_t, OpenFile> open;  // by partition hour; map nodes do not move

  auto cut = [&](int64_t hour) -> Status {
    auto it = open.find(hour);
    ASSIGN_OR_RETURN(pq::FileMetrics m, it->second.writer->Close());
    counts.bytes_out += it->second.bytes.size();
    ASSIGN_OR_RETURN(iceberg::DataFile f, place_file(hour, std::move(it->second.bytes), m));
    out->files.push_back(std::move(f));
    open.erase(it);
    return Status::OK();
  };

  int64_t seq = 0;
  auto next = [&](schema::ConvertBlock* b) -> Result<bool> {
    auto owner = std::make_shared<BlockOwner>();
    b->records.clear();
    b->readable_end = nullptr;
    size_t bytes = 0;
    while (bytes < options_.block_bytes && owner->records_in < options_.block_records) {
      RecordChunk chunk;
      ASSIGN_OR_RETURN(bool more, source->Next(&chunk));
      if (!more) break;
      owner->chunks.push_back(std::move(chunk));
      const RecordChunk& c = owner->chunks.back();
      for (const auto& rec : c.records) {
        RETURN_IF_ERROR(decode(rec, c.range, owner.get(), b));
        bytes += rec.data.size();
      }
    }
    if (owner->records_in == 0) return false;
    b->seq = seq++;
    b->owner = std::move(owner);
    return true;
  };

  auto place = [&](schema::ConvertedBlock&& done) -> Status {
    if (auto* owner = static_cast<BlockOwner*>(done.owner.get())) {
      counts.records_in += owner->records_in;
      counts.bytes_in += owner->bytes_in;
      for (auto& r : owner->rejects) out->rejects.push_back(std::move(r));
      uint64_t converted_bytes = 0;
      for (const auto& o : owner->origins) converted_bytes += o.bytes;
      for (const auto& rj : done.rejections) {
        const RecordOrigin& o = owner->origins[rj.index];
        converted_bytes -= o.bytes;
        // Undecodable JSON is what AWS calls a DESERIALIZATION_ERROR (as in S3 channels);
        // the converter's other codes name what did not fit the schema.
        std::string code = rj.error.code == schema::RecordErrorCode::kMalformedJson
                               ? "DESERIALIZATION_ERROR"
                               : std::string(schema::RecordErrorCodeName(rj.error.code));
        out->rejects.push_back({o.range, o.offset, o.sub_sequence, o.arrival_ms, std::move(code), rj.error.message});
      }
      counts.bytes_processed += converted_bytes;
    }
    counts.delivered += static_cast<uint64_t>(done.rows);
    for (auto& [hour, groups] : done.row_groups) {
      auto it = open.find(hour);
      if (it == open.end()) {
        it = open.emplace(hour, OpenFile{}).first;
        it->second.stream = std::make_unique<pq::StringOutputStream>(&it->second.bytes);
        ASSIGN_OR_RETURN(it->second.writer,
                         pq::FileWriter::Make(layout_->schema.schema, it->second.stream.get(), options_.writer));
      }
      for (auto& g : groups) RETURN_IF_ERROR(it->second.writer->AppendRowGroup(&g));
      if (static_cast<int64_t>(it->second.bytes.size()) >= options_.target_file_size_bytes) RETURN_IF_ERROR(cut(hour));
    }
    // Bounded memory: the largest open file is cut early when they add up to too much.
    for (;;) {
      int64_t total = 0, largest = -1, largest_hour = 0;
      for (const auto& [h, f] : open) {
        auto size = static_cast<int64_t>(f.bytes.size());
        total += size;
        if (size > largest) {
          largest = size;
          largest_hour = h;
        }
      }
      if (total <= options_.max_buffered_bytes || open.empty()) break;
      RETURN_IF_ERROR(cut(largest_hour));
    }
    return Status::OK();
  };

  schema::ParallelConverterOptions po;
  po.threads = std::max(1, options_.convert_threads);
  po.carry_across_blocks = true;  // row order inside a file does not matter to a table
  po.converter.route_field_id = layout_->partition_source_id;
  po.route_key = [](int64_t micros) { return FloorDiv(micros, kHourMicros); };
  po.route_range = [](int64_t hour) { return std::make_pair(hour * kHourMicros, (hour + 1) * kHourMicros); };
  RETURN_IF_ERROR(schema::ParallelConverter::Run(layout_->schema, *pschema_, options_.writer, po, next, place));
  while (!open.empty()) RETURN_IF_ERROR(cut(open.begin()->first));
  std::sort(out->rejects.begin(), out->rejects.end(), [](const Reject& a, const Reject& b) {
    return std::tie(a.range, a.offset, a.sub_sequence) < std::tie(b.range, b.offset, b.sub_sequence);
  });
  counts.failed = out->rejects.size();
  return Status::OK();
}

}  // namespace icestream::delivery::table
