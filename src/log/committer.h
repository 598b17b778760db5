// Committer: the group-commit engine. A few threads, each owning a subset of the shard
// logs; a thread takes everything queued for its shards, writes it (one pwrite per
// shard), fdatasyncs each shard once, then acknowledges all those appends together.
// While a thread syncs, new appends queue up for its next round — so the disk is kept
// busy and the number of fsyncs per record falls as load rises.
//
// Thread-safety: Schedule may be called from any thread. Lifetime: must outlive every
// ShardLog that uses it; Stop() drains all queued work before returning.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace icestream::log {

class ShardLog;

class Committer {
 public:
  explicit Committer(size_t threads);
  ~Committer();
  Committer(const Committer&) = delete;
  Committer& operator=(const Committer&) = delete;

  // Picks the thread that will serve a new shard log (round robin).
  size_t AssignSlot();
  // Queues `log` for a flush on its thread.
  void Schedule(std::shared_ptr<ShardLog> log, size_t slot);
  // Writes everything queued, then stops the threads. Idempotent.
  void Stop();

 private:
  struct Lane {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::shared_ptr<ShardLog>> queue;
    bool stopping = false;
    std::thread thread;
  };
  void Run(Lane* lane);

  std::vector<std::unique_ptr<Lane>> lanes_;
  std::mutex assign_mu_;
  size_t next_slot_ = 0;
  bool stopped_ = false;
};

}  // namespace icestream::log
