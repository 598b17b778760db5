// Internal to the HTTP server (server.cc, sniffer.cc, http1_session.cc, h2_glue.cc): the
// server's shared state, the base of every connection, and the hand-offs between the
// parts. Includes Asio and OpenSSL; only the four server files include it.
//
//   accept loop (server.cc) ─► Sniffer (sniffer.cc: first bytes, TLS handshake, ALPN)
//                               ├─► Http1Session (http1_session.cc) ─┐ h2c upgrade
//                               └─► H2Io (h2_glue.cc) ◄──────────────┘
#pragma once

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "http/body_budget.h"
#include "http/h2_connection.h"
#include "http/server.h"

namespace icestream::http {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;
using TlsStream = ssl::stream<tcp::socket>;

// The HTTP/2 connection preface a client sends first (RFC 9113 §3.4).
constexpr std::string_view kH2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

class Connection;

struct Server::Impl {
  ServerOptions options;
  Handler handler;
  // Declared before ioc: sessions still queued in ioc when it is destroyed report their
  // end through these (SessionClosed), so they must outlive it.
  std::atomic<int> inflight{0};
  std::atomic<bool> stopping{false};
  BodyBudget bodies;
  std::mutex sessions_mu;
  std::set<std::weak_ptr<Connection>, std::owner_less<std::weak_ptr<Connection>>> sessions;
  // Connection cap: open sessions; accepting pauses at the cap when no connection is idle
  // (guarded by sessions_mu).
  size_t open_sessions = 0;
  bool accept_paused = false;

  net::io_context ioc;
  std::optional<ssl::context> tls;  // set when a certificate is configured
  // Keeps run() going while a request waits for its handler and nothing else is queued.
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::optional<tcp::acceptor> acceptor;
  // Backoff after accept fails for want of descriptors (EMFILE/ENFILE); acceptor thread.
  std::optional<net::steady_timer> accept_backoff;
  int backoff_ms = 0;
  int64_t last_backoff_log_ms = 0;
  uint64_t accept_failures = 0;
  uint64_t evictions = 0;
  int64_t last_evict_log_ms = 0;
  std::vector<std::thread> threads;
  uint16_t port = 0;

  Impl(ServerOptions o, Handler h)
      : options(std::move(o)),
        handler(std::move(h)),
        bodies(std::max(options.max_request_bytes_in_flight, options.max_body_bytes)) {}
  void Accept();
  void OnAccepted(boost::system::error_code ec, tcp::socket socket);
  // Counts a new connection (accepted, or taking over from another).
  void Register(const std::shared_ptr<Connection>& c);
  // At the connection cap: closes the connection idle longest (not `except`); false when
  // none is idle.
  bool EvictIdle(const Connection* except);
  void SessionClosed();
  H2Options h2_options() const;
};

// One accepted connection, whatever its protocol; counted while it lives.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  explicit Connection(Server::Impl* server) : server_(server) {}
  virtual ~Connection() { server_->SessionClosed(); }
  // Stop(), first: stop taking new requests (HTTP/2 sends GOAWAY). Any thread.
  virtual void GoAway() {}
  // Stop(), last: close now. Any thread.
  virtual void Shutdown() = 0;
  // At the connection cap: closes the connection if it is still idle when its strand gets
  // to it. Any thread.
  virtual void CloseIfIdle() = 0;
  // Since when (monotonic ms) the connection waits for its peer with nothing in progress;
  // 0 while it is busy.
  int64_t idle_since() const { return idle_since_.load(); }

 protected:
  void SetIdle(bool idle);
  Server::Impl* server_;
  std::atomic<int64_t> idle_since_{0};
};

int64_t NowMs();

inline tcp::socket& Lowest(tcp::socket& s) { return s; }
inline tcp::socket& Lowest(TlsStream& s) { return s.next_layer(); }

// Hand-offs between the parts (explicitly instantiated for tcp::socket and TlsStream in
// their files). `initial`: bytes already read from the connection.
template <class Stream>
void StartHttp1(Stream stream, Server::Impl* server, std::string initial);
template <class Stream>
void StartH2(Stream stream, Server::Impl* server, std::string initial,
             std::string upgrade_settings = {}, std::shared_ptr<Request> upgrade = nullptr);
// `started` (optional) gets the new connection, so the accept loop does not evict it.
void StartSniffer(tcp::socket socket, Server::Impl* server, const Connection** started = nullptr);
Result<ssl::context> MakeTlsContext(const ServerOptions& o);

}  // namespace icestream::http
