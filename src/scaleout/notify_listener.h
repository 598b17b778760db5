// NotifyListener: PostgreSQL notifications (LISTEN/NOTIFY) of one channel, handed to the
// watchers of their payload, so a process learns of another's writes at once instead of
// polling for them (a table channel's control holder learns that a shard batch was staged:
// pg_staging_store.h).
//
// One connection of its own (not the pool's: it stays in LISTEN) and one thread. When the
// connection breaks it reconnects with a growing pause (0.1 s doubling to 5 s); since a
// notification sent meanwhile is lost, every watcher is called once after each (re)connect.
// So a watcher must treat a call as "look now", never as a count of events, and a caller
// still looks on its own schedule now and then (PostgreSQL drops notifications of a
// listener that falls too far behind, too).
//
// Thread-safety: Watch and the handles' release from any thread. Watchers run on the
// listener's thread, one at a time, and must be quick (set a flag, wake a thread); once a
// handle is released its watcher is not running and is never called again.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/watchers.h"

namespace icestream::scaleout {

class NotifyListener {
 public:
  // Starts listening on PostgreSQL channel `channel` (an identifier: letters, digits, _).
  // Never fails: an unreachable database is retried on the listener's thread.
  NotifyListener(std::string conninfo, std::string channel);
  // Stops the thread: within a quarter second, or up to 2 s while it connects to a
  // database that does not answer.
  ~NotifyListener();
  NotifyListener(const NotifyListener&) = delete;
  NotifyListener& operator=(const NotifyListener&) = delete;

  // Calls `fn` for each notification whose payload is `key` (and after each reconnect)
  // until the returned handle is released.
  std::shared_ptr<void> Watch(const std::string& key, std::function<void()> fn) {
    return watchers_.Add(key, std::move(fn));
  }

  // Times the listener has connected, issued LISTEN and called every watcher (for tests).
  int64_t connects() const { return connects_.load(); }

 private:
  void Loop();
  bool Pause(int64_t ms);  // false when stopping

  const std::string conninfo_;
  const std::string channel_;
  std::mutex mu_;  // stopping_
  std::condition_variable cv_;
  bool stopping_ = false;
  Watchers watchers_;
  std::atomic<int64_t> connects_{0};
  std::thread thread_;
};

}  // namespace icestream::scaleout
