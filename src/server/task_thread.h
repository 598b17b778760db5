// TaskThread: one thread that runs posted tasks in order, for work that must not hold the
// I/O threads (large CBOR bodies are transcoded here; see Router::SetOffload).
//
// Thread-safety: Post() from any thread. Stop() runs what is queued, then joins; tasks
// posted after Stop() run on the caller's thread (nothing is dropped). The destructor
// stops.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace icestream::server {

class TaskThread {
 public:
  // `name`: the thread's name as ps and /proc show it (at most 15 characters).
  explicit TaskThread(const char* name);
  ~TaskThread();
  TaskThread(const TaskThread&) = delete;
  TaskThread& operator=(const TaskThread&) = delete;

  void Post(std::function<void()> task);
  void Stop();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace icestream::server
