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

Status FileOutputStream::FlushBuffer() {
  size_t done = 0;
  while (done < buffer_.size()) {
    ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("write " + path_, errno);
    }
    done += static_cast<size_t>(n);
  }
  buffer_.clear();
  return Status::OK();
}

Status FileOutputStream::Write(std::string_view data) {
  if (fd_ < 0) return FailedPrecondition(path_ + " is closed");
  offset_ += static_cast<int64_t>(data.size());
  if (buffer_.size() + data.size() > kBufferSize) RETURN_IF_ERROR(FlushBuffer());
  if (data.size() >= kBufferSize) {
    buffer_.assign(data);
    return FlushBuffer();
  }
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
