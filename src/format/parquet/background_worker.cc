// Single-thread task queue.
#include "format/parquet/background_worker.h"

namespace icestream::format::parquet {

BackgroundWorker::BackgroundWorker(size_t max_queued)
    : max_queued_(max_queued), thread_([this] { Run(); }) {}

BackgroundWorker::~BackgroundWorker() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void BackgroundWorker::Submit(std::function<Status()> task) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return queue_.size() < max_queued_; });
    queue_.push_back(std::move(task));
  }
  cv_.notify_all();
}

Status BackgroundWorker::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
  return error_;
}

void BackgroundWorker::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and nothing left
    auto task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    cv_.notify_all();  // a blocked Submit may proceed
    Status st = task();
    lock.lock();
    if (!st.ok() && error_.ok()) error_ = st;
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace icestream::format::parquet
