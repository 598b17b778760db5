// Parallel conversion of record blocks into row groups.
#include "schema/parallel_converter.h"

#include <chrono>
#include <condition_variable>
#include <deque>
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

  Status Run(ParallelConverterTimes* times) {
    std::vector<std::thread> extra;
    if (options_.prefetch_blocks > 0) extra.emplace_back([this] { Prefetch(); });
    for (int i = 1; i < options_.threads; ++i) extra.emplace_back([this] { Work(); });
    Work();
    for (auto& t : extra) t.join();
    if (times) {
      *times = times_;
      Clock::time_point last = Clock::time_point::min();
      for (auto e : ends_) last = std::max(last, e);
      for (auto e : ends_) times->idle_end += Ms(last - e);
    }
    return error_;
  }

 private:
  // One route key's builder and converter in one thread.
  struct Lane {
    std::unique_ptr<pq::RowGroupBuilder> builder;
    std::unique_ptr<RecordConverter> converter;
    std::vector<pq::RowGroupData> groups;  // finished in the current block
  };

  using Clock = std::chrono::steady_clock;
  static double Ms(Clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
  }

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
  // together (RecordConverter::ConvertRun: one stage 1 pass per window of records), the
  // others one by one.
  Status ConvertUnrouted(Lane* lane, const ConvertBlock& block, ConvertedBlock* out,
                         std::vector<pq::RowGroupData>& spares, RecordError* error) {
    const size_t n = block.records.size();
    const bool runs = n > 1;
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
    {
      std::lock_guard lock(mu_);
      if (error_.ok()) error_ = st;
      stop_ = true;
      cv_.notify_all();
    }
    std::lock_guard lock(q_mu_);
    q_stop_ = true;
    q_cv_.notify_all();
  }

  void Work() {
    ParallelConverterTimes t;
    Status st = WorkLoop(&t);
    if (!st.ok()) Fail(st);
    std::lock_guard lock(mu_);
    times_.wait_next += t.wait_next;
    times_.next += t.next;
    times_.convert += t.convert;
    times_.wait_turn += t.wait_turn;
    times_.place += t.place;
    times_.flush += t.flush;
    ends_.push_back(Clock::now());
  }

  bool stopped() {
    std::lock_guard lock(mu_);
    return stop_;
  }

  // The next block to convert: made here under next_mu_, or taken from the prefetcher's
  // queue. False at the end (or once stopped).
  Result<bool> NextBlock(ConvertBlock* block, ParallelConverterTimes* times) {
    const auto t0 = Clock::now();
    if (options_.prefetch_blocks > 0) {
      std::unique_lock lock(q_mu_);
      q_cv_.wait(lock, [&] { return q_stop_ || !ready_.empty() || produced_all_; });
      times->wait_next += Ms(Clock::now() - t0);
      if (q_stop_ || ready_.empty()) return false;
      // The emptied block goes back to the prefetcher with its vectors' capacity.
      if (block->records.capacity() > 0 &&
          free_.size() <= static_cast<size_t>(options_.prefetch_blocks)) {
        block->records.clear();
        block->padded.clear();
        block->readable_end = nullptr;
        block->owner.reset();
        free_.push_back(std::move(*block));
      }
      *block = std::move(ready_.front());
      ready_.pop_front();
      q_cv_.notify_all();  // room in the queue for the prefetcher
      return true;
    }
    std::lock_guard lock(next_mu_);
    const auto t1 = Clock::now();
    times->wait_next += Ms(t1 - t0);
    if (stopped()) return false;
    Result<bool> more = next_(block);
    times->next += Ms(Clock::now() - t1);
    return more;
  }

  // The prefetcher (prefetch_blocks > 0): makes blocks ahead of the converters. Its queue
  // has a lock of its own: `place` (under mu_) may take a while.
  void Prefetch() {
    double next_ms = 0;
    for (;;) {
      ConvertBlock block;
      {
        std::unique_lock lock(q_mu_);
        q_cv_.wait(lock, [&] {
          return q_stop_ || ready_.size() < static_cast<size_t>(options_.prefetch_blocks);
        });
        if (q_stop_) break;
        if (!free_.empty()) {
          block = std::move(free_.back());
          free_.pop_back();
        }
      }
      const auto t0 = Clock::now();
      Result<bool> more = next_(&block);
      next_ms += Ms(Clock::now() - t0);
      if (!more.ok()) Fail(more.status());
      std::lock_guard lock(q_mu_);
      if (!more.ok() || !*more) {
        produced_all_ = true;
        q_cv_.notify_all();
        break;
      }
      ready_.push_back(std::move(block));
      q_cv_.notify_all();
    }
    std::lock_guard lock(mu_);
    times_.next += next_ms;
  }

  Status WorkLoop(ParallelConverterTimes* times) {
    std::map<int64_t, Lane> lanes;
    std::vector<Lane> idle;                // routed lanes no row of the last block went to
    std::vector<pq::RowGroupData> spares;  // placed row groups' buffers (Recycle)
    int64_t key = 0;  // the route of the previous row: consecutive rows mostly share it
    ConvertBlock block;
    RecordError error;
    for (;;) {
      ASSIGN_OR_RETURN(bool more, NextBlock(&block, times));
      if (!more) {
        // Outside next_mu_: the other threads' last blocks and flushes go on meanwhile.
        const auto t1 = Clock::now();
        if (stopped()) return Status::OK();
        Status st = Flush(lanes);
        times->flush += Ms(Clock::now() - t1);
        return st;
      }
      const auto convert0 = Clock::now();
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
      const auto turn0 = Clock::now();
      times->convert += Ms(turn0 - convert0);
      std::unique_lock lock(mu_);
      // Without a fixed row order (carry_across_blocks), blocks are placed as they are done.
      cv_.wait(lock, [&] { return stop_ || options_.carry_across_blocks || next_seq_ == out.seq; });
      if (stop_) return Status::OK();
      const auto place0 = Clock::now();
      times->wait_turn += Ms(place0 - turn0);
      RETURN_IF_ERROR(place_(std::move(out)));
      times->place += Ms(Clock::now() - place0);
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
  // The prefetcher's blocks, made and not yet taken; emptied blocks it may refill.
  std::mutex q_mu_;
  std::condition_variable q_cv_;
  std::deque<ConvertBlock> ready_;       // q_mu_
  std::vector<ConvertBlock> free_;       // q_mu_
  bool produced_all_ = false;            // q_mu_: the prefetcher has seen the end
  bool q_stop_ = false;                  // q_mu_: stop_, for the queue's waiters
  ParallelConverterTimes times_;         // mu_
  std::vector<Clock::time_point> ends_;  // mu_: when each thread ended
};

}  // namespace

Status ParallelConverter::Run(const ConvertibleSchema& schema,
                              const pq::ParquetSchema& parquet_schema,
                              const pq::WriterOptions& writer_options,
                              const ParallelConverterOptions& options,
                              const std::function<Result<bool>(ConvertBlock*)>& next,
                              const std::function<Status(ConvertedBlock&&)>& place,
                              ParallelConverterTimes* times) {
  if (options.converter.route_field_id != 0 && (!options.route_key || !options.route_range)) {
    return InvalidArgument("routing needs route_key and route_range");
  }
  Runner r(schema, parquet_schema, writer_options, options, next, place);
  return r.Run(times);
}

}  // namespace icestream::schema
