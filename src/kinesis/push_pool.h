// PushPool: a few threads that run many long-lived, cooperative tasks (the SubscribeToShard
// pushers). A task does a bounded step of work when woken — by an append to its shard, by
// its body writer having room again, by a timer — and then returns; it never blocks or
// sleeps on a pool thread. So 1,000 subscriptions cost the pool's threads, not 1,000, and
// a task is woken only by what concerns it.
//
// Thread-safety: Wake and WakeAt may be called from any thread, also from within a step.
// A task woken while it runs steps again after it returns (never two steps at once).
// Lifetime: Stop() (or the destructor) runs no more steps and joins the threads; tasks
// still registered are dropped.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace icestream::kinesis {

class PushPool {
 public:
  class Task {
   public:
    virtual ~Task() = default;
    // One bounded step; the task wakes itself again (Wake, WakeAt, or callbacks that do)
    // if it has more to do.
    virtual void Step() = 0;

   private:
    friend class PushPool;
    enum class State { kIdle, kQueued, kRunning, kRunningWoken };
    State state_ = State::kIdle;  // under the pool's lock
    // Its earliest pending timer (a later WakeAt adds none: the step it causes sets the
    // next one), so a task keeps at most a couple of timer entries.
    std::chrono::steady_clock::time_point timer_{};
  };
  using Clock = std::chrono::steady_clock;

  explicit PushPool(size_t threads);
  ~PushPool();
  PushPool(const PushPool&) = delete;
  PushPool& operator=(const PushPool&) = delete;

  void Wake(const std::shared_ptr<Task>& task);
  void WakeAt(const std::shared_ptr<Task>& task, Clock::time_point when);
  void Stop();
  size_t threads() const { return threads_.size(); }

 private:
  void Loop();
  void WakeLocked(const std::shared_ptr<Task>& task);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Task>> ready_;
  std::multimap<Clock::time_point, std::weak_ptr<Task>> timers_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace icestream::kinesis
