// PushPool (see push_pool.h).
#include "kinesis/push_pool.h"

#include <spdlog/spdlog.h>

namespace icestream::kinesis {

PushPool::PushPool(size_t threads) {
  for (size_t i = 0; i < std::max<size_t>(1, threads); ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
}

PushPool::~PushPool() { Stop(); }

void PushPool::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  std::lock_guard lock(mu_);
  ready_.clear();
  timers_.clear();
}

void PushPool::WakeLocked(const std::shared_ptr<Task>& task) {
  switch (task->state_) {
    case Task::State::kIdle:
      task->state_ = Task::State::kQueued;
      ready_.push_back(task);
      cv_.notify_one();
      break;
    case Task::State::kRunning:
      task->state_ = Task::State::kRunningWoken;
      break;
    case Task::State::kQueued:
    case Task::State::kRunningWoken:
      break;
  }
}

void PushPool::Wake(const std::shared_ptr<Task>& task) {
  std::lock_guard lock(mu_);
  if (stopping_) return;
  WakeLocked(task);
}

void PushPool::WakeAt(const std::shared_ptr<Task>& task, Clock::time_point when) {
  std::lock_guard lock(mu_);
  if (stopping_) return;
  if (task->timer_ != Clock::time_point{} && task->timer_ <= when) return;
  task->timer_ = when;
  bool earliest = timers_.empty() || when < timers_.begin()->first;
  timers_.emplace(when, task);
  if (earliest) cv_.notify_one();
}

void PushPool::Loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    auto now = Clock::now();
    while (!timers_.empty() && timers_.begin()->first <= now) {
      if (auto t = timers_.begin()->second.lock()) {
        if (t->timer_ == timers_.begin()->first) t->timer_ = {};
        WakeLocked(t);
      }
      timers_.erase(timers_.begin());
    }
    if (ready_.empty()) {
      if (timers_.empty()) {
        cv_.wait(lock);
      } else {
        cv_.wait_until(lock, timers_.begin()->first);
      }
      continue;
    }
    std::shared_ptr<Task> task = std::move(ready_.front());
    ready_.pop_front();
    task->state_ = Task::State::kRunning;
    lock.unlock();
    try {
      task->Step();
    } catch (const std::exception& e) {
      spdlog::error("push task: {}", e.what());
    }
    lock.lock();
    if (task->state_ == Task::State::kRunningWoken) {
      task->state_ = Task::State::kQueued;
      ready_.push_back(std::move(task));
    } else {
      task->state_ = Task::State::kIdle;
    }
  }
}

}  // namespace icestream::kinesis
