// Data directory lock (flock on DATA_DIR/LOCK).
#include "server/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/fs.h"

namespace icestream::server {

Result<std::unique_ptr<DataDirLock>> DataDirLock::Acquire(const std::string& data_dir) {
  std::string path = fs::Join(data_dir, "LOCK");
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("open " + path, errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    std::string holder;
    char buf[32] = {};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i) holder.push_back(buf[i]);
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return FailedPrecondition(
          "data directory " + data_dir + " is in use by another icestream process" +
          (holder.empty() ? std::string() : " (pid " + holder + ")") +
          "; a data directory has one owner: stop that process or choose another "
          "--data-dir");
    }
    return ErrnoError("lock " + path, err);
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    int err = errno;
    ::close(fd);
    return ErrnoError("write " + path, err);
  }
  return std::unique_ptr<DataDirLock>(new DataDirLock(fd));
}

DataDirLock::~DataDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace icestream::server
