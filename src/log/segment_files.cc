// The segment descriptor cache.
#include "log/segment_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace icestream::log {

FileHandle::~FileHandle() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::shared_ptr<FileHandle>> SegmentFileCache::Open(const std::string& path) {
  {
    std::lock_guard lock(mu_);
    if (auto it = by_path_.find(path); it != by_path_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return NotFound("segment file " + path + " no longer exists");
    return ErrnoError("open segment " + path, err);
  }
  auto handle = std::make_shared<FileHandle>(fd);
  std::lock_guard lock(mu_);
  if (auto it = by_path_.find(path); it != by_path_.end()) {  // opened meanwhile by another reader
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  lru_.emplace_front(path, handle);
  by_path_[path] = lru_.begin();
  while (lru_.size() > capacity_) {
    by_path_.erase(lru_.back().first);
    lru_.pop_back();  // closes unless a reader still holds it
  }
  return handle;
}

void SegmentFileCache::Forget(const std::string& path) {
  std::lock_guard lock(mu_);
  if (auto it = by_path_.find(path); it != by_path_.end()) {
    lru_.erase(it->second);
    by_path_.erase(it);
  }
}

size_t SegmentFileCache::size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

}  // namespace icestream::log
