// HTTP server (Boost.Beast for HTTP/1.1, libnghttp2 for HTTP/2, OpenSSL for TLS, all
// behind a pimpl). One port serves every protocol: a connection is sniffed by its first
// bytes — a TLS ClientHello (when a certificate is configured; ALPN picks `h2` or
// `http/1.1`), the HTTP/2 client preface (h2c with prior knowledge), or HTTP/1.1, which
// may upgrade to h2c (`Upgrade: h2c`, RFC 7540 §3.2). HTTP/1.1: keep-alive, Expect:
// 100-continue, body limit (413), header limit (431), malformed requests answered 400 (a
// bad or negative Content-Length, Content-Length together with Transfer-Encoding).
// HTTP/2: many concurrent streams, flow control, the same limits per stream, GOAWAY on
// Stop(). Both: a cap on open connections, idle connections closed, accept backing off
// when the process runs out of descriptors, handlers that complete asynchronously from
// any thread, streamed response bodies (chunked on HTTP/1.1, DATA frames on HTTP/2).
//
// What a client can make the server hold is bounded: request bodies grow as their bytes
// arrive (never to an announced Content-Length) within a server-wide budget
// (max_request_bytes_in_flight; a body that waits longer than body_wait_seconds for room
// is answered 503); an HTTP/2 connection holds at most h2_connection_budget_bytes of
// bodies and unread answers (h2_connection.h); a connection must send its first bytes,
// finish its TLS handshake and each request header within first_byte_timeout_seconds;
// at the connection cap the connection idle longest is closed to make room.
//
// Lifetime: Start() listens and runs the I/O threads; Stop() stops accepting, sends
// GOAWAY on HTTP/2 connections, waits (bounded) for in-flight requests to be answered,
// then closes every connection and joins the threads. Thread-safety: Stop may be called
// from any thread, once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "http/message.h"

namespace icestream::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 4567;  // 0 = any free port
  size_t threads = 2;
  size_t max_body_bytes = 16u << 20;
  size_t max_header_bytes = 64u << 10;  // larger request headers get 431
  // Open connections at most (each holds a descriptor). At the cap the connection idle
  // longest is closed for a new one; when none is idle, new clients wait in the listen
  // backlog until one closes.
  size_t max_connections = 4096;
  int idle_timeout_seconds = 300;  // a keep-alive connection idle this long is closed
  // A new connection's first bytes, its TLS handshake, and a request header once begun
  // must arrive within this many seconds.
  int first_byte_timeout_seconds = 10;
  // Request-body bytes held at once, all connections together (at least max_body_bytes);
  // bodies of 64 KiB or less are always taken (their bound is the connection cap).
  size_t max_request_bytes_in_flight = 256u << 20;
  int body_wait_seconds = 10;  // a body waiting this long for room is answered 503
  // Bytes one HTTP/2 connection holds for its peer at most: request bodies, answers not
  // yet read, streamed events (see h2_connection.h).
  size_t h2_connection_budget_bytes = 64u << 20;
  int stop_grace_seconds = 30;
  // TLS: PEM certificate chain and private key. Both empty: plaintext only. With them,
  // the port takes TLS (ALPN h2, http/1.1) and still plaintext.
  std::string tls_cert_file;
  std::string tls_key_file;
  uint32_t h2_max_concurrent_streams = 128;
};

class Server {
 public:
  static Result<std::unique_ptr<Server>> Start(ServerOptions options, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;
  // Runs `fn` on one of the I/O threads (used to move work off other threads).
  void Post(std::function<void()> fn);
  void Stop();

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace icestream::http
