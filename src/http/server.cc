// The server's accept loop, the connection cap, start and stop. The protocols live beside
// it: sniffer.cc (first bytes, TLS), http1_session.cc (HTTP/1.1, the only file that
// includes Beast's HTTP parser: it is slow to compile), h2_glue.cc (HTTP/2's sockets;
// its protocol is h2_connection.cc).
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <vector>

#include "common/clock.h"
#include "http/server_internal.h"

namespace icestream::http {

int64_t NowMs() { return MonotonicNanos() / 1000000; }

void Connection::SetIdle(bool idle) {
  if (!idle) {
    idle_since_.store(0);
  } else if (idle_since_.load() == 0) {
    idle_since_.store(std::max<int64_t>(1, NowMs()));
  }
}

H2Options Server::Impl::h2_options() const {
  H2Options o;
  o.max_body_bytes = options.max_body_bytes;
  o.max_header_bytes = options.max_header_bytes;
  o.max_concurrent_streams = options.h2_max_concurrent_streams;
  o.budget_bytes = std::max(options.h2_connection_budget_bytes, 2 * options.max_body_bytes);
  o.credit_wait_ms = int64_t{options.body_wait_seconds} * 1000;
  return o;
}

void Server::Impl::Register(const std::shared_ptr<Connection>& c) {
  std::lock_guard lock(sessions_mu);
  for (auto it = sessions.begin(); it != sessions.end();) {
    it = it->expired() ? sessions.erase(it) : std::next(it);
  }
  sessions.insert(c);
  ++open_sessions;
}

bool Server::Impl::EvictIdle(const Connection* except) {
  // Every reference taken under the lock is dropped after it: a connection that closes on
  // another I/O thread meanwhile may leave this the last one, and a session's destructor
  // takes sessions_mu (SessionClosed). Dropped under the lock, it hung the whole server.
  std::vector<std::shared_ptr<Connection>> seen;
  std::shared_ptr<Connection> oldest;
  {
    std::lock_guard lock(sessions_mu);
    seen.reserve(sessions.size());
    int64_t best = 0;
    for (const auto& w : sessions) {
      auto c = w.lock();
      if (!c || c.get() == except) continue;
      int64_t since = c->idle_since();
      if (since != 0 && (best == 0 || since < best)) {
        best = since;
        oldest = c;
      }
      seen.push_back(std::move(c));
    }
  }
  seen.clear();
  if (!oldest) return false;
  ++evictions;
  int64_t now = NowMs();
  if (now - last_evict_log_ms >= 10000) {
    spdlog::info(
        "{} connections open (server.max_connections): closing idle ones for new "
        "clients ({} so far)",
        options.max_connections, evictions);
    last_evict_log_ms = now;
  }
  oldest->CloseIfIdle();
  return true;
}

void Server::Impl::Accept() {
  acceptor->async_accept(net::make_strand(ioc),
                         [this](boost::system::error_code ec, tcp::socket socket) {
                           OnAccepted(ec, std::move(socket));
                         });
}

void Server::Impl::OnAccepted(boost::system::error_code ec, tcp::socket socket) {
  if (stopping || ec == net::error::operation_aborted) return;
  if (ec == net::error::no_descriptors || ec.value() == ENFILE || ec.value() == ENOMEM ||
      ec.value() == ENOBUFS) {
    // Out of descriptors: accepting again at once would fail again at once (a busy loop
    // that also floods the log). Make room if a connection is idle, and wait, longer each
    // time, until descriptors are freed.
    EvictIdle(nullptr);
    backoff_ms = backoff_ms == 0 ? 10 : std::min(backoff_ms * 2, 1000);
    ++accept_failures;
    int64_t now = SystemClock::Default()->NowMillis();
    if (now - last_backoff_log_ms >= 10000) {
      spdlog::warn("accept: {} ({} failures so far; {} connections open); retrying in {} ms",
                   ec.message(), accept_failures, open_sessions, backoff_ms);
      last_backoff_log_ms = now;
    }
    accept_backoff->expires_after(std::chrono::milliseconds(backoff_ms));
    accept_backoff->async_wait([this](boost::system::error_code wec) {
      if (!wec && !stopping) Accept();
    });
    return;
  }
  if (ec) {
    spdlog::warn("accept: {}", ec.message());
    return Accept();
  }
  backoff_ms = 0;
  socket.set_option(tcp::no_delay(true), ec);
  bool at_cap;
  {
    std::lock_guard lock(sessions_mu);
    at_cap = open_sessions + 1 >= options.max_connections;
  }
  const Connection* fresh = nullptr;
  StartSniffer(std::move(socket), this, &fresh);
  // At the cap the connection idle longest makes room (the cap is exceeded by one while
  // it closes); with none idle, accepting pauses until one closes.
  if (at_cap && !EvictIdle(fresh)) {
    std::lock_guard lock(sessions_mu);
    if (open_sessions >= options.max_connections) {
      accept_paused = true;
      spdlog::warn(
          "{} connections open (server.max_connections), none idle; new clients wait until one "
          "closes",
          options.max_connections);
      return;
    }
  }
  Accept();
}

void Server::Impl::SessionClosed() {
  bool resume = false;
  {
    std::lock_guard lock(sessions_mu);
    --open_sessions;
    if (stopping) return;
    if (accept_paused && open_sessions < options.max_connections) {
      accept_paused = false;
      resume = true;
    }
  }
  if (resume) net::post(acceptor->get_executor(), [this] { Accept(); });
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options, Handler handler) {
  auto impl = std::make_unique<Impl>(std::move(options), std::move(handler));
  if (!impl->options.tls_cert_file.empty() || !impl->options.tls_key_file.empty()) {
    ASSIGN_OR_RETURN(auto ctx, MakeTlsContext(impl->options));
    impl->tls.emplace(std::move(ctx));
  }
  boost::system::error_code ec;
  auto addr = net::ip::make_address(impl->options.host, ec);
  if (ec) {
    // A host name (localhost, a name from /etc/hosts): its first address.
    tcp::resolver resolver(impl->ioc);
    auto found = resolver.resolve(impl->options.host, "", ec);
    if (ec || found.empty()) {
      return InvalidArgument("bad listen address '" + impl->options.host +
                             "': " + (ec ? ec.message() : std::string("no address")));
    }
    addr = found.begin()->endpoint().address();
  }
  tcp::endpoint ep(addr, impl->options.port);
  impl->acceptor.emplace(impl->ioc);
  impl->acceptor->open(ep.protocol(), ec);
  if (!ec) impl->acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor->bind(ep, ec);
  if (!ec) impl->acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return IOError("listen on " + impl->options.host + ":" + std::to_string(impl->options.port) +
                   ": " + ec.message());
  }
  impl->port = impl->acceptor->local_endpoint().port();
  impl->accept_backoff.emplace(impl->ioc);
  impl->work.emplace(impl->ioc.get_executor());
  impl->Accept();
  size_t n = std::max<size_t>(1, impl->options.threads);
  Impl* raw = impl.get();
  for (size_t i = 0; i < n; ++i) {
    impl->threads.emplace_back([raw] {
      for (;;) {
        try {
          raw->ioc.run();
          return;
        } catch (const std::exception& e) {
          spdlog::error("I/O thread: {}", e.what());
        }
      }
    });
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

uint16_t Server::port() const { return impl_->port; }

void Server::Post(std::function<void()> fn) { net::post(impl_->ioc, std::move(fn)); }

void Server::Stop() {
  if (!impl_ || impl_->stopping.exchange(true)) return;
  net::post(impl_->ioc, [this] {
    boost::system::error_code ec;
    impl_->acceptor->close(ec);
    impl_->accept_backoff->cancel();
  });
  // HTTP/2 connections learn that no new stream will be taken (GOAWAY), so clients
  // open new connections elsewhere rather than see their requests cut.
  std::vector<std::shared_ptr<Connection>> live;
  {
    std::lock_guard lock(impl_->sessions_mu);
    for (auto& w : impl_->sessions) {
      if (auto s = w.lock()) live.push_back(std::move(s));
    }
  }
  for (auto& s : live) s->GoAway();
  live.clear();
  // In-flight requests finish (their appends become durable and get answered).
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(impl_->options.stop_grace_seconds);
  while (impl_->inflight.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Collected under the lock, shut down outside it: dropping the last reference to a
  // session runs its destructor, which takes the same lock.
  {
    std::lock_guard lock(impl_->sessions_mu);
    for (auto& w : impl_->sessions) {
      if (auto s = w.lock()) live.push_back(std::move(s));
    }
  }
  for (auto& s : live) s->Shutdown();
  live.clear();
  impl_->work.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  impl_->ioc.stop();
  for (auto& t : impl_->threads) {
    if (t.joinable()) t.join();
  }
}

}  // namespace icestream::http
