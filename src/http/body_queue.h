// The queue behind a streamed response body (http::BodyWriter), shared by HTTP/1.1
// (chunks) and HTTP/2 (DATA frames).
//
// Producers Write pieces and Finish from any thread; each call wakes the connection's
// strand through `kick`. The strand takes pieces out whole (TakePiece, then Written once
// they reached the socket) or by bytes (Pull). MarkClosed ends it from the connection's
// side: producers then see closed() and their writes fail; the kick (which may hold the
// connection) is dropped. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "http/message.h"

namespace icestream::http {

class BodyQueue : public BodyWriter {
 public:
  // `stopping`: the server's flag; closed() is true once it is set, so producers finish.
  BodyQueue(std::function<void()> kick, const std::atomic<bool>* stopping)
      : kick_(std::move(kick)), stopping_(stopping) {}

  bool Write(std::string piece) override;
  void Finish() override;
  size_t pending_bytes() const override;
  bool closed() const override;

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

 private:
  void Kick();

  mutable std::mutex mu_;
  std::function<void()> kick_;  // dropped by MarkClosed
  const std::atomic<bool>* stopping_;
  std::deque<std::string> queue_;
  size_t offset_ = 0;  // bytes of queue_.front() already pulled
  size_t pending_ = 0;
  bool finished_ = false;
  bool closed_ = false;
};

}  // namespace icestream::http
