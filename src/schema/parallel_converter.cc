// Parallel conversion of record blocks into row groups.
#include "schema/parallel_converter.h"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace icestream::schema {

namespace {

namespace pq = format::parquet;

class Runner {
 public:
  Runner(const ConvertibleSchema& schema, const pq::ParquetSchema& pschema,
         const pq::WriterOptions& woptions, const ParallelConverterOptions& options,
         const std::function<Result<bool>(ConvertBlock*)>& next,
         const std::function<Status(ConvertedBlock&&)>& place)
      : schema_(schema),
        pschema_(pschema),
        woptions_(woptions),
        options_(options),
        next_(next),
        place_(place) {}

  Status Run() {
    std::vector<std::thread> extra;
    for (int i = 1; i < options_.threads; ++i) extra.emplace_back([this] { Work(); });
    Work();
    for (auto& t : extra) t.join();
    return error_;
  }

 private:
  // One route key's builder and converter in one thread.
  struct Lane {
    std::unique_ptr<pq::RowGroupBuilder> builder;
    std::unique_ptr<RecordConverter> converter;
    std::vector<pq::RowGroupData> groups;  // finished in the current block
  };

  bool routing() const { return options_.converter.route_field_id != 0; }

  Result<Lane*> LaneFor(std::map<int64_t, Lane>& lanes, std::vector<Lane>& idle, int64_t key) {
    auto it = lanes.find(key);
    if (it != lanes.end()) return &it->second;
    if (!idle.empty() && key != INT64_MIN) {
      // A lane another key used before: its builder is empty, only its range changes
      // (new builders and codec contexts cost more than the rows of a small block).
      Lane lane = std::move(idle.back());
      idle.pop_back();
      auto [lo, hi] = options_.route_range(key);
      lane.converter->SetRoute(lo, hi);
      return &lanes.emplace(key, std::move(lane)).first->second;
    }
    Lane lane;
    ASSIGN_OR_RETURN(lane.builder, pq::RowGroupBuilder::Make(&pschema_, &woptions_, false));
    ConverterOptions co = options_.converter;
    if (key == INT64_MIN) co.route_field_id = 0;  // rows whose routed field is null
    ASSIGN_OR_RETURN(lane.converter, RecordConverter::Make(schema_, lane.builder.get(), co));
    if (routing() && key != INT64_MIN) {
      auto [lo, hi] = options_.route_range(key);
      lane.converter->SetRoute(lo, hi);
    }
    return &lanes.emplace(key, std::move(lane)).first->second;
  }

  // Whether kPadding bytes after record i are readable.
  static bool Padded(const ConvertBlock& block, size_t i) {
    std::string_view rec = block.records[i];
    return (block.readable_end != nullptr &&
            rec.data() + rec.size() + RecordConverter::kPadding <= block.readable_end) ||
           (i < block.padded.size() && block.padded[i] != 0);
  }

  static Result<bool> Convert(Lane* lane, const ConvertBlock& block, size_t i, RecordError* error) {
    std::string_view rec = block.records[i];
    return Padded(block, i) ? lane->converter->ConvertPadded(rec, error)
                            : lane->converter->Convert(rec, error);
  }

  // After record i of the block was converted (ok) or rejected: the row counted and a
  // full row group finished, or the rejection kept.
  static Status Converted(Lane* lane, ConvertedBlock* out, std::vector<pq::RowGroupData>& spares,
                          size_t i, bool ok, const RecordError& error) {
    if (!ok) {
      out->rejections.push_back({i, error});
      return Status::OK();
    }
    ++out->rows;
    if (lane->builder->full()) {
      lane->groups.push_back(Spare(spares));
      RETURN_IF_ERROR(lane->builder->Finish(&lane->groups.back()));
    }
    return Status::OK();
  }

  // Without routing every record goes to one lane: runs of padded records are converted
  // together (RecordConverter::ConvertRun), the others one by one. Windows pay for short
  // records only: stage 1's fixed cost per record is what they save, and their own per
  // record cost is about the same size. A block whose records average more than
  // kMaxRunRecordBytes goes one record at a time (bench/convert/shapes, A/B CPU with and
  // without windows: integer (62 bytes a record) 0.88, double (99) 0.97, string_array
  // (100) 0.92; struct (197) 1.02, long_string (417) 1.03).
  static constexpr size_t kMaxRunRecordBytes = 160;

  Status ConvertUnrouted(Lane* lane, const ConvertBlock& block, ConvertedBlock* out,
                         std::vector<pq::RowGroupData>& spares, RecordError* error) {
    const size_t n = block.records.size();
    size_t bytes = 0;
    for (const auto& r : block.records) bytes += r.size();
    const bool runs = n > 1 && bytes <= n * kMaxRunRecordBytes;
    size_t i = 0;
    while (i < n) {
      if (!runs || !Padded(block, i)) {
        ASSIGN_OR_RETURN(bool ok, Convert(lane, block, i, error));
        RETURN_IF_ERROR(Converted(lane, out, spares, i, ok, *error));
        ++i;
        continue;
      }
      size_t j = i + 1;
      while (j < n && Padded(block, j)) ++j;
      const size_t first = i;
      RETURN_IF_ERROR(lane->converter->ConvertRun(
          &block.records[first], j - first, error,
          [&](size_t k, bool ok) { return Converted(lane, out, spares, first + k, ok, *error); }));
      i = j;
    }
    return Status::OK();
  }

  void Fail(const Status& st) {
    std::lock_guard lock(mu_);
    if (error_.ok()) error_ = st;
    stop_ = true;
    cv_.notify_all();
  }

  void Work() {
    Status st = WorkLoop();
    if (!st.ok()) Fail(st);
  }

  Status WorkLoop() {
    std::map<int64_t, Lane> lanes;
    std::vector<Lane> idle;                // routed lanes no row of the last block went to
    std::vector<pq::RowGroupData> spares;  // placed row groups' buffers (Recycle)
    int64_t key = 0;  // the route of the previous row: consecutive rows mostly share it
    ConvertBlock block;
    RecordError error;
    for (;;) {
      {
        std::lock_guard lock(next_mu_);
        {
          std::lock_guard state(mu_);
          if (stop_) return Status::OK();
        }
        ASSIGN_OR_RETURN(bool more, next_(&block));
        if (!more) return Flush(lanes);
      }
      ConvertedBlock out;
      out.seq = block.seq;
      out.records = block.records.size();
      if (!routing()) {
        ASSIGN_OR_RETURN(Lane * lane, LaneFor(lanes, idle, 0));
        RETURN_IF_ERROR(ConvertUnrouted(lane, block, &out, spares, &error));
      }
      for (size_t i = 0; routing() && i < block.records.size(); ++i) {
        ASSIGN_OR_RETURN(Lane * lane, LaneFor(lanes, idle, key));
        ASSIGN_OR_RETURN(bool ok, Convert(lane, block, i, &error));
        if (!ok && error.code == RecordErrorCode::kOutsideRoute) {
          int64_t k = error.route_value ? options_.route_key(*error.route_value) : INT64_MIN;
          ASSIGN_OR_RETURN(lane, LaneFor(lanes, idle, k));
          ASSIGN_OR_RETURN(ok, Convert(lane, block, i, &error));
          if (!ok && error.code == RecordErrorCode::kOutsideRoute) {
            return Internal("a record's route key does not cover its own value");
          }
          if (k != INT64_MIN) key = k;
        }
        if (ok) {
          ++out.rows;
          if (lane->builder->full()) {
            lane->groups.push_back(Spare(spares));
            RETURN_IF_ERROR(lane->builder->Finish(&lane->groups.back()));
          }
        } else {
          out.rejections.push_back({i, error});
        }
      }
      for (auto it = lanes.begin(); it != lanes.end();) {
        Lane& lane = it->second;
        if (options_.carry_across_blocks && lane.builder->num_rows() > 0) {
          // The open row group goes on with the next block's rows.
          auto& dst = out.row_groups[it->first];
          for (auto& g : lane.groups) dst.push_back(std::move(g));
          lane.groups.clear();
          ++it;
          continue;
        }
        if (lane.builder->num_rows() > 0) {
          lane.groups.push_back(Spare(spares));
          RETURN_IF_ERROR(lane.builder->Finish(&lane.groups.back()));
        }
        if (lane.groups.empty()) {
          // Unused in this block: keep a few for the next keys, free the rest.
          if (routing() && it->first != INT64_MIN && idle.size() < 4)
            idle.push_back(std::move(lane));
          it = lanes.erase(it);
          continue;
        }
        auto& dst = out.row_groups[it->first];
        for (auto& g : lane.groups) dst.push_back(std::move(g));
        lane.groups.clear();
        ++it;
      }
      out.owner = std::move(block.owner);
      block.records.clear();
      block.padded.clear();
      // Wait for this block's turn, then place it.
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || next_seq_ == out.seq; });
      if (stop_) return Status::OK();
      RETURN_IF_ERROR(place_(std::move(out)));
      ++next_seq_;
      cv_.notify_all();
      lock.unlock();
      Recycle(&out, spares);
    }
  }

  // A row group's pieces are its column chunks' buffers (tens of MB together), which
  // RowGroupBuilder::Finish hands back to the builders: fresh ones per row group were a
  // page fault per 4 KiB on every group (28% of a 1-thread convert of long strings was
  // the kernel's). `place` normally leaves them empty with their capacity
  // (FileWriter::AppendRowGroup clears them); each thread keeps a few for its next groups.
  static pq::RowGroupData Spare(std::vector<pq::RowGroupData>& spares) {
    if (spares.empty()) return {};
    pq::RowGroupData g = std::move(spares.back());
    spares.pop_back();
    return g;
  }
  static void Recycle(ConvertedBlock* done, std::vector<pq::RowGroupData>& spares) {
    for (auto& [key, groups] : done->row_groups) {
      for (auto& g : groups) {
        if (spares.size() >= kMaxSpares || g.pieces.empty()) continue;
        g.num_rows = 0;
        for (auto& piece : g.pieces) piece.clear();
        g.chunks.clear();
        g.stats.clear();
        spares.push_back(std::move(g));
      }
    }
  }
  static constexpr size_t kMaxSpares = 2;

  // carry_across_blocks: the thread's open row groups, placed as block -1.
  Status Flush(std::map<int64_t, Lane>& lanes) {
    if (!options_.carry_across_blocks) return Status::OK();
    ConvertedBlock out;
    out.seq = -1;
    for (auto& [k, lane] : lanes) {
      if (lane.builder->num_rows() == 0) continue;
      out.row_groups[k].emplace_back();
      RETURN_IF_ERROR(lane.builder->Finish(&out.row_groups[k].back()));
    }
    if (out.row_groups.empty()) return Status::OK();
    std::lock_guard lock(mu_);
    if (stop_) return Status::OK();
    return place_(std::move(out));
  }

  const ConvertibleSchema& schema_;
  const pq::ParquetSchema& pschema_;
  const pq::WriterOptions& woptions_;
  const ParallelConverterOptions& options_;
  const std::function<Result<bool>(ConvertBlock*)>& next_;
  const std::function<Status(ConvertedBlock&&)>& place_;
  std::mutex next_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t next_seq_ = 0;
  bool stop_ = false;
  Status error_;
};

}  // namespace

Status ParallelConverter::Run(const ConvertibleSchema& schema,
                              const pq::ParquetSchema& parquet_schema,
                              const pq::WriterOptions& writer_options,
                              const ParallelConverterOptions& options,
                              const std::function<Result<bool>(ConvertBlock*)>& next,
                              const std::function<Status(ConvertedBlock&&)>& place) {
  if (options.converter.route_field_id != 0 && (!options.route_key || !options.route_range)) {
    return InvalidArgument("routing needs route_key and route_range");
  }
  Runner r(schema, parquet_schema, writer_options, options, next, place);
  return r.Run();
}

}  // namespace icestream::schema
