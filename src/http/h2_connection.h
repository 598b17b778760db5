// The HTTP/2 side of one server connection (RFC 9113), on libnghttp2: frames in, requests
// out to the handler, responses (whole or streamed) back as frames. Knows nothing of
// sockets or TLS: the connection's I/O glue (h2_glue.cc) feeds it the bytes it reads and
// writes the bytes it takes out.
//
// Memory a peer can make it hold is bounded by the connection's budget
// (H2Options::budget_bytes): request bodies received and not yet answered, answers not
// yet sent (whole bodies and streamed ones) and a reservation for each running handler
// are counted together. Window credit for request bodies is returned only as they are
// consumed and only while the connection (and the server's BodyBudget) has room, so a peer
// cannot upload more than the budget plus one receive window; while the budget is spent,
// complete requests wait before their handlers run, streamed bodies report congestion,
// and handlers that choose their answer's size (Request::reserve_response) get less.
// Streams reset before their handler started do not run it; handlers still running for
// reset streams count against the concurrent-stream limit (new streams are refused with
// REFUSED_STREAM), so resets cannot pile up work (the CVE-2023-44487 pattern).
//
// Lifetime and threads: created by the glue, which owns it; every method must run on the
// connection's strand (the glue's), except through `post`, which handlers and body writers
// use from any thread. Responders keep it alive until they have answered.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "http/message.h"

struct nghttp2_session;

namespace icestream::http {

class BodyBudget;

struct H2Options {
  size_t max_body_bytes = 16u << 20;
  size_t max_header_bytes = 64u << 10;
  uint32_t max_concurrent_streams = 128;
  // Bytes the connection holds for its peer at most (see above), and its receive windows.
  // The stream window lets a multi-MiB PutRecords body arrive without waiting for
  // WINDOW_UPDATE round trips; the connection window is what a peer may send beyond the
  // budget before credit stops.
  size_t budget_bytes = 64u << 20;
  int32_t stream_window_bytes = 4 << 20;
  int32_t connection_window_bytes = 16 << 20;
  // A request body that has waited this long for window credit (budgets spent) is
  // answered 503 and its stream reset, freeing what it holds.
  int64_t credit_wait_ms = 10000;
};

// What the connection needs from the server around it.
struct H2Env {
  Handler handler;
  std::atomic<int>* inflight = nullptr;         // requests dispatched, not yet fully answered
  const std::atomic<bool>* stopping = nullptr;  // the server is shutting down
  // Runs `fn` on the connection's strand, then lets the glue write what it produced.
  // Must run `fn` even after the glue is gone (so responders always settle).
  std::function<void(std::function<void()>)> post;
  // Runs a handler call on any I/O thread (not the strand). Empty: inline.
  std::function<void(std::function<void()>)> run;
  std::string remote_address;
  // The server-wide bound on request-body bytes (may be null: none).
  BodyBudget* bodies = nullptr;
  // Milliseconds of a monotonic clock (tests inject one). Empty: steady_clock.
  std::function<int64_t()> now_ms;
};

class H2Connection : public std::enable_shared_from_this<H2Connection> {
 public:
  static Result<std::shared_ptr<H2Connection>> Make(H2Options options, H2Env env);
  ~H2Connection();
  H2Connection(const H2Connection&) = delete;
  H2Connection& operator=(const H2Connection&) = delete;

  // Continues an HTTP/1.1 request that asked for `Upgrade: h2c` (RFC 7540 §3.2): the
  // request becomes stream 1 and is dispatched. `settings_b64url` is its HTTP2-Settings.
  Status Upgrade(std::string_view settings_b64url, std::shared_ptr<Request> request);

  // Feeds bytes read from the peer. False: the connection is beyond saving (bad preface,
  // protocol error); write out what TakeOutput() still gives (a GOAWAY), then close.
  bool Receive(const uint8_t* data, size_t n);
  // Frames ready to be written (up to about `max` bytes); empty when there are none.
  std::string TakeOutput(size_t max = 1u << 20);
  // True when both sides are done (GOAWAY exchanged and no stream left, or a fatal error):
  // close once TakeOutput() is empty.
  bool Finished() const;
  // Streams open or awaiting their handler.
  size_t active_streams() const { return streams_.size(); }
  // Nothing open, nothing running, nothing to send: the connection may be closed to make
  // room for another (the server's connection cap).
  bool idle() const;
  // Bytes held for the peer now (see above).
  int64_t held_bytes() const { return used_->load(); }
  // True while something waits on time (a request body waiting for credit): the glue then
  // calls Tick about once a second.
  bool NeedsTick() const;
  void Tick();

  // Sends GOAWAY naming the last stream taken: streams already taken are answered, new
  // ones refused; the connection then ends by itself (Finished()).
  void GoAway();
  // The glue lost its transport: body writers see `closed()`, nothing more is sent.
  void Abort();

  struct StreamState;

 private:
  H2Connection(H2Options options, H2Env env);
  Status Init();
  int64_t Now() const;
  // A complete request (or one answered early): run its handler now, or queue it while
  // the budget is spent.
  void Ready(int32_t stream_id);
  void Dispatch(int32_t stream_id);
  void DispatchQueued();
  void Respond(int32_t stream_id, Response r);
  void SubmitSimple(int32_t stream_id, int status);
  void ResumeBody(int32_t stream_id);
  // Returns window credit for received body bytes while the budgets allow; true when some
  // was returned (WINDOW_UPDATE frames to send).
  bool ReturnCredit();
  // Frees a stream's request body (its share of the budgets and its withheld credit).
  void ReleaseBody(StreamState* s);
  void NotifyWritable();
  // A stream holds a share of the server's in-flight count from its first frame until it
  // is answered or gone (Settle), so Stop() also waits for requests still uploading.
  void AddStream(int32_t stream_id, std::unique_ptr<StreamState> s);
  void Settle(StreamState* s);
  bool OverBudget() const;

  friend struct H2Callbacks;

  H2Options options_;
  H2Env env_;
  nghttp2_session* session_ = nullptr;
  std::map<int32_t, std::unique_ptr<StreamState>> streams_;
  // Everything held for the peer (bodies, answers, reservations, streamed bytes): shared
  // with streamed bodies' queues and with handlers' reserve_response, hence atomic.
  std::shared_ptr<std::atomic<int64_t>> used_ = std::make_shared<std::atomic<int64_t>>(0);
  std::deque<int32_t> ready_;  // complete requests waiting for the budget, oldest first
  // Streams that are gone (reset) while their handler is queued or running: counted
  // against the stream limit, freed when the handler answers.
  std::map<int32_t, std::unique_ptr<StreamState>> orphaned_;
  uint64_t room_ticket_ = 0;  // waiting on the server's BodyBudget
  bool fatal_ = false;
  bool aborted_ = false;
};

}  // namespace icestream::http
