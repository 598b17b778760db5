// Segment files: create, open (with torn-tail recovery), seal, index.
#include "log/segment.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/bytes.h"
#include "common/fs.h"

namespace icestream::log {

Segment::Segment(std::string dir, uint64_t base_offset, int fd)
    : dir_(std::move(dir)),
      path_(fs::Join(dir_, FileName(base_offset))),
      base_offset_(base_offset),
      fd_(fd),
      end_offset_(base_offset) {}

Segment::~Segment() {
  if (fd_ >= 0) ::close(fd_);
}

std::string Segment::FileName(uint64_t base_offset) { return fmt::format("{:020d}.log", base_offset); }
std::string Segment::IndexFileName(uint64_t base_offset) {
  return fmt::format("{:020d}.idx", base_offset);
}

Result<std::shared_ptr<Segment>> Segment::Create(const std::string& dir, uint64_t base_offset) {
  // The header is made durable under a temporary name first: a segment file under its
  // real name always has a whole header, so recovery never has to guess.
  std::string path = fs::Join(dir, FileName(base_offset));
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("create segment " + tmp, errno);
  std::shared_ptr<Segment> seg(new Segment(dir, base_offset, fd));
  std::string header = EncodeSegmentHeader(base_offset);
  RETURN_IF_ERROR(fs::PWriteAll(fd, header.data(), header.size(), 0, tmp));
  if (::fsync(fd) != 0) return ErrnoError("fsync " + tmp, errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return ErrnoError("rename " + tmp, errno);
  RETURN_IF_ERROR(fs::SyncDir(dir));
  return seg;
}

Result<uint64_t> Segment::Scan(uint64_t index_interval_bytes, uint64_t file_size) {
  entries_.clear();
  std::string buf;
  uint64_t pos = kSegmentHeaderSize;
  uint64_t expect = base_offset_;
  int64_t first_arrival = 0, last_arrival = 0;
  size_t chunk = 4 << 20;
  bool done = false;
  while (!done && pos < file_size) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(chunk, file_size - pos));
    buf.resize(want);
    ASSIGN_OR_RETURN(size_t got, fs::PReadFull(fd_, buf.data(), want, pos, path_));
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
          if (frame_pos + total <= file_size) need_more = static_cast<size_t>(total);
        }
        if (need_more == 0 && frame_pos + kFrameHeaderSize <= file_size &&
            rest.size() < kFrameHeaderSize) {
          need_more = kFrameHeaderSize;
        }
        if (need_more == 0) done = true;  // the file ends inside this frame: torn tail
        break;
      }
      if (r == FrameParse::kCorrupt || f.offset != expect) {
        done = true;
        break;
      }
      uint64_t frame_pos = pos + at;
      if (entries_.empty() || frame_pos - last_indexed_position_ >= index_interval_bytes) {
        entries_.push_back({f.offset, frame_pos, f.arrival_ms});
        last_indexed_position_ = frame_pos;
      }
      if (expect == base_offset_) first_arrival = f.arrival_ms;
      last_arrival = f.arrival_ms;
      ++expect;
      at += f.frame_size;
    }
    pos += at;
    if (got < want) done = true;  // the file shrank under us; stop at what we have
    if (need_more > 0 && at == 0) chunk = std::max(chunk, need_more);
  }
  Publish(pos, expect, first_arrival, last_arrival);
  return pos;
}

namespace {
// Reads and checks the header of the segment file open on `fd`.
Status CheckHeader(int fd, const std::string& path, uint64_t base_offset) {
  std::string header(kSegmentHeaderSize, '\0');
  ASSIGN_OR_RETURN(size_t got, fs::PReadFull(fd, header.data(), header.size(), 0, path));
  header.resize(got);
  ASSIGN_OR_RETURN(uint64_t hdr_base, DecodeSegmentHeader(header));
  if (hdr_base != base_offset) return Corruption("segment " + path + " names the wrong offset");
  return Status::OK();
}
}  // namespace

Result<std::shared_ptr<Segment>> Segment::OpenSealed(const std::string& dir, uint64_t base_offset,
                                                     uint64_t index_interval_bytes) {
  std::string path = fs::Join(dir, FileName(base_offset));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open segment " + path, errno);
  std::shared_ptr<Segment> seg(new Segment(dir, base_offset, fd));
  RETURN_IF_ERROR(CheckHeader(fd, path, base_offset));

  struct stat st {};
  if (::fstat(fd, &st) != 0) return ErrnoError("stat " + path, errno);
  auto file_size = static_cast<uint64_t>(st.st_size);
  auto idx_bytes = fs::ReadFile(fs::Join(dir, IndexFileName(base_offset)));
  if (idx_bytes.ok()) {
    auto idx = DecodeIndex(*idx_bytes);
    // An index is trusted only if the file still holds what it describes.
    if (idx.ok() && idx->base_offset == base_offset && idx->valid_bytes <= file_size) {
      seg->entries_ = std::move(idx->entries);
      int64_t first = seg->entries_.empty() ? 0 : seg->entries_.front().arrival_ms;
      seg->Publish(idx->valid_bytes, idx->end_offset, first, idx->last_arrival_ms);
      if (!seg->entries_.empty()) seg->last_indexed_position_ = seg->entries_.back().position;
      return seg;
    }
    spdlog::warn("index of {} does not match the segment ({}); rebuilding", path,
                 idx.ok() ? "wrong base offset or longer than the file" : idx.status().ToString());
  }
  ASSIGN_OR_RETURN(uint64_t valid, seg->Scan(index_interval_bytes, file_size));
  if (valid != file_size) {
    spdlog::error("sealed segment {} has {} damaged bytes after offset {}; they are skipped",
                  path, file_size - valid, seg->end_offset());
  }
  return seg;
}

Result<std::shared_ptr<Segment>> Segment::OpenActive(const std::string& dir, uint64_t base_offset,
                                                     uint64_t index_interval_bytes,
                                                     uint64_t* truncated_bytes) {
  std::string path = fs::Join(dir, FileName(base_offset));
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open segment " + path, errno);
  std::shared_ptr<Segment> seg(new Segment(dir, base_offset, fd));
  RETURN_IF_ERROR(CheckHeader(fd, path, base_offset));
  struct stat st {};
  if (::fstat(fd, &st) != 0) return ErrnoError("stat " + path, errno);
  auto size = static_cast<uint64_t>(st.st_size);
  ASSIGN_OR_RETURN(uint64_t valid, seg->Scan(index_interval_bytes, size));
  *truncated_bytes = size - valid;
  if (valid < size) {
    if (::ftruncate(fd, static_cast<off_t>(valid)) != 0) return ErrnoError("truncate " + path, errno);
    if (::fsync(fd) != 0) return ErrnoError("fsync " + path, errno);
  }
  // An active segment never has an index file; a stale one (from a seal interrupted by a
  // crash, or a segment that became active again) would lie about the length.
  RETURN_IF_ERROR(fs::RemoveFile(fs::Join(dir, IndexFileName(base_offset))));
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

Status Segment::WriteAt(const char* data, size_t n, uint64_t position) {
  return fs::PWriteAll(fd_, data, n, position, path_);
}

Status Segment::Sync() {
  if (::fdatasync(fd_) != 0) return ErrnoError("fdatasync " + path_, errno);
  return Status::OK();
}

void Segment::DropCacheBelow(uint64_t position, bool force) {
  constexpr uint64_t kStep = 4ull << 20;
  if (position <= cache_dropped_below_ || (!force && position < cache_dropped_below_ + kStep)) {
    return;
  }
  // Advisory: a failure only means the pages stay cached.
  (void)::posix_fadvise(fd_, 0, static_cast<off_t>(position), POSIX_FADV_DONTNEED);
  cache_dropped_below_ = position;
}

void Segment::Unlink() {
  (void)fs::RemoveFile(fs::Join(dir_, IndexFileName(base_offset_)));
  (void)fs::RemoveFile(path_);
}

void Segment::Publish(uint64_t durable_bytes, uint64_t end_offset, int64_t first_arrival_ms,
                      int64_t last_arrival_ms) {
  first_arrival_ms_.store(first_arrival_ms, std::memory_order_release);
  last_arrival_ms_.store(last_arrival_ms, std::memory_order_release);
  durable_bytes_.store(durable_bytes, std::memory_order_release);
  end_offset_.store(end_offset, std::memory_order_release);
}

}  // namespace icestream::log
