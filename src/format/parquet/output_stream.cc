// Local-file OutputStream: buffered writes, or O_DIRECT writes from an aligned buffer.
#include "format/parquet/output_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/fs.h"

namespace icestream::format::parquet {
namespace {
constexpr size_t kBufferSize = 1 << 20;
using fs::kDirectAlign;
constexpr size_t kDirectBuffer = 4 << 20;
}  // namespace

void FileOutputStream::FreeDeleter::operator()(char* p) const { std::free(p); }

FileOutputStream::FileOutputStream(int fd, std::string path, bool direct)
    : fd_(fd), path_(std::move(path)), direct_(direct) {
  if (direct_) {
    direct_buffer_.reset(static_cast<char*>(std::aligned_alloc(kDirectAlign, kDirectBuffer)));
    if (direct_buffer_ == nullptr) (void)StopDirect();
  }
}

Result<std::unique_ptr<FileOutputStream>> FileOutputStream::Open(const std::string& path,
                                                                 const FileOutputOptions& options) {
  // One open, without O_DIRECT: opening a FIFO (--output /dev/stdout) with it fails with
  // EINVAL once a reader has connected, and a second open then waited for a reader that
  // had already seen the end of the data (a hang). O_DIRECT is set afterwards, on
  // regular files only (on a pipe it would mean packet mode, where a reader's short read
  // drops the rest of a write); a file system without direct I/O refuses it here.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("open " + path, errno);
  bool direct = false;
#ifdef O_DIRECT
  struct stat st;
  if (options.direct_io && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const int flags = ::fcntl(fd, F_GETFL);
    direct = flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_DIRECT) == 0;
  }
#else
  (void)options;
#endif
  return std::unique_ptr<FileOutputStream>(new FileOutputStream(fd, path, direct));
}

FileOutputStream::~FileOutputStream() {
  if (fd_ >= 0) ::close(fd_);
}

Status FileOutputStream::WriteAll(const char* p, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t w = ::write(fd_, p + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("write " + path_, errno);
    }
    done += static_cast<size_t>(w);
  }
  return Status::OK();
}

Status FileOutputStream::FlushBuffer() {
  Status st = WriteAll(buffer_.data(), buffer_.size());
  buffer_.clear();
  return st;
}

Status FileOutputStream::StopDirect() {
  direct_ = false;
#ifdef O_DIRECT
  int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) != 0) {
    return ErrnoError("fcntl " + path_, errno);
  }
#endif
  return Status::OK();
}

Status FileOutputStream::FlushDirect() {
  char* buf = direct_buffer_.get();
  const size_t whole = direct_used_ & ~(kDirectAlign - 1);
  size_t done = 0;
  while (done < whole) {
    ssize_t w = ::write(fd_, buf + done, whole - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno != EINVAL) return ErrnoError("write " + path_, errno);
      // This file system takes no direct write here (or a short write left the offset
      // unaligned): the rest goes through the page cache.
      RETURN_IF_ERROR(StopDirect());
      Status st = WriteAll(buf + done, direct_used_ - done);
      direct_used_ = 0;
      return st;
    }
    done += static_cast<size_t>(w);
  }
  std::memmove(buf, buf + whole, direct_used_ - whole);
  direct_used_ -= whole;
  return Status::OK();
}

Status FileOutputStream::Write(std::string_view data) {
  if (fd_ < 0) return FailedPrecondition(path_ + " is closed");
  offset_ += static_cast<int64_t>(data.size());
  while (direct_ && !data.empty()) {
    const size_t n = std::min(kDirectBuffer - direct_used_, data.size());
    std::memcpy(direct_buffer_.get() + direct_used_, data.data(), n);
    direct_used_ += n;
    data.remove_prefix(n);
    if (direct_used_ == kDirectBuffer) RETURN_IF_ERROR(FlushDirect());
  }
  if (data.empty()) return Status::OK();
  if (buffer_.size() + data.size() > kBufferSize) RETURN_IF_ERROR(FlushBuffer());
  // Large writes (row groups) go straight to the file: copying them into the buffer
  // first cost a pass over every byte written and kept the buffer that large.
  if (data.size() >= kBufferSize) return WriteAll(data.data(), data.size());
  buffer_.append(data);
  return Status::OK();
}

Status FileOutputStream::Close() {
  if (fd_ < 0) return Status::OK();
  Status st;
  if (direct_) {
    // Whole blocks directly, then the unaligned tail through the page cache.
    st = FlushDirect();
    if (st.ok() && direct_) st = StopDirect();
    if (st.ok() && direct_used_ > 0) st = WriteAll(direct_buffer_.get(), direct_used_);
    direct_used_ = 0;
  }
  if (st.ok()) st = FlushBuffer();
  if (st.ok() && ::fsync(fd_) != 0) st = ErrnoError("fsync " + path_, errno);
  if (::close(fd_) != 0 && st.ok()) st = ErrnoError("close " + path_, errno);
  fd_ = -1;
  return st;
}

}  // namespace icestream::format::parquet
