// One thread, tasks in posting order.
#include "server/task_thread.h"

#include <pthread.h>

namespace icestream::server {

TaskThread::TaskThread(const char* name) : thread_([this] { Run(); }) {
  pthread_setname_np(thread_.native_handle(), name);
}

TaskThread::~TaskThread() { Stop(); }

void TaskThread::Post(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    if (!stop_) {
      queue_.push_back(std::move(task));
      cv_.notify_one();
      return;
    }
  }
  task();  // stopping: nothing may be dropped (every request gets its answer)
}

void TaskThread::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

void TaskThread::Run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued has run
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace icestream::server
