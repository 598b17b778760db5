// A table channel's batch → data files and DLQ records.
#include "delivery/table/batch_writer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>

#include "format/parquet/file_writer.h"
#include "format/parquet/output_stream.h"

namespace icestream::delivery::table {

namespace {

namespace pq = format::parquet;

constexpr int64_t kHourMicros = 3600LL * 1000 * 1000;
// The first blocks of a batch hold 1/4, 1/2, ... of BatchWriterOptions::block_bytes.
constexpr int64_t kRampBlocks = 2;
// Emptied block owners kept for the next blocks: the blocks converting, the one
// prefetched and one being made.
constexpr size_t kKeptOwners = 4;

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// A file's bytes grow to the target size (or until the batch ends) under the converters'
// placing lock. Grown by doubling, each step was a fresh mapping to fault in and a copy of
// everything so far (up to 200 ms of a 130 MB batch's serial part on 2-core VMs). Reserved
// once instead; pages are touched only as written (untouched ones cost no memory).
void ReserveFileBuffer(std::string* bytes, int64_t target) {
  constexpr size_t kSlack = 4u << 20;  // a row group may end past the target
  bytes->reserve(static_cast<size_t>(std::max<int64_t>(target, 0)) + kSlack);
}

// Writes finished files through the FilePlacer on its own thread, so an upload (an S3
// PUT, or a local write and fsync) does not stall the converter threads, which place
// their row groups one block at a time. Memory: at most `max_pending` files and
// `max_bytes` wait (one file always may, whatever its size).
class Uploader {
 public:
  Uploader(const FilePlacer& place_file, std::vector<iceberg::DataFile>* files, size_t max_pending,
           size_t max_bytes, BatchWorkspace* workspace)
      : place_file_(place_file),
        files_(files),
        workspace_(workspace),
        max_pending_(max_pending),
        max_bytes_(max_bytes),
        thread_([this] { Loop(); }) {}
  ~Uploader() { (void)Finish(); }

  Status Add(int64_t hour, std::string bytes, pq::FileMetrics metrics) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] {
      return queue_.empty() || !error_.ok() ||
             (queue_.size() < max_pending_ && pending_bytes_ + bytes.size() <= max_bytes_);
    });
    if (!error_.ok()) return error_;
    pending_bytes_ += bytes.size();
    queue_.push_back({hour, std::move(bytes), std::move(metrics)});
    cv_.notify_all();
    return Status::OK();
  }

  // Waits for every queued file; the first failure.
  Status Finish() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
    return error_;
  }

 private:
  struct Item {
    int64_t hour;
    std::string bytes;
    pq::FileMetrics metrics;
  };

  void Loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return !queue_.empty() || done_; });
      if (queue_.empty()) return;
      Item item = std::move(queue_.front());
      const size_t size = item.bytes.size();
      lock.unlock();
      Result<iceberg::DataFile> f = error_.ok() ? place_file_(item.hour, item.bytes, item.metrics)
                                                : Result<iceberg::DataFile>(error_);
      if (workspace_ != nullptr) workspace_->GiveFileBuffer(std::move(item.bytes));
      lock.lock();
      queue_.pop_front();  // only now: Add's bound counts the file being written
      pending_bytes_ -= size;
      if (f.ok()) {
        files_->push_back(std::move(*f));
      } else if (error_.ok()) {
        error_ = f.status();
      }
      cv_.notify_all();
    }
  }

  const FilePlacer& place_file_;
  std::vector<iceberg::DataFile>* files_;
  BatchWorkspace* const workspace_;  // emptied buffers go back here (may be null)
  const size_t max_pending_;
  const size_t max_bytes_;
  size_t pending_bytes_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool done_ = false;
  Status error_;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace

void BlockOwner::Reset() {
  for (auto& c : chunks) {
    c.records.clear();
    c.storage.reset();
    spare_chunks.push_back(std::move(c));
  }
  chunks.clear();
  made.clear();
  origins.clear();
  rejects.clear();
  records_in = 0;
  bytes_in = 0;
}

std::string BatchWorkspace::TakeFileBuffer() {
  std::lock_guard lock(mu_);
  if (files_.empty()) return {};
  std::string b = std::move(files_.back());
  files_.pop_back();
  return b;
}

void BatchWorkspace::GiveFileBuffer(std::string bytes) {
  bytes.clear();
  std::lock_guard lock(mu_);
  if (files_.size() < kMaxFiles) files_.push_back(std::move(bytes));
}

size_t BatchWorkspace::kept_files() const {
  std::lock_guard lock(mu_);
  return files_.size();
}

void BatchWorkspace::Release() {
  std::vector<std::string> drop;
  std::lock_guard lock(mu_);
  drop.swap(files_);
}

Status BatchWriter::Run(RecordSource* source, const Decoder& decode, const FilePlacer& place_file,
                        BatchOutput* out) {
  *out = BatchOutput{};
  DeliveryCounts& counts = out->counts;
  struct OpenFile {
    std::string bytes;
    std::unique_ptr<pq::StringOutputStream> stream;
    std::unique_ptr<pq::FileWriter> writer;
  };
  std::map<int64_t, OpenFile> open;  // by partition hour; map nodes do not move
  Uploader uploader(place_file, &out->files, 2, 32u << 20, options_.workspace);

  auto cut = [&](int64_t hour) -> Status {
    auto it = open.find(hour);
    ASSIGN_OR_RETURN(pq::FileMetrics m, it->second.writer->Close());
    counts.bytes_out += it->second.bytes.size();
    RETURN_IF_ERROR(uploader.Add(hour, std::move(it->second.bytes), std::move(m)));
    open.erase(it);
    return Status::OK();
  };

  int64_t seq = 0;
  uint64_t taken = 0;  // records put in blocks so far
  const int po_threads = std::max(1, options_.convert_threads);
  // Where a batch's time goes, for the debug log: reading the log and making blocks (on
  // the prefetcher's thread, or under the converters' one lock without it), placing.
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  double place_ms = 0, source_ms = 0;  // blocks made: ParallelConverterTimes::next
  const auto run_start = Clock::now();
  // Owners of placed blocks, emptied for the next blocks (the prefetcher makes blocks while
  // a converter thread places one).
  std::mutex owners_mu;
  std::vector<std::shared_ptr<BlockOwner>> free_owners;
  auto take_owner = [&] {
    std::lock_guard lock(owners_mu);
    if (free_owners.empty()) return std::make_shared<BlockOwner>();
    std::shared_ptr<BlockOwner> o = std::move(free_owners.back());
    free_owners.pop_back();
    return o;
  };
  auto give_owner = [&](std::shared_ptr<void> o) {
    if (!o || o.use_count() != 1) return;
    auto owner = std::static_pointer_cast<BlockOwner>(std::move(o));
    owner->Reset();
    std::lock_guard lock(owners_mu);
    if (free_owners.size() < kKeptOwners) free_owners.push_back(std::move(owner));
  };
  auto next = [&](schema::ConvertBlock* b) -> Result<bool> {
    std::shared_ptr<BlockOwner> owner = take_owner();
    b->records.clear();
    b->padded.clear();
    b->readable_end = nullptr;
    size_t bytes = 0;
    // Blocks are smaller at the start (the converters begin sooner) and towards the end
    // of the batch (the threads end together); a block takes whole chunks.
    size_t max_records = options_.block_records, max_bytes = options_.block_bytes;
    if (seq < kRampBlocks) {
      max_records >>= kRampBlocks - seq;
      max_bytes >>= kRampBlocks - seq;
    }
    if (options_.expected_records > taken) {
      // Not below 1/8 of a block: a small batch stays one block (one row group per hour
      // rather than one per thread), and a block that took nothing would end the batch.
      const uint64_t share =
          std::max<uint64_t>(std::max<size_t>(1, options_.block_records / 8),
                             (options_.expected_records - taken) / (2 * po_threads));
      if (share < max_records) {
        max_bytes = std::max<size_t>(
            1, static_cast<size_t>(static_cast<double>(max_bytes) * share / max_records));
        max_records = static_cast<size_t>(share);
      }
    }
    max_records = std::max<size_t>(max_records, 1);
    max_bytes = std::max<size_t>(max_bytes, 1);
    while (bytes < max_bytes && owner->records_in < max_records) {
      RecordChunk chunk;
      if (!owner->spare_chunks.empty()) {
        chunk = std::move(owner->spare_chunks.back());
        owner->spare_chunks.pop_back();
      }
      const auto s0 = Clock::now();
      ASSIGN_OR_RETURN(bool more, source->Next(&chunk));
      source_ms += ms(Clock::now() - s0);
      if (!more) break;
      owner->chunks.push_back(std::move(chunk));
      const RecordChunk& c = owner->chunks.back();
      taken += c.records.size();
      const bool padded = c.padding >= schema::RecordConverter::kPadding;
      for (const auto& rec : c.records) {
        const size_t first = b->records.size();
        RETURN_IF_ERROR(decode(rec, c.range, owner.get(), b));
        bytes += rec.data.size();
        // Text that is the record's bytes (or a part: a GSR frame's JSON) is parsed where it
        // lies; text the decoder made (inflated) is copied into a padded buffer first.
        if (!padded) continue;  // ConvertBlock::padded: past its end, not padded
        b->padded.resize(b->records.size(), 0);
        for (size_t i = first; i < b->records.size(); ++i) {
          std::string_view t = b->records[i];
          b->padded[i] = t.data() >= rec.data.data() &&
                         t.data() + t.size() <= rec.data.data() + rec.data.size();
        }
      }
    }
    if (owner->records_in == 0) return false;
    b->seq = seq++;
    b->owner = std::move(owner);
    return true;
  };

  auto place_inner = [&](schema::ConvertedBlock&& done) -> Status {
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
        Reject r{o.range,          std::string(o.sequence_number),
                 o.ordinal,        o.sub_sequence,
                 o.arrival_ms,     std::move(code),
                 rj.error.message, rj.error.path};
        if (options_.keep_rejected_data) {
          r.partition_key = o.partition_key;
          r.data = o.data;
        }
        out->rejects.push_back(std::move(r));
      }
      counts.bytes_processed += converted_bytes;
    }
    counts.delivered += static_cast<uint64_t>(done.rows);
    for (auto& [hour, groups] : done.row_groups) {
      auto it = open.find(hour);
      if (it == open.end()) {
        it = open.emplace(hour, OpenFile{}).first;
        if (options_.workspace != nullptr) it->second.bytes = options_.workspace->TakeFileBuffer();
        ReserveFileBuffer(&it->second.bytes,
                          std::min(options_.target_file_size_bytes, options_.max_buffered_bytes));
        it->second.stream = std::make_unique<pq::StringOutputStream>(&it->second.bytes);
        ASSIGN_OR_RETURN(
            it->second.writer,
            pq::FileWriter::Make(layout_->schema.schema, it->second.stream.get(), options_.writer));
      }
      for (auto& g : groups) RETURN_IF_ERROR(it->second.writer->AppendRowGroup(&g));
      if (static_cast<int64_t>(it->second.bytes.size()) >= options_.target_file_size_bytes)
        RETURN_IF_ERROR(cut(hour));
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

  auto place = [&](schema::ConvertedBlock&& done) -> Status {
    const auto t0 = Clock::now();
    Status st = place_inner(std::move(done));
    give_owner(std::move(done.owner));
    place_ms += ms(Clock::now() - t0);
    return st;
  };

  schema::ParallelConverterOptions po;
  po.threads = po_threads;
  po.carry_across_blocks = true;  // row order inside a file does not matter to a table
  po.prefetch_blocks = options_.prefetch_blocks;
  po.converter.route_field_id = layout_->partition_source_id;
  po.route_key = [](int64_t micros) { return FloorDiv(micros, kHourMicros); };
  po.route_range = [](int64_t hour) {
    return std::make_pair(hour * kHourMicros, (hour + 1) * kHourMicros);
  };
  schema::ParallelConverterTimes times;
  RETURN_IF_ERROR(schema::ParallelConverter::Run(layout_->schema, *pschema_, options_.writer, po,
                                                 next, place, &times));
  const auto converted = Clock::now();
  while (!open.empty()) RETURN_IF_ERROR(cut(open.begin()->first));
  const auto finish0 = Clock::now();
  RETURN_IF_ERROR(uploader.Finish());
  spdlog::debug(
      "table batch of {} record(s) written in {:.0f} ms on {} converter thread(s): log reads "
      "{:.0f} ms, blocks made {:.0f} ms, row groups placed {:.0f} ms, converted by {:.0f} ms, "
      "last files cut {:.0f} ms, last uploads {:.0f} ms; thread-ms: waiting for a block "
      "{:.0f}, converting {:.0f}, waiting to place {:.0f}, last row groups {:.0f}, idle at the "
      "end {:.0f}, {} file buffer(s) kept for the next batch",
      counts.records_in, ms(Clock::now() - run_start), po_threads, source_ms, times.next, place_ms,
      ms(converted - run_start), ms(finish0 - converted), ms(Clock::now() - finish0),
      times.wait_next, times.convert, times.wait_turn, times.flush, times.idle_end,
      options_.workspace ? options_.workspace->kept_files() : 0);
  std::sort(out->rejects.begin(), out->rejects.end(), [](const Reject& a, const Reject& b) {
    return std::tie(a.range, a.ordinal, a.sub_sequence) <
           std::tie(b.range, b.ordinal, b.sub_sequence);
  });
  counts.failed = out->rejects.size();
  return Status::OK();
}

}  // namespace icestream::delivery::table
