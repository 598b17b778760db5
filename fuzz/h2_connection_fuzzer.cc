// Fuzzes the server's HTTP/2 connection (http/h2_connection.h) with the bytes a client
// sends: the preface, frames, HPACK blocks, bodies. Every request is answered (whole
// bodies, and a streamed one for /stream). Invariants: no crash or sanitizer report; every
// request taken is settled once the connection is aborted (the in-flight count is back
// to zero), as Server::Stop relies on.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <string>

#include "http/h2_connection.h"

using namespace icestream;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::atomic<int> inflight{0};
  std::atomic<bool> stopping{false};
  std::deque<std::function<void()>> posted;  // the "strand": run between reads
  http::H2Env env;
  env.inflight = &inflight;
  env.stopping = &stopping;
  env.post = [&posted](std::function<void()> fn) { posted.push_back(std::move(fn)); };
  env.handler = [](std::shared_ptr<http::Request> req, http::Responder respond) {
    http::Response r;
    r.SetHeader("Content-Type", "application/x-amz-json-1.1");
    if (req->path == "/stream") {
      r.stream = [](std::shared_ptr<http::BodyWriter> w) {
        w->Write("first");
        w->Write(std::string(70000, 'x'));  // past the default stream window
        w->Finish();
      };
    } else {
      r.body = req->method + req->path + req->body;
    }
    respond(std::move(r));
  };
  http::H2Options options;
  options.max_body_bytes = 4096;
  options.max_header_bytes = 2048;
  auto conn = http::H2Connection::Make(options, env);
  if (!conn.ok()) std::abort();
  // Fed in pieces, as reads would deliver them; the first byte picks the piece size.
  size_t piece = size ? 1 + data[0] % 64 : 1;
  for (size_t at = size ? 1 : 0; at < size; at += piece) {
    size_t n = std::min(piece, size - at);
    bool ok = (*conn)->Receive(data + at, n);
    while (!posted.empty()) {
      auto fn = std::move(posted.front());
      posted.pop_front();
      fn();
    }
    (*conn)->TakeOutput();
    if (!ok) break;
  }
  (*conn)->GoAway();
  (*conn)->TakeOutput();
  (*conn)->Abort();
  while (!posted.empty()) {
    auto fn = std::move(posted.front());
    posted.pop_front();
    fn();
  }
  if (inflight.load() != 0) std::abort();
  return 0;
}
