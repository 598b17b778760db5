// Segment files: create, examine (torn tail or corruption), open, seal, index.
#include "log/segment.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/bytes.h"
#include "common/fs.h"

namespace icestream::log {

Segment::Segment(std::string dir, uint64_t base_offset, SegmentFileCache* cache,
                 std::shared_ptr<FileHandle> write_handle)
    : dir_(std::move(dir)),
      path_(fs::Join(dir_, FileName(base_offset))),
      base_offset_(base_offset),
      cache_(cache),
      write_handle_(std::move(write_handle)),
      end_offset_(base_offset) {}

Segment::~Segment() = default;

std::string Segment::FileName(uint64_t base_offset) {
  return fmt::format("{:020d}.log", base_offset);
}
std::string Segment::IndexFileName(uint64_t base_offset) {
  return fmt::format("{:020d}.idx", base_offset);
}

Result<std::shared_ptr<Segment>> Segment::Create(const std::string& dir, uint64_t base_offset,
                                                 SegmentFileCache* cache) {
  // The header is made durable under a temporary name first: a segment file under its
  // real name always has a whole header, so recovery never has to guess.
  std::string path = fs::Join(dir, FileName(base_offset));
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("create segment " + tmp, errno);
  auto handle = std::make_shared<FileHandle>(fd);
  std::string header = EncodeSegmentHeader(base_offset);
  Status st = fs::PWriteAll(fd, header.data(), header.size(), 0, tmp);
  if (st.ok() && ::fsync(fd) != 0) st = ErrnoError("fsync " + tmp, errno);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) st = ErrnoError("rename " + tmp, errno);
  if (st.ok()) st = fs::SyncDir(dir);
  if (!st.ok()) {
    (void)fs::RemoveFile(tmp);  // e.g. a full disk: leave nothing half made
    return st;
  }
  return std::shared_ptr<Segment>(new Segment(dir, base_offset, cache, std::move(handle)));
}

uint64_t SegmentScan::intact_records() const {
  uint64_t n = 0;
  for (const auto& r : intact_runs) n += r.end_offset - r.first_offset;
  return n;
}

std::string SegmentScan::Describe() const {
  switch (kind) {
    case Kind::kClean:
      return fmt::format("clean: offsets {}..{} ({} bytes)", base_offset, end_offset, file_size);
    case Kind::kTornTail:
      return fmt::format(
          "torn tail: {} bytes after offset {} (file position {}) belong to a write that never "
          "finished{}",
          file_size - valid_end, end_offset, valid_end,
          intact_runs.empty() ? ""
                              : fmt::format(" ({} whole frames of it survived)", intact_records()));
    case Kind::kCorrupt: {
      std::string runs;
      for (const auto& r : intact_runs) {
        runs += fmt::format("{}offsets {}..{} at file position {}", runs.empty() ? "" : ", ",
                            r.first_offset, r.end_offset - 1, r.position);
      }
      return fmt::format(
          "corrupt: the record at offset {} (file position {}) is damaged; {} intact record(s) "
          "follow it{}{}",
          end_offset, valid_end, intact_records(), runs.empty() ? "" : " (" + runs + ")",
          write_follows_damage
              ? "; a later write follows the damaged one, so it had been acknowledged"
              : "");
    }
  }
  return "";
}

namespace {

// Reads and checks the header of the segment file open on `fd`.
Status CheckHeader(int fd, const std::string& path, uint64_t base_offset) {
  std::string header(kSegmentHeaderSize, '\0');
  ASSIGN_OR_RETURN(size_t got, fs::PReadFull(fd, header.data(), header.size(), 0, path));
  header.resize(got);
  auto decoded = DecodeSegmentHeader(header);
  if (!decoded.ok()) return Corruption("segment " + path + ": " + decoded.status().message());
  if (*decoded != base_offset) return Corruption("segment " + path + " names the wrong offset");
  return Status::OK();
}

// The valid prefix: frames from the header on, each with the next offset.
Status ScanPrefix(int fd, const std::string& path, uint64_t index_interval_bytes,
                  SegmentScan* out) {
  std::string buf;
  uint64_t pos = kSegmentHeaderSize;
  uint64_t expect = out->base_offset;
  uint64_t last_indexed = 0;
  size_t chunk = 4 << 20;
  bool done = false;
  while (!done && pos < out->file_size) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(chunk, out->file_size - pos));
    buf.resize(want);
    ASSIGN_OR_RETURN(size_t got, fs::PReadFull(fd, buf.data(), want, pos, path));
    buf.resize(got);
    size_t at = 0;
    size_t need_more = 0;
    while (at < buf.size()) {
      FrameView f;
      std::string_view rest = std::string_view(buf).substr(at);
      FrameParse r = ParseFrame(rest, &f);
      if (r == FrameParse::kIncomplete) {
        uint64_t frame_pos = pos + at;
        // The frame's full size is known once its fixed header is in the buffer.
        if (rest.size() >= kFrameHeaderSize) {
          uint64_t total = uint64_t{GetFixed32(rest.data() + 4)} + 8;
          if (frame_pos + total <= out->file_size) need_more = static_cast<size_t>(total);
        }
        if (need_more == 0 && frame_pos + kFrameHeaderSize <= out->file_size &&
            rest.size() < kFrameHeaderSize) {
          need_more = kFrameHeaderSize;
        }
        if (need_more == 0) done = true;  // the file ends inside this frame
        break;
      }
      if (r == FrameParse::kCorrupt || f.offset != expect) {
        done = true;
        break;
      }
      uint64_t frame_pos = pos + at;
      if (out->entries.empty() || frame_pos - last_indexed >= index_interval_bytes) {
        out->entries.push_back({f.offset, frame_pos, f.arrival_ms});
        last_indexed = frame_pos;
      }
      if (expect == out->base_offset) out->first_arrival_ms = f.arrival_ms;
      out->last_arrival_ms = f.arrival_ms;
      out->write_start_seen |= (f.flags & kFrameFlagWriteStart) != 0;
      ++expect;
      at += f.frame_size;
    }
    pos += at;
    if (got < want) done = true;  // the file shrank under us; stop at what we have
    if (need_more > 0 && at == 0) chunk = std::max(chunk, need_more);
  }
  out->valid_end = pos;
  out->end_offset = expect;
  return Status::OK();
}

// Looks for intact frames in the damaged region [valid_end, file_size): a frame that
// parses whole with the right CRC and an offset not below the expected one. Bytes are
// tried one position at a time (a garbage length is rejected at once); after an intact
// frame, parsing goes on frame by frame.
Status ScanDamage(int fd, const std::string& path, SegmentScan* out) {
  std::string rest(out->file_size - out->valid_end, '\0');
  ASSIGN_OR_RETURN(size_t got, fs::PReadFull(fd, rest.data(), rest.size(), out->valid_end, path));
  rest.resize(got);
  std::string_view view(rest);
  size_t q = 1;  // the frame at valid_end itself is the damaged one
  while (q + kFrameHeaderSize <= view.size()) {
    FrameView f;
    if (ParseFrame(view.substr(q), &f) != FrameParse::kOk || f.offset < out->end_offset) {
      ++q;
      continue;
    }
    SegmentScan::Run run;
    run.position = out->valid_end + q;
    run.first_offset = f.offset;
    uint64_t expect = f.offset;
    while (q < view.size() && ParseFrame(view.substr(q), &f) == FrameParse::kOk &&
           f.offset == expect) {
      if (f.flags & kFrameFlagWriteStart) {
        out->write_follows_damage = true;
        out->write_start_seen = true;
      }
      ++expect;
      q += f.frame_size;
    }
    run.end_offset = expect;
    run.end_position = out->valid_end + q;
    out->intact_runs.push_back(run);
  }
  return Status::OK();
}

}  // namespace

Result<SegmentScan> Segment::Examine(const std::string& path, uint64_t base_offset, bool active,
                                     uint64_t index_interval_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open segment " + path, errno);
  FileHandle handle(fd);
  RETURN_IF_ERROR(CheckHeader(fd, path, base_offset));
  struct stat st {};
  if (::fstat(fd, &st) != 0) return ErrnoError("stat " + path, errno);
  SegmentScan scan;
  scan.base_offset = base_offset;
  scan.file_size = static_cast<uint64_t>(st.st_size);
  RETURN_IF_ERROR(ScanPrefix(fd, path, index_interval_bytes, &scan));
  if (scan.valid_end >= scan.file_size) {
    scan.kind = SegmentScan::Kind::kClean;
    return scan;
  }
  RETURN_IF_ERROR(ScanDamage(fd, path, &scan));
  // Only the last write of the active segment can be unfinished: at most one write per
  // shard is ever outstanding (the next one starts after its fdatasync). So damage with
  // nothing intact after it is a torn tail; intact frames after it are a torn tail only
  // if none of them starts a write (they can all belong to that last write), which
  // needs write-start marks to tell: files of older versions have none, and their damage
  // counts as corruption, as it does in a sealed segment (synced whole before sealing).
  if (active && scan.intact_runs.empty()) {
    scan.kind = SegmentScan::Kind::kTornTail;
  } else if (active && scan.write_start_seen && !scan.write_follows_damage) {
    scan.kind = SegmentScan::Kind::kTornTail;
  } else {
    scan.kind = SegmentScan::Kind::kCorrupt;
  }
  return scan;
}

void Segment::AdoptScan(SegmentScan scan) {
  entries_ = std::move(scan.entries);
  last_indexed_position_ = entries_.empty() ? 0 : entries_.back().position;
  Publish(scan.valid_end, scan.end_offset, scan.first_arrival_ms, scan.last_arrival_ms);
}

Result<std::shared_ptr<Segment>> Segment::OpenSealed(const std::string& dir, uint64_t base_offset,
                                                     uint64_t next_base,
                                                     uint64_t index_interval_bytes,
                                                     SegmentFileCache* cache) {
  std::string path = fs::Join(dir, FileName(base_offset));
  std::shared_ptr<Segment> seg(new Segment(dir, base_offset, cache, nullptr));
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return ErrnoError("stat " + path, errno);
  auto file_size = static_cast<uint64_t>(st.st_size);
  auto idx_bytes = fs::ReadFile(fs::Join(dir, IndexFileName(base_offset)));
  if (idx_bytes.ok()) {
    auto idx = DecodeIndex(*idx_bytes);
    // An index is trusted only if the file still holds what it describes.
    if (idx.ok() && idx->base_offset == base_offset && idx->valid_bytes <= file_size &&
        idx->end_offset <= next_base) {
      seg->entries_ = std::move(idx->entries);
      int64_t first = seg->entries_.empty() ? 0 : seg->entries_.front().arrival_ms;
      seg->Publish(idx->valid_bytes, idx->end_offset, first, idx->last_arrival_ms);
      if (!seg->entries_.empty()) seg->last_indexed_position_ = seg->entries_.back().position;
      return seg;
    }
    spdlog::warn("index of {} does not match the segment ({}); rebuilding", path,
                 idx.ok() ? "wrong offsets or longer than the file" : idx.status().ToString());
  }
  ASSIGN_OR_RETURN(SegmentScan scan,
                   Examine(path, base_offset, /*active=*/false, index_interval_bytes));
  bool short_of_next = scan.end_offset < next_base;
  if (scan.kind != SegmentScan::Kind::kClean || short_of_next) {
    // Never skipped silently: reads stop at the damage with an error.
    seg->damaged_ = true;
    spdlog::error(
        "sealed segment {} is damaged: {}{}; reads stop at offset {} (run `icestream fsck`)", path,
        scan.Describe(),
        short_of_next && scan.kind == SegmentScan::Kind::kClean
            ? fmt::format(" (it ends at offset {} but the next segment starts at {})",
                          scan.end_offset, next_base)
            : "",
        scan.end_offset);
  } else {
    // Rebuilt: write it down so the next start does not scan again (best effort).
    SegmentIndex idx{base_offset, scan.end_offset, scan.valid_end, scan.last_arrival_ms,
                     scan.entries};
    Status wrote = fs::WriteFileAtomic(fs::Join(dir, IndexFileName(base_offset)), EncodeIndex(idx));
    if (!wrote.ok()) spdlog::warn("rewriting the index of {}: {}", path, wrote.ToString());
  }
  seg->AdoptScan(std::move(scan));
  return seg;
}

Result<std::shared_ptr<Segment>> Segment::OpenActive(const std::string& dir, uint64_t base_offset,
                                                     uint64_t index_interval_bytes,
                                                     SegmentFileCache* cache,
                                                     uint64_t* truncated_bytes) {
  std::string path = fs::Join(dir, FileName(base_offset));
  ASSIGN_OR_RETURN(SegmentScan scan,
                   Examine(path, base_offset, /*active=*/true, index_interval_bytes));
  if (scan.kind == SegmentScan::Kind::kCorrupt) {
    return Corruption(fmt::format(
        "segment {} is {}. This is not a torn tail: nothing is cut, and the shard is not opened. "
        "`icestream fsck --data-dir DIR` shows what a repair would drop; `--repair` does it.",
        path, scan.Describe()));
  }
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open segment " + path, errno);
  auto handle = std::make_shared<FileHandle>(fd);
  *truncated_bytes = scan.file_size - scan.valid_end;
  if (scan.kind == SegmentScan::Kind::kTornTail) {
    spdlog::warn("{}: cutting a {}", path, scan.Describe());
    if (::ftruncate(fd, static_cast<off_t>(scan.valid_end)) != 0)
      return ErrnoError("truncate " + path, errno);
    if (::fsync(fd) != 0) return ErrnoError("fsync " + path, errno);
  }
  // An active segment never has an index file; a stale one (from a seal interrupted by a
  // crash, or a segment that became active again) would lie about the length.
  RETURN_IF_ERROR(fs::RemoveFile(fs::Join(dir, IndexFileName(base_offset))));
  std::shared_ptr<Segment> seg(new Segment(dir, base_offset, cache, std::move(handle)));
  seg->AdoptScan(std::move(scan));
  return seg;
}

Status Segment::Seal() {
  SegmentIndex idx;
  idx.base_offset = base_offset_;
  idx.end_offset = end_offset();
  idx.valid_bytes = durable_bytes();
  idx.last_arrival_ms = last_arrival_ms();
  idx.entries = entries_;
  return fs::WriteFileAtomic(fs::Join(dir_, IndexFileName(base_offset_)), EncodeIndex(idx));
}

void Segment::CloseForWriting() {
  std::lock_guard lock(handle_mu_);
  write_handle_.reset();  // readers holding it keep it; new reads use the cache
}

Result<std::shared_ptr<FileHandle>> Segment::ReadHandle() const {
  {
    std::lock_guard lock(handle_mu_);
    if (write_handle_) return write_handle_;
  }
  return cache_->Open(path_);
}

Status Segment::WriteAt(const char* data, size_t n, uint64_t position) {
  std::shared_ptr<FileHandle> h;
  {
    std::lock_guard lock(handle_mu_);
    h = write_handle_;
  }
  if (!h) return Internal("write to a sealed segment " + path_);
  return fs::PWriteAll(h->fd(), data, n, position, path_);
}

Status Segment::Sync() {
  std::shared_ptr<FileHandle> h;
  {
    std::lock_guard lock(handle_mu_);
    h = write_handle_;
  }
  if (!h) return Status::OK();
  if (::fdatasync(h->fd()) != 0) return ErrnoError("fdatasync " + path_, errno);
  return Status::OK();
}

Status Segment::TruncateTo(uint64_t position) {
  std::shared_ptr<FileHandle> h;
  {
    std::lock_guard lock(handle_mu_);
    h = write_handle_;
  }
  if (!h) return Internal("truncate of a sealed segment " + path_);
  if (::ftruncate(h->fd(), static_cast<off_t>(position)) != 0)
    return ErrnoError("truncate " + path_, errno);
  if (::fdatasync(h->fd()) != 0) return ErrnoError("fdatasync " + path_, errno);
  return Status::OK();
}

void Segment::DropCacheBelow(uint64_t position, bool force) {
  constexpr uint64_t kStep = 4ull << 20;
  const uint64_t dropped = cache_dropped_below();
  if (position <= dropped || (!force && position < dropped + kStep)) {
    return;
  }
  auto h = ReadHandle();
  if (!h.ok()) return;
  // Advisory: a failure only means the pages stay cached.
  (void)::posix_fadvise((*h)->fd(), 0, static_cast<off_t>(position), POSIX_FADV_DONTNEED);
  cache_dropped_below_.store(position, std::memory_order_relaxed);
}

void Segment::Unlink() {
  (void)fs::RemoveFile(fs::Join(dir_, IndexFileName(base_offset_)));
  (void)fs::RemoveFile(path_);
  ReleaseFiles();
}

void Segment::ReleaseFiles() { cache_->Forget(path_); }

void Segment::Publish(uint64_t durable_bytes, uint64_t end_offset, int64_t first_arrival_ms,
                      int64_t last_arrival_ms) {
  first_arrival_ms_.store(first_arrival_ms, std::memory_order_release);
  last_arrival_ms_.store(last_arrival_ms, std::memory_order_release);
  durable_bytes_.store(durable_bytes, std::memory_order_release);
  end_offset_.store(end_offset, std::memory_order_release);
}

}  // namespace icestream::log
