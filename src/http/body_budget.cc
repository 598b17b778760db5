// BodyBudget (see body_budget.h).
#include "http/body_budget.h"

#include <algorithm>
#include <vector>

namespace icestream::http {

size_t BodyBudget::used() const {
  std::lock_guard lock(mu_);
  return used_;
}

bool BodyBudget::HasRoom() const {
  std::lock_guard lock(mu_);
  return used_ < limit_;
}

bool BodyBudget::TryCharge(size_t n) {
  std::lock_guard lock(mu_);
  if (used_ + n > limit_) return false;
  used_ += n;
  return true;
}

void BodyBudget::Charge(size_t n) {
  std::lock_guard lock(mu_);
  used_ += n;
}

void BodyBudget::Release(size_t n) {
  if (n == 0) return;
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard lock(mu_);
    used_ -= std::min(used_, n);
    if (used_ >= limit_) return;
    // Everyone waiting retries: the budget does not know how much each one needs.
    for (auto& [ticket, fn] : waiters_) wake.push_back(std::move(fn));
    waiters_.clear();
  }
  for (auto& fn : wake) fn();
}

uint64_t BodyBudget::WhenRoom(std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    if (used_ >= limit_) {
      uint64_t ticket = next_ticket_++;
      waiters_.emplace_back(ticket, std::move(fn));
      return ticket;
    }
  }
  fn();
  return 0;
}

void BodyBudget::Cancel(uint64_t ticket) {
  if (ticket == 0) return;
  std::function<void()> dropped;  // destroyed outside the lock: it may hold a connection
  std::lock_guard lock(mu_);
  for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
    if (it->first == ticket) {
      dropped = std::move(it->second);
      waiters_.erase(it);
      break;
    }
  }
}

}  // namespace icestream::http
