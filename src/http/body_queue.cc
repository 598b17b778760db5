// BodyQueue (see body_queue.h).
#include "http/body_queue.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace icestream::http {

BodyQueue::~BodyQueue() {
  // Whatever is still counted leaves the connection's shared count with the queue.
  if (accounting_.shared && pending_ > 0) {
    accounting_.shared->fetch_sub(static_cast<int64_t>(pending_));
  }
}

bool BodyQueue::Write(std::string piece) {
  {
    std::lock_guard lock(mu_);
    if (closed_ || finished_) return false;
    pending_ += piece.size();
    if (accounting_.shared) accounting_.shared->fetch_add(static_cast<int64_t>(piece.size()));
    queue_.push_back(std::move(piece));
  }
  Kick();
  return true;
}

void BodyQueue::Finish() {
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    finished_ = true;
  }
  Kick();
}

size_t BodyQueue::pending_bytes() const {
  std::lock_guard lock(mu_);
  return pending_;
}

bool BodyQueue::closed() const {
  std::lock_guard lock(mu_);
  return closed_ || stopping_->load();
}

bool BodyQueue::CongestedLocked() const {
  if (closed_) return false;
  if (pending_ > max_queued_) return true;
  return accounting_.shared && accounting_.shared->load() >= accounting_.budget;
}

bool BodyQueue::congested() const {
  std::lock_guard lock(mu_);
  return CongestedLocked();
}

void BodyQueue::WhenWritable(std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    if (CongestedLocked()) {
      on_writable_ = std::move(fn);
      return;
    }
    on_writable_ = nullptr;
  }
  fn();
}

std::function<void()> BodyQueue::TakeWritableLocked() {
  if (!on_writable_ || CongestedLocked()) return nullptr;
  return std::exchange(on_writable_, nullptr);
}

void BodyQueue::CheckWritable() {
  std::function<void()> fn;
  {
    std::lock_guard lock(mu_);
    fn = TakeWritableLocked();
  }
  if (fn) fn();
}

void BodyQueue::Unqueue(size_t n) {
  n = std::min(pending_, n);
  pending_ -= n;
  if (accounting_.shared) accounting_.shared->fetch_sub(static_cast<int64_t>(n));
}

std::optional<std::string> BodyQueue::TakePiece() {
  std::lock_guard lock(mu_);
  if (queue_.empty()) return std::nullopt;
  std::string s = std::move(queue_.front());
  queue_.pop_front();
  if (offset_) s.erase(0, std::exchange(offset_, 0));
  return s;
}

void BodyQueue::Written(size_t n) {
  std::function<void()> fn;
  {
    std::lock_guard lock(mu_);
    Unqueue(n);
    fn = TakeWritableLocked();
  }
  if (fn) fn();
}

size_t BodyQueue::Pull(uint8_t* dst, size_t n) {
  std::function<void()> fn;
  size_t done = 0;
  {
    std::lock_guard lock(mu_);
    while (done < n && !queue_.empty()) {
      std::string& front = queue_.front();
      size_t take = std::min(n - done, front.size() - offset_);
      std::memcpy(dst + done, front.data() + offset_, take);
      done += take;
      offset_ += take;
      if (offset_ == front.size()) {
        queue_.pop_front();
        offset_ = 0;
      }
    }
    Unqueue(done);
    fn = TakeWritableLocked();
  }
  if (fn) fn();
  return done;
}

bool BodyQueue::finished() const {
  std::lock_guard lock(mu_);
  return finished_;
}

bool BodyQueue::drained_and_finished() const {
  std::lock_guard lock(mu_);
  return finished_ && queue_.empty();
}

bool BodyQueue::connection_closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

void BodyQueue::MarkClosed() {
  std::function<void()> kick, writable;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    queue_.clear();
    offset_ = 0;
    Unqueue(pending_);
    kick = std::move(kick_);
    kick_ = nullptr;
    writable = std::exchange(on_writable_, nullptr);
  }
  // Called outside the lock (the producer learns it may stop); the kick is destroyed
  // outside it too: it may hold the last reference to the connection.
  if (writable) writable();
}

void BodyQueue::Kick() {
  std::function<void()> kick;
  {
    std::lock_guard lock(mu_);
    kick = kick_;
  }
  if (kick) kick();
}

}  // namespace icestream::http
