// ShardLog: append queue, recovery, reads, time lookup, retention.
#include "log/shard_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "common/bytes.h"
#include "common/fs.h"
#include "log/committer.h"
#include "log/shard_dir.h"

namespace icestream::log {

ShardLog::ShardLog(std::string dir, LogOptions options, const Clock* clock, Committer* committer)
    : dir_(std::move(dir)), options_(options), clock_(clock), committer_(committer) {}

ShardLog::~ShardLog() = default;

Result<std::shared_ptr<ShardLog>> ShardLog::Open(std::string dir, LogOptions options,
                                                 const Clock* clock, Committer* committer) {
  std::shared_ptr<ShardLog> log(new ShardLog(std::move(dir), options, clock, committer));
  log->file_cache_ =
      options.file_cache ? options.file_cache : std::make_shared<SegmentFileCache>(8);
  log->committer_slot_ = committer->AssignSlot();
  RETURN_IF_ERROR(log->Recover());
  return log;
}

Status ShardLog::Recover() {
  RETURN_IF_ERROR(fs::MakeDirsDurable(dir_));
  ASSIGN_OR_RETURN(ShardDirListing listing, ListShardDir(dir_));
  for (const auto& n : listing.temporary) RETURN_IF_ERROR(fs::RemoveFile(fs::Join(dir_, n)));
  for (const auto& [name, why] : listing.strays) {
    // Not part of the log: passed by, never deleted (icestream fsck names it too).
    spdlog::warn("{}: {} is not part of the shard log and is ignored: {}", dir_, name, why);
  }
  std::vector<uint64_t> bases = std::move(listing.segments);
  // Segments are created under a temporary name and renamed once their header is durable
  // (Segment::Create), so every segment file has a whole header. One that does not is
  // damage (or a newer format): refuse to open the shard rather than drop acknowledged
  // records — recovery never deletes a named segment.
  for (uint64_t base : bases) {
    std::string path = fs::Join(dir_, Segment::FileName(base));
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoError("open segment " + path, errno);
    std::string header(kSegmentHeaderSize, '\0');
    auto got = fs::PReadFull(fd, header.data(), header.size(), 0, path);
    ::close(fd);
    if (!got.ok()) return got.status();
    header.resize(*got);
    auto decoded = DecodeSegmentHeader(header);
    if (!decoded.ok()) {
      return Corruption("segment " + path + ": " + decoded.status().message() +
                        "; the shard is not opened (move the file away to accept the loss)");
    }
  }
  if (bases.empty()) {
    ASSIGN_OR_RETURN(auto seg, Segment::Create(dir_, 0, file_cache_.get()));
    segments_.push_back(std::move(seg));
  } else {
    for (size_t i = 0; i + 1 < bases.size(); ++i) {
      ASSIGN_OR_RETURN(
          auto seg, Segment::OpenSealed(dir_, bases[i], bases[i + 1], options_.index_interval_bytes,
                                        file_cache_.get()));
      segments_.push_back(std::move(seg));
    }
    uint64_t cut = 0;
    ASSIGN_OR_RETURN(auto active,
                     Segment::OpenActive(dir_, bases.back(), options_.index_interval_bytes,
                                         file_cache_.get(), &cut));
    segments_.push_back(std::move(active));
  }
  const auto& last = segments_.back();
  next_offset_ = last->end_offset();
  pending_first_offset_ = next_offset_;
  committed_end_.store(next_offset_);
  int64_t last_arrival = 0;
  for (const auto& s : segments_) {
    if (!s->empty()) last_arrival = std::max(last_arrival, s->last_arrival_ms());
  }
  last_arrival_ms_ = last_arrival;
  last_committed_arrival_.store(last_arrival);
  return Status::OK();
}

Result<AppendInfo> ShardLog::Append(const std::vector<AppendRecord>& records,
                                    DurableCallback on_durable) {
  size_t bytes = 0;
  for (const auto& r : records) {
    // What a frame can hold (docs/formats/log.md); a bigger record would be written but
    // read back as corruption, so it is refused here (the API's limits are far lower).
    if (r.partition_key.size() > kMaxPartitionKeyBytes || r.data.size() > kMaxDataBytes) {
      return InvalidArgument("record too large for a log frame");
    }
    bytes += FrameSize(r.partition_key.size(), r.data.size());
  }
  bool schedule = false;
  AppendInfo info;
  {
    std::lock_guard lock(append_mu_);
    if (closed_) return ShuttingDown("shard log is closed");
    if (pending_.size() + bytes > options_.max_pending_bytes && !pending_.empty()) {
      return Throttled("write queue of the shard is full");
    }
    int64_t now = clock_->NowMillis();
    last_arrival_ms_ = std::max(last_arrival_ms_, now);
    info.first_offset = next_offset_;
    info.arrival_ms = last_arrival_ms_;
    size_t at = pending_.size();
    // Appended piece by piece (no zero-fill of a resize), then sealed in place.
    pending_.reserve(at + bytes);
    char head[kFrameHeaderSize + kMaxPartitionKeyBytes];
    for (const auto& r : records) {
      pending_frames_.emplace_back(static_cast<uint32_t>(at), info.arrival_ms);
      EncodeFrameHead(head, next_offset_++, info.arrival_ms, r.partition_key, r.data.size());
      pending_.append(head, kFrameHeaderSize + r.partition_key.size());
      pending_.append(r.data);
      SealFrame(pending_.data() + at);
      at += FrameSize(r.partition_key.size(), r.data.size());
    }
    pending_callbacks_.push_back(std::move(on_durable));
    if (!scheduled_) {
      scheduled_ = true;
      schedule = true;
    }
  }
  if (schedule) committer_->Schedule(shared_from_this(), committer_slot_);
  return info;
}

bool ShardLog::TakeAndWrite(FlushJob* job) {
  {
    std::lock_guard lock(append_mu_);
    scheduled_ = false;
    job->bytes.swap(pending_);
    job->frames.swap(pending_frames_);
    job->callbacks.swap(pending_callbacks_);
    job->first_offset = pending_first_offset_;
    pending_first_offset_ = next_offset_;
    job->roll_only = job->bytes.empty() && roll_requested_;
    in_flight_ = true;
  }
  // The first frame of every write says so: recovery can then tell an unfinished last
  // write (cut it) from damage to earlier, acknowledged writes (never cut).
  if (!job->bytes.empty()) MarkWriteStart(job->bytes.data());
  int64_t now = clock_->NowMillis();
  Status st;
  {
    std::unique_lock lock(seg_mu_);
    auto active = segments_.back();
    bool full = active->durable_bytes() >= options_.segment_bytes;
    bool old = !active->empty() && now - active->first_arrival_ms() >= options_.segment_ms;
    bool requested = false;
    {
      std::lock_guard alock(append_mu_);
      requested = roll_requested_;
      roll_requested_ = false;
    }
    if (!active->empty() && (full || old || requested)) st = RollLocked(job->first_offset);
    if (st.ok() && !job->bytes.empty()) {
      job->segment = segments_.back();
      job->position = job->segment->durable_bytes();
      // Index entries for frames that start a new interval (readers only use entries
      // below the committed end, so adding them before the sync is safe).
      auto& seg = *job->segment;
      for (size_t i = 0; i < job->frames.size(); ++i) {
        uint64_t pos = job->position + job->frames[i].first;
        if (seg.entries().empty() ||
            pos - seg.last_indexed_position() >= options_.index_interval_bytes) {
          seg.entries().push_back({job->first_offset + i, pos, job->frames[i].second});
          seg.set_last_indexed_position(pos);
        }
      }
    }
  }
  if (!st.ok()) {
    FailWrite(job, st, /*written=*/false);
    return false;
  }
  if (job->bytes.empty()) {
    FinishJob();
    return false;
  }
  st = job->segment->WriteAt(job->bytes.data(), job->bytes.size(), job->position);
  if (!st.ok()) {
    FailWrite(job, st, /*written=*/true);
    return false;
  }
  return true;
}

void ShardLog::SyncAndPublish(FlushJob* job) {
  Status st = options_.fsync ? job->segment->Sync() : Status::OK();
  if (!st.ok()) {
    // After a failed fdatasync what reached the disk is unknowable: nothing of this
    // write is acknowledged, and the file is cut back to what was durable before it.
    FailWrite(job, st, /*written=*/true);
    return;
  }
  uint64_t end = job->first_offset + job->frames.size();
  int64_t first =
      job->segment->empty() ? job->frames.front().second : job->segment->first_arrival_ms();
  int64_t last = job->frames.back().second;
  uint64_t durable = job->position + job->bytes.size();
  job->segment->Publish(durable, end, first, last);
  if (options_.fsync && options_.cache_window_bytes > 0) TrimPageCache(job->segment, durable);
  last_committed_arrival_.store(last, std::memory_order_release);
  committed_end_.store(end, std::memory_order_release);
  {
    std::lock_guard lock(append_mu_);
    if (!write_error_.empty()) spdlog::info("shard log {}: writes succeed again", dir_);
    write_error_.clear();
  }
  for (auto& cb : job->callbacks) cb(Status::OK());
  job->callbacks.clear();
  FinishJob();
}

namespace {

// What a client is told about a failed write: what failed, never where (no paths).
Status ClientWriteError(const Status& st) {
  if (st.code() == StatusCode::kUnavailable) {
    return Unavailable(
        "no space left on the disk that holds the stream's log: the records were not written; "
        "retry once "
        "space is freed");
  }
  std::string_view m = st.message();
  size_t colon = m.rfind(": ");
  std::string reason(colon == std::string_view::npos ? std::string_view("I/O error")
                                                     : m.substr(colon + 2));
  return IOError("writing the stream's log failed (" + reason + "); the records were not written");
}

}  // namespace

void ShardLog::FailWrite(FlushJob* job, const Status& st, bool written) {
  if (job->segment) {
    std::unique_lock lock(seg_mu_);
    auto& e = job->segment->entries();
    while (!e.empty() && e.back().offset >= job->first_offset) e.pop_back();
    job->segment->set_last_indexed_position(e.empty() ? 0 : e.back().position);
  }
  if (written && job->segment) {
    // Whatever part of the write reached the file goes, so the next write lands at the
    // durable end and recovery never meets a half-written frame.
    Status cut = job->segment->TruncateTo(job->position);
    if (!cut.ok()) spdlog::error("shard log {}: cutting a failed write: {}", dir_, cut.ToString());
  }
  std::vector<DurableCallback> failed = std::move(job->callbacks);
  job->callbacks.clear();
  size_t records = job->frames.size();
  {
    std::lock_guard lock(append_mu_);
    records += pending_frames_.size();
    for (auto& cb : pending_callbacks_) failed.push_back(std::move(cb));
    pending_callbacks_.clear();
    pending_.clear();
    pending_frames_.clear();
    // The offsets of the refused records are handed out again: none of them was acknowledged.
    next_offset_ = job->first_offset;
    pending_first_offset_ = job->first_offset;
    write_error_ = st.message();
    in_flight_ = false;
  }
  spdlog::error(
      "shard log {}: {}; {} records of this write and of those queued behind it are refused, "
      "later writes are tried again",
      dir_, st.ToString(), records);
  Status client = ClientWriteError(st);
  for (auto& cb : failed) cb(client);
  idle_cv_.notify_all();
}

void ShardLog::FinishJob() {
  {
    std::lock_guard lock(append_mu_);
    in_flight_ = false;
  }
  idle_cv_.notify_all();
}

uint64_t ShardLog::Drain() {
  std::unique_lock lock(append_mu_);
  idle_cv_.wait(lock,
                [&] { return pending_.empty() && pending_callbacks_.empty() && !in_flight_; });
  return committed_end();
}

void ShardLog::ReleaseFiles() {
  std::shared_lock lock(seg_mu_);
  for (const auto& seg : segments_) seg->ReleaseFiles();
}

std::optional<std::string> ShardLog::write_error() const {
  std::lock_guard lock(append_mu_);
  if (write_error_.empty()) return std::nullopt;
  return write_error_;
}

void ShardLog::TrimPageCache(const std::shared_ptr<Segment>& active, uint64_t durable) {
  const uint64_t window = options_.cache_window_bytes;
  if (cache_active_.lock() != active) {
    cache_previous_ = cache_active_;
    cache_active_ = active;
  }
  uint64_t in_active = durable - kSegmentHeaderSize;
  if (durable > window) active->DropCacheBelow(durable - window);
  if (auto previous = cache_previous_.lock()) {
    // The window reaches back into the segment before; once it no longer does, that
    // segment leaves the cache entirely.
    uint64_t prev_end = previous->durable_bytes();
    uint64_t reach = window > in_active ? window - in_active : 0;
    if (reach == 0) {
      previous->DropCacheBelow(prev_end, /*force=*/true);
      cache_previous_.reset();
    } else if (prev_end > reach) {
      previous->DropCacheBelow(prev_end - reach);
    }
  }
}

Status ShardLog::RollLocked(uint64_t next_base) {
  auto& active = segments_.back();
  RETURN_IF_ERROR(active->Seal());
  ASSIGN_OR_RETURN(auto seg, Segment::Create(dir_, next_base, file_cache_.get()));
  active->CloseForWriting();
  segments_.push_back(std::move(seg));
  return Status::OK();
}

std::shared_ptr<Segment> ShardLog::FindSegment(uint64_t offset) const {
  auto it = std::upper_bound(
      segments_.begin(), segments_.end(), offset,
      [](uint64_t o, const std::shared_ptr<Segment>& s) { return o < s->base_offset(); });
  if (it == segments_.begin()) return segments_.front();
  return *(it - 1);
}

uint64_t ShardLog::PositionFor(const Segment& seg, uint64_t offset) const {
  const auto& e = seg.entries();
  auto it = std::upper_bound(e.begin(), e.end(), offset,
                             [](uint64_t o, const IndexEntry& x) { return o < x.offset; });
  if (it == e.begin()) return kSegmentHeaderSize;
  return (it - 1)->position;
}

uint64_t ShardLog::start_offset() const {
  std::shared_lock lock(seg_mu_);
  return segments_.front()->base_offset();
}

uint64_t ShardLog::next_offset() const {
  std::lock_guard lock(append_mu_);
  return next_offset_;
}

size_t ShardLog::segment_count() const {
  std::shared_lock lock(seg_mu_);
  return segments_.size();
}

namespace {

// Read buffers are aligned for O_DIRECT reads (ReadBlock).
using fs::kDirectAlign;
struct AlignedDelete {
  void operator()(char* p) const { ::operator delete[](p, std::align_val_t{kDirectAlign}); }
};
using AlignedBuffer = std::unique_ptr<char[], AlignedDelete>;
AlignedBuffer AllocateAligned(size_t n) {
  return AlignedBuffer(static_cast<char*>(::operator new[](n, std::align_val_t{kDirectAlign})));
}

// ReadViews' buffers of 64 KiB or more, kept for the next reads: they outlive the read (the
// views point into them) and are dropped by whichever thread finishes with the records, so a
// per-thread buffer cannot serve. Fresh ones cost a page fault (and a zeroed page) per 4 KiB:
// 0.12 of 3.1 CPU-s of a 500 MB backlog delivery, and a 256 KiB read (ArrivalOf's, on every
// scheduling pass of a shard with a backlog) took 89 us fresh against 12 us pooled. At most
// kKeepBytes wait here (a few chunks: more raised a 16-shard backlog's peak RSS,
// bench/table-delivery --only memory).
class ReadBufferPool {
 public:
  static ReadBufferPool& Get() {
    static ReadBufferPool* pool = new ReadBufferPool;  // never destroyed: buffers outlive exit
    return *pool;
  }

  std::shared_ptr<char[]> Take(size_t want) {
    constexpr size_t kClass = 64u << 10;  // a chunk's reads differ by a block or two
    if (want < kClass) {
      return std::shared_ptr<char[]>(AllocateAligned(want).release(), AlignedDelete{});
    }
    const size_t capacity = (want + kClass - 1) & ~(kClass - 1);
    char* p = nullptr;
    {
      std::lock_guard lock(mu_);
      auto it = free_.find(capacity);
      if (it != free_.end()) {
        p = it->second.release();
        free_.erase(it);
        kept_ -= capacity;
      }
    }
    if (p == nullptr) p = AllocateAligned(capacity).release();
    return std::shared_ptr<char[]>(p, [this, capacity](char* q) { Give(q, capacity); });
  }

 private:
  void Give(char* p, size_t capacity) {
    AlignedBuffer owned(p);
    std::lock_guard lock(mu_);
    if (kept_ + capacity > kKeepBytes) return;  // freed
    kept_ += capacity;
    free_.emplace(capacity, std::move(owned));
  }

  static constexpr size_t kKeepBytes = 16u << 20;
  std::mutex mu_;
  std::multimap<size_t, AlignedBuffer> free_;  // by capacity
  size_t kept_ = 0;
};

// A buffer of at least `want` bytes (and the views' padding) for the next pread, kept by
// `out` (the views point into it).
char* ReadBuffer(ViewResult* out, size_t want) {
  out->buffers.push_back(ReadBufferPool::Get().Take(want + kViewPadding));
  return out->buffers.back().get();
}

// The bytes [pos, pos + want) of `fd` mapped rather than read (kept by `out`), or null: then
// ReadBuffer and a pread. `durable` bytes of the file are never cut (Segment::TruncateTo cuts
// only a failed write past them): a mapping ends within them, so no access can fault past
// the file's end.
// Bytes the page cache holds (the log's cache window: the newer part of a backlog) are
// mapped, padding included, instead of copied out of the cache: the copy was 2.5% of a
// 4-shard backlog delivery's CPU, half of whose bytes lie in the window. Read-only and
// shared, so no page is copied (a private writable mapping would copy each on
// MAP_POPULATE); populated at once, so the converters take no faults. Reads under a MiB are
// cheaper copied into a pooled buffer than mapped and unmapped (256 KiB: 12 us against
// 16 us; 1 MiB: 208 us against 150 us mapped), and a read that runs to the durable end (a
// tailing reader's, a segment's last) is copied: its padding would pass that end.
const char* MapCached(ViewResult* out, int fd, uint64_t pos, size_t want, uint64_t durable) {
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  constexpr size_t kMinMapBytes = 1u << 20;
  if (want < kMinMapBytes || pos + want + kViewPadding > durable) return nullptr;
  const uint64_t first = pos & ~(page - 1);
  const size_t len = static_cast<size_t>(pos + want + kViewPadding - first);
  void* m =
      ::mmap(nullptr, len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, static_cast<off_t>(first));
  if (m == MAP_FAILED) return nullptr;  // read instead
  char* base = static_cast<char*>(m);
  // Only pages the cache holds: one the populate had to read from the disk may have
  // failed, and touching it would be SIGBUS where a pread reports an I/O error. This holds
  // when the mapping is made: a page the kernel evicts later (memory pressure) is read
  // again on access, and a disk error then is SIGBUS. (mincore reports every page of a file
  // the process may not write as resident; the log's own files are its.)
  thread_local std::vector<unsigned char> resident;
  resident.resize((len + page - 1) / page);
  if (::mincore(base, len, resident.data()) != 0 ||
      std::any_of(resident.begin(), resident.end(), [](unsigned char r) { return !(r & 1); })) {
    ::munmap(base, len);
    return nullptr;
  }
  out->buffers.push_back(std::shared_ptr<char[]>(base, [len](char* p) { ::munmap(p, len); }));
  return base + (pos - first);
}

}  // namespace

Result<ReadResult> ShardLog::Read(uint64_t from, size_t max_records, size_t max_bytes,
                                  uint64_t stop_before) const {
  ASSIGN_OR_RETURN(ViewResult views, ReadViews(from, max_records, max_bytes, stop_before));
  ReadResult out;
  out.records.reserve(views.records.size());
  for (const auto& r : views.records) {
    out.records.push_back(
        {r.offset, r.arrival_ms, std::string(r.partition_key), std::string(r.data)});
  }
  out.next_offset = views.next_offset;
  out.bytes = views.bytes;
  return out;
}

Result<ViewResult> ShardLog::ReadViews(uint64_t from, size_t max_records, size_t max_bytes,
                                       uint64_t stop_before) const {
  ViewResult out;
  ASSIGN_OR_RETURN(auto r, ReadFrames(from, max_records, max_bytes, stop_before, &out));
  out.next_offset = r.first;
  out.bytes = r.second;
  return out;
}

ShardLog::DirectFile::~DirectFile() {
  if (fd >= 0) ::close(fd);
}

Result<size_t> ShardLog::ReadBlock(const std::shared_ptr<Segment>& segment, int fd,
                                   DirectFile* direct, uint64_t pos, size_t want, ViewResult* out,
                                   char** data) {
  const Segment& seg = *segment;
  // Bytes the log dropped from the page cache (below its window: a backlog) come from the
  // disk straight into the buffer. A buffered read would allocate page-cache pages, fill
  // them and copy them out, the largest CPU cost of a backlog delivery's reads (0.85 of
  // 4.8 CPU-s for 500 MB on this project's 2-core VMs). Bytes within the window are
  // cached: those are read through the cache.
  const bool cold = pos + want <= seg.cache_dropped_below();
  if (cold && direct->segment != segment) {
    if (direct->fd >= 0) ::close(direct->fd);
    direct->segment = segment;
#ifdef O_DIRECT
    // Refused (a file system without direct I/O) or gone (retention): buffered reads.
    direct->fd = ::open(seg.path().c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
#else
    direct->fd = -1;
#endif
  }
  if (!cold || direct->fd < 0) {
    if (const char* mapped = MapCached(out, fd, pos, want, seg.durable_bytes())) {
      *data = const_cast<char*>(mapped);  // read-only: the frames are parsed, never written
      return want;
    }
    *data = ReadBuffer(out, want);
    return fs::PReadFull(fd, *data, want, pos, seg.path());
  }
  const uint64_t first = pos & ~uint64_t{kDirectAlign - 1};
  const uint64_t last = (pos + want + kDirectAlign - 1) & ~uint64_t{kDirectAlign - 1};
  const size_t skip = static_cast<size_t>(pos - first);
  const size_t n = static_cast<size_t>(last - first);
  char* block = ReadBuffer(out, n);
  *data = block + skip;
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(direct->fd, block + got, n - got, static_cast<off_t>(first + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;  // an error (EINVAL: no direct read here) is retried buffered below
    got += static_cast<size_t>(r);
    if (got % kDirectAlign != 0) break;  // the end of the file
  }
  if (got >= skip + want) return want;
  // The direct read fell short: the same bytes through the cache (which reports errors).
  ::close(direct->fd);
  direct->fd = -1;  // for the rest of this segment in this read
  return fs::PReadFull(fd, *data, want, pos, seg.path());
}

Result<std::pair<uint64_t, size_t>> ShardLog::ReadFrames(uint64_t from, size_t max_records,
                                                         size_t max_bytes, uint64_t stop_before,
                                                         ViewResult* out) const {
  size_t count = 0;
  size_t bytes = 0;
  uint64_t end = std::min(committed_end(), stop_before);
  from = std::max(from, start_offset());
  if (from >= end || max_records == 0) return std::make_pair(from, size_t{0});

  uint64_t offset = from;
  // Damage stops the read: what was read before it is returned; a read that starts at
  // it fails. The file's path goes to the log (once per segment), never to the caller.
  auto damage = [&](const Segment& seg,
                    const std::string& detail) -> Result<std::pair<uint64_t, size_t>> {
    if (seg.FirstDamageReport()) {
      spdlog::error("shard log {}: {} in {} at offset {}; reads stop there (run `icestream fsck`)",
                    dir_, detail, seg.path(), offset);
    }
    if (count > 0) return std::make_pair(offset, bytes);
    return Corruption(
        fmt::format("the record at offset {} of this shard is damaged on disk ({}); reads cannot "
                    "go past it until an "
                    "operator repairs the log (icestream fsck)",
                    offset, detail));
  };
  char* data = nullptr;
  std::string_view buf;
  DirectFile direct;
  std::shared_ptr<Segment> gone;  // a segment whose file vanished (retention) on the last try
  while (offset < end && count < max_records) {
    std::shared_ptr<Segment> seg;
    std::shared_ptr<Segment> next;
    uint64_t pos;
    {
      std::shared_lock lock(seg_mu_);
      seg = FindSegment(offset);
      if (offset < seg->base_offset()) offset = seg->base_offset();  // trimmed meanwhile
      pos = PositionFor(*seg, offset);
      auto it = std::find(segments_.begin(), segments_.end(), seg);
      if (it != segments_.end() && it + 1 != segments_.end()) next = *(it + 1);
    }
    uint64_t seg_end_pos = seg->durable_bytes();
    uint64_t seg_end_off = seg->end_offset();
    if (offset >= seg_end_off) {
      if (seg->damaged() && next && offset < next->base_offset()) {
        return damage(*seg, "the segment is damaged from this record on");
      }
      // A race with a roll, or a gap between segments left by a repair: step over it.
      if (!next) break;
      offset = std::max(offset, next->base_offset());
      continue;
    }
    auto handle = seg->ReadHandle();
    if (!handle.ok()) {
      // Deleted by retention since we looked: look again (once per segment).
      if (handle.status().code() == StatusCode::kNotFound && gone != seg) {
        gone = seg;
        continue;
      }
      return handle.status();
    }
    bool progressed = false;
    size_t min_read = 0;  // set when one frame is larger than the default read size
    while (pos < seg_end_pos && offset < end && count < max_records) {
      uint64_t left = max_bytes > bytes ? max_bytes - bytes : 0;
      uint64_t default_read = std::max<uint64_t>(256 << 10, left + 4096);
      size_t want = static_cast<size_t>(
          std::min<uint64_t>(seg_end_pos - pos, std::max<uint64_t>(default_read, min_read)));
      ASSIGN_OR_RETURN(size_t got, ReadBlock(seg, (*handle)->fd(), &direct, pos, want, out, &data));
      buf = std::string_view(data, got);
      min_read = 0;
      size_t at = 0;
      while (at < buf.size() && offset < end && count < max_records) {
        FrameView f;
        FrameParse r = ParseFrame(buf.substr(at), &f);
        if (r == FrameParse::kIncomplete) {
          if (at == 0) {
            // Only a frame larger than the read may be incomplete here: the file holds
            // every byte below seg_end_pos. Anything else (a short read) is damage.
            uint64_t total = buf.size() >= 8 ? uint64_t{GetFixed32(buf.data() + 4)} + 8 : 0;
            if (got < want || total <= buf.size() || pos + total > seg_end_pos) {
              return damage(*seg, "a frame is cut short");
            }
            min_read = static_cast<size_t>(total);
          }
          break;
        }
        if (r == FrameParse::kCorrupt) return damage(*seg, "checksum mismatch");
        if (f.offset >= offset) {
          if (f.offset != offset) {
            return damage(
                *seg, fmt::format("a frame holds offset {} where {} belongs", f.offset, offset));
          }
          size_t rec_bytes = f.partition_key.size() + f.data.size();
          if (count > 0 && bytes + rec_bytes > max_bytes) return std::make_pair(offset, bytes);
          out->records.push_back({f.offset, f.arrival_ms, f.partition_key, f.data});
          ++count;
          bytes += rec_bytes;
          ++offset;
          progressed = true;
        }
        at += f.frame_size;
      }
      if (min_read > 0) continue;
      pos += at;
      if (at == 0) break;
    }
    if (!progressed && offset < seg_end_off && count < max_records && offset < end) {
      return damage(*seg, "the record cannot be found where the index says");
    }
  }
  return std::make_pair(offset, bytes);
}

Result<uint64_t> ShardLog::OffsetAtTime(int64_t t_ms) const {
  uint64_t end = committed_end();
  std::shared_ptr<Segment> seg;
  uint64_t base_offset = 0;
  {
    std::shared_lock lock(seg_mu_);
    for (const auto& s : segments_) {
      if (!s->empty() && s->last_arrival_ms() >= t_ms) {
        seg = s;
        break;
      }
    }
    if (!seg) return end;
    const auto& e = seg->entries();
    auto it = std::lower_bound(e.begin(), e.end(), t_ms,
                               [](const IndexEntry& x, int64_t t) { return x.arrival_ms < t; });
    base_offset = it != e.begin() ? (it - 1)->offset : seg->base_offset();
  }
  // Scan frames from the index entry to the first record at or after t.
  uint64_t offset = base_offset;
  while (offset < end) {
    ASSIGN_OR_RETURN(auto batch, ReadViews(offset, 1000, 8 << 20, end));
    if (batch.records.empty()) break;
    for (const auto& r : batch.records) {
      if (r.arrival_ms >= t_ms) return r.offset;
    }
    offset = batch.next_offset;
  }
  return end;
}

uint64_t ShardLog::ApproximateBytes(uint64_t from, uint64_t to) const {
  if (from >= to) return 0;
  std::shared_lock lock(seg_mu_);
  uint64_t total = 0;
  for (const auto& seg : segments_) {
    uint64_t seg_end = seg->end_offset();
    if (seg_end <= from || seg->base_offset() >= to) continue;
    uint64_t a = from <= seg->base_offset() ? kSegmentHeaderSize : PositionFor(*seg, from);
    uint64_t b = to >= seg_end ? seg->durable_bytes() : PositionFor(*seg, to);
    if (b > a) total += b - a;
  }
  return total;
}

Result<int64_t> ShardLog::ArrivalOf(uint64_t offset) const {
  ASSIGN_OR_RETURN(auto r, ReadViews(offset, 1, 1, offset + 1));
  if (r.records.empty() || r.records[0].offset != offset) {
    return NotFound("offset " + std::to_string(offset) + " is not stored");
  }
  return r.records[0].arrival_ms;
}

Result<int> ShardLog::ApplyRetention(int64_t cutoff_ms, uint64_t keep_from) {
  std::vector<std::shared_ptr<Segment>> doomed;
  bool roll = false;
  {
    std::unique_lock lock(seg_mu_);
    while (segments_.size() > 1) {
      const auto& s = segments_.front();
      bool expired = s->empty() || s->last_arrival_ms() < cutoff_ms;
      if (!expired || s->end_offset() > keep_from) break;
      doomed.push_back(s);
      segments_.pop_front();
    }
    const auto& active = segments_.back();
    if (segments_.size() == 1 && !active->empty() && active->last_arrival_ms() < cutoff_ms &&
        active->end_offset() <= keep_from) {
      roll = true;
    }
  }
  for (auto& s : doomed) s->Unlink();
  if (!doomed.empty()) (void)fs::SyncDir(dir_);
  if (roll) {
    bool schedule = false;
    {
      std::lock_guard lock(append_mu_);
      if (!closed_ && !roll_requested_) {
        roll_requested_ = true;
        if (!scheduled_) {
          scheduled_ = true;
          schedule = true;
        }
      }
    }
    if (schedule) committer_->Schedule(shared_from_this(), committer_slot_);
  }
  return static_cast<int>(doomed.size());
}

void ShardLog::Close() {
  std::lock_guard lock(append_mu_);
  closed_ = true;
}

}  // namespace icestream::log
