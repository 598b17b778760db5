// Descriptors of segment files. Sealed segments are not kept open: readers borrow a
// descriptor from a bounded, process-wide cache (least recently used ones are closed), so
// the number of open files grows with the shards being written and read, not with the
// data stored. A FileHandle closes its descriptor when the last holder lets go, so a
// reader's pread never meets a descriptor that was closed (and reused) under it.
//
// Thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/status.h"

namespace icestream::log {

class FileHandle {
 public:
  explicit FileHandle(int fd) : fd_(fd) {}
  ~FileHandle();
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

class SegmentFileCache {
 public:
  explicit SegmentFileCache(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // A read-only descriptor of `path`, cached. kNotFound when the file is gone (deleted
  // by retention meanwhile).
  Result<std::shared_ptr<FileHandle>> Open(const std::string& path);
  // Drops the cached descriptor of `path` (the file was deleted; holders keep theirs).
  void Forget(const std::string& path);
  size_t size() const;
  size_t capacity() const { return capacity_; }

 private:
  using Lru = std::list<std::pair<std::string, std::shared_ptr<FileHandle>>>;
  const size_t capacity_;
  mutable std::mutex mu_;
  Lru lru_;  // most recently used first
  std::unordered_map<std::string, Lru::iterator> by_path_;
};

}  // namespace icestream::log
