// ShardLog: the durable, append-only record log of one shard — a sequence of segment
// files with group commit, torn-tail recovery, sparse offset/time lookups and retention
// (docs/formats/log.md).
//
// Thread-safety: Append and all reads may be called from any thread concurrently.
// Writing to disk happens only on the shard's Committer thread. Readers see a record only
// after it is durable (fdatasync returned) — the "committed" end.
// Lifetime: owned by shared_ptr (the committer's queue holds one while a flush is due).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "log/format.h"
#include "log/segment.h"
#include "log/segment_files.h"

namespace icestream::log {

class Committer;

struct LogOptions {
  uint64_t segment_bytes = 128ull << 20;
  int64_t segment_ms = 3600 * 1000;
  uint64_t index_interval_bytes = 64 << 10;
  // Appends wait here beyond this many queued, not yet written bytes (backpressure):
  // Append fails with kThrottled instead.
  uint64_t max_pending_bytes = 256ull << 20;
  // false only for benchmarks of the rest of the path; acknowledged data is then NOT
  // crash-safe.
  bool fsync = true;
  // Of what is durable, only the newest this-many bytes per shard stay in the page cache;
  // older pages are dropped after each sync (0 keeps everything). Recycling a bounded set
  // of cache pages instead of growing the cache through all of RAM makes the write path
  // much cheaper on virtual machines, where first-touching fresh guest memory is slow;
  // readers further behind than the window read from the disk (sequential, read-ahead).
  // Only synced pages are dropped, so nothing is dropped when fsync is off.
  uint64_t cache_window_bytes = 64ull << 20;
  // Descriptors of sealed segments, shared by every shard of a process; null: the log
  // makes a small one of its own.
  std::shared_ptr<SegmentFileCache> file_cache;
};

// One record to append: the partition key and the payload (copied into the queue).
struct AppendRecord {
  std::string_view partition_key;
  std::string_view data;
};

struct AppendInfo {
  uint64_t first_offset = 0;  // records got first_offset, first_offset + 1, ...
  int64_t arrival_ms = 0;     // ApproximateArrivalTimestamp of all of them
};

// Called once, on the committer thread, when the appended records are durable (OK) or
// could not be written. A failed write fails it and every append queued behind it; the
// log returns to its last durable state and later appends are tried again (a disk that
// was full heals without a restart).
using DurableCallback = std::function<void(const Status&)>;

struct ReadRecord {
  uint64_t offset = 0;
  int64_t arrival_ms = 0;
  std::string partition_key;
  std::string data;
};

struct ReadResult {
  std::vector<ReadRecord> records;
  uint64_t next_offset = 0;  // where to continue reading
  size_t bytes = 0;          // data + key bytes returned
};

// A record of ReadViews: views into ViewResult::buffers.
struct RecordView {
  uint64_t offset = 0;
  int64_t arrival_ms = 0;
  std::string_view partition_key;
  std::string_view data;
};

// Readable bytes after each view's data in its buffer (the frames after it, then slack):
// enough for simdjson to parse a record in place (RecordConverter::kPadding).
constexpr size_t kViewPadding = 64;

struct ViewResult {
  std::vector<RecordView> records;
  // The read buffers the views point into, each with kViewPadding bytes after its end.
  std::vector<std::shared_ptr<char[]>> buffers;
  uint64_t next_offset = 0;
  size_t bytes = 0;
};

class ShardLog : public std::enable_shared_from_this<ShardLog> {
 public:
  // Opens (recovering) or creates the log in `dir`. A new log starts at offset 0.
  static Result<std::shared_ptr<ShardLog>> Open(std::string dir, LogOptions options,
                                                const Clock* clock, Committer* committer);
  ~ShardLog();

  // Assigns consecutive offsets and one arrival time to `records`, queues their frames
  // and returns at once; `on_durable` runs when they are on disk. Fails with kThrottled
  // when too much is queued, kShuttingDown after Close.
  Result<AppendInfo> Append(const std::vector<AppendRecord>& records, DurableCallback on_durable);

  // Reads records from `from` (clamped up to the trim horizon) up to the committed end,
  // at most `max_records` and roughly `max_bytes` (at least one record is returned when
  // any is available). `stop_before` bounds the offset range (exclusive). Damage stops a
  // read: the records before it are returned; a read that starts at it fails with
  // kCorruption (a message without file paths; the paths go to the log once). A gap
  // between segments left by `icestream fsck --repair` is stepped over.
  Result<ReadResult> Read(uint64_t from, size_t max_records, size_t max_bytes,
                          uint64_t stop_before = UINT64_MAX) const;
  // Read without copying: the records are views into the read buffers (or mapped cache
  // pages), which the result owns (each frame's checksum is verified once, as it is parsed
  // out of the buffer). Read copies each record of it into strings of its own, for callers
  // that keep records apart from their buffers; the server's own reads take views.
  Result<ViewResult> ReadViews(uint64_t from, size_t max_records, size_t max_bytes,
                               uint64_t stop_before = UINT64_MAX) const;

  // First committed offset whose arrival time is >= t_ms (committed end if none).
  Result<uint64_t> OffsetAtTime(int64_t t_ms) const;

  uint64_t start_offset() const;  // trim horizon
  uint64_t committed_end() const { return committed_end_.load(std::memory_order_acquire); }
  uint64_t next_offset() const;  // end including queued appends
  int64_t last_arrival_ms() const { return last_committed_arrival_.load(); }
  // Bytes of log (frames) holding offsets [from, to), estimated from the sparse index
  // (within one index interval per segment). Cheap: no reads.
  uint64_t ApproximateBytes(uint64_t from, uint64_t to) const;
  // Arrival time of the record at `offset`, if it is still stored.
  Result<int64_t> ArrivalOf(uint64_t offset) const;

  // Deletes sealed segments whose newest record is older than `cutoff_ms` and whose
  // records all lie below `keep_from` (offsets a reader still needs). An expired active
  // segment is rolled first (on the committer thread) so a later call can delete it.
  // Returns the number of segments deleted.
  Result<int> ApplyRetention(int64_t cutoff_ms, uint64_t keep_from);

  // Stops accepting appends; queued ones are still written by the committer.
  void Close();
  // Waits until every queued append is written (durable or failed) and returns the
  // committed end. Callers make sure no append comes in meanwhile (resharding holds the
  // stream's lock), so the end of a shard closed now counts only records on disk.
  uint64_t Drain();
  // Forgets cached descriptors of this log's files (its folder is being deleted).
  void ReleaseFiles();
  // The error of the last write, while no write has succeeded since (for /health).
  std::optional<std::string> write_error() const;
  const std::string& dir() const { return dir_; }
  size_t segment_count() const;

 private:
  friend class Committer;
  ShardLog(std::string dir, LogOptions options, const Clock* clock, Committer* committer);
  // The read loop of ReadViews: the records from `from`, and the buffers they lie in, go
  // to `out`. Returns the next offset and the key + data bytes read.
  Result<std::pair<uint64_t, size_t>> ReadFrames(uint64_t from, size_t max_records,
                                                 size_t max_bytes, uint64_t stop_before,
                                                 ViewResult* out) const;
  // One read of [pos, pos + want) of `seg` into a buffer (or a mapping) kept by `out`
  // (*data: the bytes at pos); returns the number read. Bytes the log dropped from the page cache
  // are read with O_DIRECT through `direct` (opened once per segment), the rest through fd.
  struct DirectFile {
    std::shared_ptr<const Segment> segment;  // held: its address cannot pass to another
    int fd = -1;
    DirectFile() = default;
    DirectFile(const DirectFile&) = delete;
    DirectFile& operator=(const DirectFile&) = delete;
    ~DirectFile();
  };
  static Result<size_t> ReadBlock(const std::shared_ptr<Segment>& seg, int fd, DirectFile* direct,
                                  uint64_t pos, size_t want, ViewResult* out, char** data);
  Status Recover();

  // A batch taken from the queue by the committer: written, then synced and published.
  struct FlushJob {
    std::string bytes;
    std::vector<std::pair<uint32_t, int64_t>> frames;  // (position in bytes, arrival)
    uint64_t first_offset = 0;
    std::vector<DurableCallback> callbacks;
    std::shared_ptr<Segment> segment;
    uint64_t position = 0;  // file position where `bytes` went
    bool roll_only = false;
  };
  // Committer thread: a write or sync of `job` failed. Fails it and everything queued
  // behind it, cuts the file back to the durable end and forgets their offsets.
  void FailWrite(FlushJob* job, const Status& st, bool written);
  void FinishJob();
  // Committer thread: phase 1 (roll if due, pwrite), phase 2 (fdatasync, publish, ack).
  bool TakeAndWrite(FlushJob* job);
  void SyncAndPublish(FlushJob* job);
  Status RollLocked(uint64_t next_base);
  // Committer thread, after a sync: keeps only the newest cache_window_bytes cached.
  void TrimPageCache(const std::shared_ptr<Segment>& active, uint64_t durable);
  std::shared_ptr<Segment> FindSegment(uint64_t offset) const;  // caller holds seg_mu_
  uint64_t PositionFor(const Segment& seg, uint64_t offset) const;

  const std::string dir_;
  const LogOptions options_;
  const Clock* clock_;
  Committer* committer_;
  size_t committer_slot_ = 0;

  // Queue of appends not yet taken by the committer.
  mutable std::mutex append_mu_;
  std::string pending_;
  std::vector<std::pair<uint32_t, int64_t>> pending_frames_;
  std::vector<DurableCallback> pending_callbacks_;
  uint64_t pending_first_offset_ = 0;
  uint64_t next_offset_ = 0;     // next offset to assign
  int64_t last_arrival_ms_ = 0;  // newest assigned arrival time
  bool scheduled_ = false;
  bool roll_requested_ = false;
  bool closed_ = false;
  bool in_flight_ = false;  // the committer holds a job taken from the queue
  std::condition_variable idle_cv_;
  std::string write_error_;  // last write failure, until a write succeeds

  // Segments; the committer takes it exclusively to roll or index, readers shared.
  mutable std::shared_mutex seg_mu_;
  std::deque<std::shared_ptr<Segment>> segments_;

  // Committer thread only: the segments whose pages TrimPageCache manages (weak: they
  // must not keep a segment that retention deleted open).
  std::weak_ptr<Segment> cache_active_;
  std::weak_ptr<Segment> cache_previous_;

  std::shared_ptr<SegmentFileCache> file_cache_;
  std::atomic<uint64_t> committed_end_{0};
  std::atomic<int64_t> last_committed_arrival_{0};
};

}  // namespace icestream::log
