// DataDirLock: one owner per data directory. An exclusive flock(2) on DATA_DIR/LOCK,
// held for the life of the process (the kernel drops it when the process ends, even on
// kill -9), with the holder's pid written inside so a second server or `icestream fsck`
// can name it.
//
// Lifetime: the lock is held until the object is destroyed. Not copyable.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"

namespace icestream::server {

class DataDirLock {
 public:
  // kFailedPrecondition naming the holder's pid when another process holds the lock.
  static Result<std::unique_ptr<DataDirLock>> Acquire(const std::string& data_dir);
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

 private:
  explicit DataDirLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace icestream::server
