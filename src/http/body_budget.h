// BodyBudget: the server-wide bound on request-body bytes held in memory — bytes received
// (or about to be read) whose request has not been answered yet. HTTP/1.1 sessions charge
// each piece of a body before reading it and wait for room when the budget is spent;
// HTTP/2 connections charge bytes as they arrive and withhold flow-control credit while
// the budget is spent, so peers stop sending. A connection's share is released when its
// request is answered (or abandoned).
//
// Thread-safe. Waiters are called (from the releasing thread) when room may be there; a
// waiter must re-check with TryCharge and may wait again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <utility>

namespace icestream::http {

class BodyBudget {
 public:
  explicit BodyBudget(size_t limit) : limit_(limit) {}
  BodyBudget(const BodyBudget&) = delete;
  BodyBudget& operator=(const BodyBudget&) = delete;

  size_t limit() const { return limit_; }
  size_t used() const;
  bool HasRoom() const;
  // Charges `n` bytes when they fit; false (nothing charged) otherwise.
  bool TryCharge(size_t n);
  // Charges unconditionally: bytes that already arrived, or a small body that must not
  // wait behind big ones (its bound comes from the connection cap).
  void Charge(size_t n);
  void Release(size_t n);
  // Calls `fn` once, in arrival order, after some bytes were released (or now, when there
  // is room already). Returns a ticket for Cancel.
  uint64_t WhenRoom(std::function<void()> fn);
  void Cancel(uint64_t ticket);

 private:
  mutable std::mutex mu_;
  const size_t limit_;
  size_t used_ = 0;
  uint64_t next_ticket_ = 1;
  std::deque<std::pair<uint64_t, std::function<void()>>> waiters_;
};

}  // namespace icestream::http
