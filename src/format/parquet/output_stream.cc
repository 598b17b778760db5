// Local-file OutputStream.
#include "format/parquet/output_stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace icestream::format::parquet {
namespace {
constexpr size_t kBufferSize = 1 << 20;
}

Result<std::unique_ptr<FileOutputStream>> FileOutputStream::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("open " + path, errno);
  return std::unique_ptr<FileOutputStream>(new FileOutputStream(fd, path));
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

Status FileOutputStream::Write(std::string_view data) {
  if (fd_ < 0) return FailedPrecondition(path_ + " is closed");
  offset_ += static_cast<int64_t>(data.size());
  if (buffer_.size() + data.size() > kBufferSize) RETURN_IF_ERROR(FlushBuffer());
  // Large writes (row groups) go straight to the file: copying them into the buffer
  // first cost a pass over every byte written and kept the buffer that large.
  if (data.size() >= kBufferSize) return WriteAll(data.data(), data.size());
  buffer_.append(data);
  return Status::OK();
}

Status FileOutputStream::Close() {
  if (fd_ < 0) return Status::OK();
  Status st = FlushBuffer();
  if (st.ok() && ::fsync(fd_) != 0) st = ErrnoError("fsync " + path_, errno);
  if (::close(fd_) != 0 && st.ok()) st = ErrnoError("close " + path_, errno);
  fd_ = -1;
  return st;
}

}  // namespace icestream::format::parquet
