// A single background thread that runs tasks in submission order. The Parquet writer
// uses it to encode and compress pages while the caller keeps converting records.
// Thread-safe: Submit/Drain may be called from one producer thread; tasks run on the
// worker. The destructor drains and joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "common/status.h"

namespace icestream::format::parquet {

class BackgroundWorker {
 public:
  // max_queued: Submit blocks while this many tasks wait (bounds memory).
  explicit BackgroundWorker(size_t max_queued = 64);
  ~BackgroundWorker();
  BackgroundWorker(const BackgroundWorker&) = delete;
  BackgroundWorker& operator=(const BackgroundWorker&) = delete;

  void Submit(std::function<Status()> task);
  // Waits until every submitted task has run; returns the first error any task
  // returned (sticky).
  Status Drain();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<Status()>> queue_;
  size_t max_queued_;
  bool busy_ = false;
  bool stop_ = false;
  Status error_;
  std::thread thread_;
};

}  // namespace icestream::format::parquet
