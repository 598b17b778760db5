// The queue behind a streamed response body (http::BodyWriter), shared by HTTP/1.1
// (chunks) and HTTP/2 (DATA frames).
//
// Producers Write pieces and Finish from any thread; each call wakes the connection's
// strand through `kick`. The strand takes pieces out whole (TakePiece, then Written once
// they reached the socket) or by bytes (Pull). MarkClosed ends it from the connection's
// side: producers then see closed() and their writes fail; the kick (which may hold the
// connection) is dropped.
//
// Congestion: the queue is congested while more than `max_queued` bytes wait, or while the
// connection's shared byte count (`shared`, HTTP/2: everything the connection holds for
// its peer) is at its budget. Queued bytes are added to and removed from `shared` as they
// come and go. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "http/message.h"

namespace icestream::http {

// What a queue's bytes count towards beside itself (HTTP/2: the connection's budget).
struct QueueAccounting {
  std::shared_ptr<std::atomic<int64_t>> shared;  // the connection's bytes held
  int64_t budget = 0;                            // congested at or above this
};

class BodyQueue : public BodyWriter {
 public:
  // A body's queued bytes beyond which it is congested on its own.
  static constexpr size_t kDefaultMaxQueued = 4u << 20;
  using Accounting = QueueAccounting;

  // `stopping`: the server's flag; closed() is true once it is set, so producers finish.
  BodyQueue(std::function<void()> kick, const std::atomic<bool>* stopping,
            Accounting accounting = {}, size_t max_queued = kDefaultMaxQueued)
      : kick_(std::move(kick)),
        stopping_(stopping),
        accounting_(std::move(accounting)),
        max_queued_(max_queued) {}
  ~BodyQueue() override;

  bool Write(std::string piece) override;
  void Finish() override;
  size_t pending_bytes() const override;
  bool closed() const override;
  bool congested() const override;
  void WhenWritable(std::function<void()> fn) override;

  // Strand side. The next whole piece; it stays in pending_bytes() until Written().
  std::optional<std::string> TakePiece();
  void Written(size_t n);
  // Copies up to `n` queued bytes into `dst` (counted as sent at once); returns how many.
  size_t Pull(uint8_t* dst, size_t n);
  bool finished() const;
  bool drained_and_finished() const;
  // Closed by the connection (not merely the server stopping).
  bool connection_closed() const;
  void MarkClosed();
  // Fires the WhenWritable callback if congestion cleared (the connection calls it when
  // its shared count went down for other reasons).
  void CheckWritable();

 private:
  void Kick();
  bool CongestedLocked() const;
  void Unqueue(size_t n);  // under mu_
  std::function<void()> TakeWritableLocked();

  mutable std::mutex mu_;
  std::function<void()> kick_;  // dropped by MarkClosed
  const std::atomic<bool>* stopping_;
  const Accounting accounting_;
  const size_t max_queued_;
  std::deque<std::string> queue_;
  size_t offset_ = 0;  // bytes of queue_.front() already pulled
  size_t pending_ = 0;
  bool finished_ = false;
  bool closed_ = false;
  std::function<void()> on_writable_;
};

}  // namespace icestream::http
