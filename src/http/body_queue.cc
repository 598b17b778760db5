// BodyQueue (see body_queue.h).
#include "http/body_queue.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace icestream::http {

bool BodyQueue::Write(std::string piece) {
  {
    std::lock_guard lock(mu_);
    if (closed_ || finished_) return false;
    pending_ += piece.size();
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

std::optional<std::string> BodyQueue::TakePiece() {
  std::lock_guard lock(mu_);
  if (queue_.empty()) return std::nullopt;
  std::string s = std::move(queue_.front());
  queue_.pop_front();
  if (offset_) s.erase(0, std::exchange(offset_, 0));
  return s;
}

void BodyQueue::Written(size_t n) {
  std::lock_guard lock(mu_);
  pending_ -= std::min(pending_, n);
}

size_t BodyQueue::Pull(uint8_t* dst, size_t n) {
  std::lock_guard lock(mu_);
  size_t done = 0;
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
  pending_ -= std::min(pending_, done);
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
  std::function<void()> kick;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    queue_.clear();
    offset_ = 0;
    pending_ = 0;
    kick = std::move(kick_);
    kick_ = nullptr;
  }
  // Destroyed outside the lock: it may hold the last reference to the connection.
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
