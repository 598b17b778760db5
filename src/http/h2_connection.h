// The HTTP/2 side of one server connection (RFC 9113), on libnghttp2: frames in, requests
// out to the handler, responses (whole or streamed) back as frames. Knows nothing of
// sockets or TLS: the connection's I/O glue in server.cc feeds it the bytes it reads and
// writes the bytes it takes out.
//
// Lifetime and threads: created by the glue, which owns it; every method must run on the
// connection's strand (the glue's), except through `post`, which handlers and body writers
// use from any thread. Responders keep it alive until they have answered.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "http/message.h"

struct nghttp2_session;

namespace icestream::http {

struct H2Options {
  size_t max_body_bytes = 16u << 20;
  size_t max_header_bytes = 64u << 10;
  uint32_t max_concurrent_streams = 128;
  // Receive windows: large enough that a multi-MiB PutRecords body is not paced by
  // WINDOW_UPDATE round trips; request bodies are held in memory anyway (max_body_bytes).
  int32_t stream_window_bytes = 4 << 20;
  int32_t connection_window_bytes = 32 << 20;
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

  // Sends GOAWAY naming the last stream taken: streams already taken are answered, new
  // ones refused; the connection then ends by itself (Finished()).
  void GoAway();
  // The glue lost its transport: body writers see `closed()`, nothing more is sent.
  void Abort();

  struct StreamState;

 private:
  H2Connection(H2Options options, H2Env env);
  Status Init();
  void Dispatch(int32_t stream_id);
  void Respond(int32_t stream_id, Response r);
  void SubmitSimple(int32_t stream_id, int status);
  void ResumeBody(int32_t stream_id);
  // A stream holds a share of the server's in-flight count from its first frame until it
  // is answered or gone (Settle), so Stop() also waits for requests still uploading.
  void AddStream(int32_t stream_id, std::unique_ptr<StreamState> s);
  void Settle(StreamState* s);

  friend struct H2Callbacks;

  H2Options options_;
  H2Env env_;
  nghttp2_session* session_ = nullptr;
  std::map<int32_t, std::unique_ptr<StreamState>> streams_;
  bool fatal_ = false;
  bool aborted_ = false;
};

}  // namespace icestream::http
