// Boost.Beast implementation of the HTTP/1.1 server. This is the only file that includes
// Beast for serving; keep it that way (Beast makes translation units slow to compile).
#include "http/server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <chrono>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/time_format.h"

namespace icestream::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

class Session;
class ChunkWriter;

struct Server::Impl {
  ServerOptions options;
  Handler handler;
  // Declared before ioc: sessions still queued in ioc when it is destroyed report their
  // end through these (SessionClosed), so they must outlive it.
  std::atomic<int> inflight{0};
  std::atomic<bool> stopping{false};
  std::mutex sessions_mu;
  std::set<std::weak_ptr<Session>, std::owner_less<std::weak_ptr<Session>>> sessions;
  // Connection cap: open sessions; accepting pauses at the cap (guarded by sessions_mu).
  size_t open_sessions = 0;
  bool accept_paused = false;

  net::io_context ioc;
  // Keeps run() going while a request waits for its handler and nothing else is queued.
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::optional<tcp::acceptor> acceptor;
  // Backoff after accept fails for want of descriptors (EMFILE/ENFILE); acceptor thread.
  std::optional<net::steady_timer> accept_backoff;
  int backoff_ms = 0;
  int64_t last_backoff_log_ms = 0;
  uint64_t accept_failures = 0;
  std::vector<std::thread> threads;
  uint16_t port = 0;

  explicit Impl(ServerOptions o, Handler h) : options(std::move(o)), handler(std::move(h)) {}
  void Accept();
  void OnAccepted(beast::error_code ec, tcp::socket socket);
  void SessionClosed();
};

// One connection. All its handlers run on its strand, one request at a time: read the
// header (Beast's parser), read a Content-Length body straight into the request's string
// with one composed read (a chunked body goes through Beast), hand the request to the
// handler, write the response, repeat. A deadline timer bounds each phase; the socket
// itself carries no per-operation timer (that would cost one timer per 64 KiB read).
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Server::Impl* server)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), server_(server) {}
  ~Session() { server_->SessionClosed(); }

  void Start() {
    net::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->ReadHeader(); });
  }

  // Called from Stop(): closes the socket on the session's strand.
  void Shutdown() {
    net::post(socket_.get_executor(), [self = shared_from_this()] {
      beast::error_code ec;
      self->socket_.shutdown(tcp::socket::shutdown_both, ec);
      self->socket_.close(ec);
      self->timer_.cancel();
    });
  }

 private:
  // Closes the connection if the current phase takes longer than `seconds`.
  void ArmDeadline(int seconds) {
    timer_.expires_after(std::chrono::seconds(seconds));
    timer_.async_wait([weak = weak_from_this()](beast::error_code ec) {
      if (ec) return;  // re-armed or cancelled
      if (auto self = weak.lock()) {
        beast::error_code ignored;
        self->socket_.close(ignored);
      }
    });
  }

  void ReadHeader() {
    if (server_->stopping) return Close();
    parser_.emplace();
    parser_->body_limit(server_->options.max_body_bytes);
    parser_->header_limit(static_cast<uint32_t>(server_->options.max_header_bytes));
    ArmDeadline(server_->options.idle_timeout_seconds);
    bhttp::async_read_header(socket_, buffer_, *parser_,
                             [self = shared_from_this()](beast::error_code ec, size_t) {
                               self->OnHeader(ec);
                             });
  }

  void OnHeader(beast::error_code ec) {
    // Beast checks Content-Length against the body limit while parsing the header.
    if (ec == bhttp::error::body_limit) return RespondTooLarge();
    if (ec == bhttp::error::header_limit) {
      return RespondMalformed(431, "request header fields are larger than " +
                                       std::to_string(server_->options.max_header_bytes) +
                                       " bytes");
    }
    if (IsProtocolError(ec)) return RespondMalformed(400, "malformed request: " + ec.message());
    if (ec) return Close();
    auto& msg = parser_->get();
    // RFC 9112 §6.3: a message with both is a smuggling attempt, not something to guess at.
    if (msg.count(bhttp::field::content_length) > 0 &&
        msg.count(bhttp::field::transfer_encoding) > 0) {
      return RespondMalformed(400, "malformed request: both Content-Length and Transfer-Encoding");
    }
    auto len = parser_->content_length();
    if (len && *len > server_->options.max_body_bytes) return RespondTooLarge();
    ArmDeadline(120);
    if (beast::iequals(msg[bhttp::field::expect], "100-continue")) {
      auto cont = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_,
                                                                         msg.version());
      bhttp::async_write(socket_, *cont,
                         [self = shared_from_this(), cont](beast::error_code wec, size_t) {
                           if (wec) return self->Close();
                           self->ReadBody();
                         });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    if (parser_->chunked()) {
      bhttp::async_read(socket_, buffer_, *parser_,
                        [self = shared_from_this()](beast::error_code ec, size_t) {
                          if (ec == bhttp::error::body_limit) return self->RespondTooLarge();
                          if (ec) return self->Close();
                          self->body_ = std::move(self->parser_->get().body());
                          self->Dispatch();
                        });
      return;
    }
    size_t len = static_cast<size_t>(parser_->content_length().value_or(0));
    body_.clear();
    // Room for the padding simdjson wants after a document, so no copy is needed later.
    body_.reserve(len + 64);
    body_.resize(len);
    size_t have = std::min(len, buffer_.size());
    if (have) {
      net::buffer_copy(net::buffer(body_.data(), have), buffer_.data());
      buffer_.consume(have);
    }
    if (have == len) return Dispatch();
    net::async_read(socket_, net::buffer(body_.data() + have, len - have),
                    [self = shared_from_this()](beast::error_code ec, size_t) {
                      if (ec) return self->Close();
                      self->Dispatch();
                    });
  }

  void Dispatch() {
    timer_.cancel();
    auto& msg = parser_->get();
    auto req = std::make_shared<Request>();
    req->method = std::string(msg.method_string());
    req->target = std::string(msg.target());
    auto q = req->target.find('?');
    req->path = req->target.substr(0, q);
    if (q != std::string::npos) req->query = req->target.substr(q + 1);
    req->headers.reserve(16);
    for (const auto& f : msg) {
      std::string name(f.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      req->headers.push_back({std::move(name), std::string(f.value())});
    }
    req->body = std::move(body_);
    beast::error_code rec;
    auto ep = socket_.remote_endpoint(rec);
    if (!rec) req->remote_address = ep.address().to_string();
    keep_alive_ = msg.keep_alive();
    version_ = msg.version();
    parser_.reset();
    server_->inflight.fetch_add(1);
    auto self = shared_from_this();
    Responder respond = [self](Response r) {
      net::post(self->socket_.get_executor(),
                [self, r = std::move(r)]() mutable { self->Write(std::move(r)); });
    };
    try {
      server_->handler(std::move(req), std::move(respond));
    } catch (const std::exception& e) {
      // Handlers report errors as responses; an exception here is a bug, but the
      // connection must still get an answer.
      spdlog::error("http handler threw: {}", e.what());
      Response r;
      r.status = 500;
      r.close = true;
      Write(std::move(r));
    }
  }

  // Errors of the request's syntax, as opposed to the connection going away.
  static bool IsProtocolError(const beast::error_code& ec) {
    if (!ec || ec.category() != bhttp::make_error_code(bhttp::error::bad_method).category()) {
      return false;
    }
    return ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message &&
           ec != bhttp::error::need_more && ec != bhttp::error::need_buffer;
  }

  // Answers a request that cannot be parsed (400, 431), then closes the connection.
  void RespondMalformed(int status, std::string message) {
    keep_alive_ = false;
    drain_after_write_ = true;
    server_->inflight.fetch_add(1);
    Response r;
    r.status = status;
    r.close = true;
    r.SetHeader("Content-Type", "application/json");
    std::string escaped;
    for (char c : message) {
      if (c == '"' || c == '\\') escaped.push_back('\\');
      if (static_cast<unsigned char>(c) >= 0x20) escaped.push_back(c);
    }
    r.body = "{\"message\":\"" + escaped + "\"}";
    Write(std::move(r));
  }

  void RespondTooLarge() {
    keep_alive_ = false;
    drain_after_write_ = true;
    server_->inflight.fetch_add(1);
    Response r;
    r.status = 413;
    r.close = true;
    Write(std::move(r));
  }

  // After refusing a body the client may still be sending it; closing at once would make
  // the kernel answer with a reset that destroys our response before the client reads
  // it. So stop sending, then read and discard until the client closes (bounded).
  void DrainThenClose() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    ArmDeadline(5);
    drain_buf_.resize(64 * 1024);
    socket_.async_read_some(net::buffer(drain_buf_),
                            [self = shared_from_this()](beast::error_code rec, size_t n) {
                              self->drained_ += n;
                              if (rec || self->drained_ > (64u << 20)) {
                                beast::error_code ignored;
                                self->socket_.close(ignored);
                                self->timer_.cancel();
                                return;
                              }
                              self->DrainThenClose();
                            });
  }

  friend class ChunkWriter;

  // A streamed body: the header with chunked transfer encoding, then the producer's
  // pieces as chunks (one write at a time, on the strand), then the last chunk.
  void WriteStream(Response r);
  void PumpChunks();

  void Write(Response r) {
    if (r.stream) return WriteStream(std::move(r));
    res_.emplace();
    res_->version(version_);
    res_->result(static_cast<unsigned>(r.status));
    for (auto& h : r.headers) res_->set(h.name, h.value);
    res_->set(bhttp::field::date, FormatHttpDate(SystemClock::Default()->NowMillis()));
    res_->body() = std::move(r.body);
    bool keep = keep_alive_ && !r.close && !server_->stopping;
    res_->keep_alive(keep);
    res_->prepare_payload();
    ArmDeadline(120);
    bhttp::async_write(socket_, *res_,
                       [self = shared_from_this(), keep](beast::error_code ec, size_t) {
                         self->server_->inflight.fetch_sub(1);
                         self->res_.reset();
                         if (!ec && self->drain_after_write_) return self->DrainThenClose();
                         if (ec || !keep) return self->Close();
                         self->ReadHeader();
                       });
  }

  void Close() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    socket_.close(ec);
    timer_.cancel();
  }

  std::optional<bhttp::response<bhttp::empty_body>> stream_res_;
  std::optional<bhttp::response_serializer<bhttp::empty_body>> stream_sr_;
  std::shared_ptr<ChunkWriter> stream_;
  bool stream_keep_ = false;
  bool chunk_writing_ = false;

  tcp::socket socket_;
  net::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::string body_;
  std::optional<bhttp::response<bhttp::string_body>> res_;
  Server::Impl* server_;
  bool keep_alive_ = true;
  bool drain_after_write_ = false;
  std::string drain_buf_;
  size_t drained_ = 0;
  unsigned version_ = 11;
};

class ChunkWriter : public BodyWriter {
 public:
  ChunkWriter(std::shared_ptr<Session> session, Server::Impl* server)
      : session_(std::move(session)), server_(server) {}

  bool Write(std::string piece) override {
    {
      std::lock_guard lock(mu_);
      if (closed_ || finished_) return false;
      pending_ += piece.size();
      queue_.push_back(std::move(piece));
    }
    Kick();
    return true;
  }
  void Finish() override {
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      finished_ = true;
    }
    Kick();
  }
  size_t pending_bytes() const override {
    std::lock_guard lock(mu_);
    return pending_;
  }
  bool closed() const override {
    std::lock_guard lock(mu_);
    return closed_ || server_->stopping.load();
  }

  // Strand side.
  std::optional<std::string> Next() {
    std::lock_guard lock(mu_);
    if (queue_.empty()) return std::nullopt;
    std::string s = std::move(queue_.front());
    queue_.pop_front();
    return s;
  }
  void Written(size_t n) {
    std::lock_guard lock(mu_);
    pending_ -= std::min(pending_, n);
  }
  bool finished() const {
    std::lock_guard lock(mu_);
    return finished_;
  }
  void MarkClosed() {
    std::lock_guard lock(mu_);
    closed_ = true;
    queue_.clear();
    pending_ = 0;
  }

 private:
  void Kick() {
    std::shared_ptr<Session> s;
    {
      std::lock_guard lock(mu_);
      s = session_;
    }
    if (s) net::post(s->socket_.get_executor(), [s] { s->PumpChunks(); });
  }

  mutable std::mutex mu_;
  std::shared_ptr<Session> session_;  // kept until the body ends (the session then resets it)
  Server::Impl* server_;
  std::deque<std::string> queue_;
  size_t pending_ = 0;
  bool finished_ = false;
  bool closed_ = false;

  friend class Session;
};

void Session::WriteStream(Response r) {
  stream_res_.emplace();
  stream_res_->version(version_);
  stream_res_->result(static_cast<unsigned>(r.status));
  for (auto& h : r.headers) stream_res_->set(h.name, h.value);
  stream_res_->set(bhttp::field::date, FormatHttpDate(SystemClock::Default()->NowMillis()));
  stream_keep_ = keep_alive_ && !r.close && !server_->stopping;
  stream_res_->keep_alive(stream_keep_);
  stream_res_->chunked(true);
  stream_sr_.emplace(*stream_res_);
  stream_ = std::make_shared<ChunkWriter>(shared_from_this(), server_);
  ArmDeadline(120);
  bhttp::async_write_header(
      socket_, *stream_sr_,
      [self = shared_from_this(), producer = std::move(r.stream)](beast::error_code ec, size_t) {
        self->timer_.cancel();
        if (ec) {
          self->stream_->MarkClosed();
          self->stream_->Finish();
          producer(self->stream_);
          return self->PumpChunks();
        }
        producer(self->stream_);
        self->PumpChunks();
      });
}

void Session::PumpChunks() {
  if (!stream_ || chunk_writing_) return;
  auto end_stream = [this](bool ok) {
    server_->inflight.fetch_sub(1);
    auto writer = std::move(stream_);
    {
      std::lock_guard lock(writer->mu_);
      writer->session_.reset();
    }
    writer->MarkClosed();
    stream_sr_.reset();
    stream_res_.reset();
    if (ok && stream_keep_) return ReadHeader();
    Close();
  };
  if (stream_->closed_) return end_stream(false);
  if (auto piece = stream_->Next()) {
    chunk_writing_ = true;
    auto data = std::make_shared<std::string>(std::move(*piece));
    ArmDeadline(120);
    net::async_write(socket_, bhttp::make_chunk(net::buffer(*data)),
                     [self = shared_from_this(), data](beast::error_code ec, size_t) {
                       self->timer_.cancel();
                       self->chunk_writing_ = false;
                       if (!self->stream_) return;
                       if (ec) {
                         self->stream_->MarkClosed();
                         return self->PumpChunks();
                       }
                       self->stream_->Written(data->size());
                       self->PumpChunks();
                     });
    return;
  }
  if (stream_->finished()) {
    chunk_writing_ = true;
    ArmDeadline(120);
    net::async_write(socket_, bhttp::make_chunk_last(),
                     [self = shared_from_this(), end_stream](beast::error_code ec, size_t) mutable {
                       self->timer_.cancel();
                       self->chunk_writing_ = false;
                       if (!self->stream_) return;
                       end_stream(!ec);
                     });
  }
}

void Server::Impl::Accept() {
  acceptor->async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    OnAccepted(ec, std::move(socket));
  });
}

void Server::Impl::OnAccepted(beast::error_code ec, tcp::socket socket) {
  if (stopping || ec == net::error::operation_aborted) return;
  if (ec == net::error::no_descriptors || ec.value() == ENFILE || ec.value() == ENOMEM ||
      ec.value() == ENOBUFS) {
    // Out of descriptors: accepting again at once would fail again at once (a busy loop
    // that also floods the log). Wait, longer each time, until descriptors are freed.
    backoff_ms = backoff_ms == 0 ? 10 : std::min(backoff_ms * 2, 1000);
    ++accept_failures;
    int64_t now = SystemClock::Default()->NowMillis();
    if (now - last_backoff_log_ms >= 10000) {
      spdlog::warn("accept: {} ({} failures so far; {} connections open); retrying in {} ms",
                   ec.message(), accept_failures, open_sessions, backoff_ms);
      last_backoff_log_ms = now;
    }
    accept_backoff->expires_after(std::chrono::milliseconds(backoff_ms));
    accept_backoff->async_wait([this](beast::error_code wec) {
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
  auto s = std::make_shared<Session>(std::move(socket), this);
  bool pause = false;
  {
    std::lock_guard lock(sessions_mu);
    for (auto it = sessions.begin(); it != sessions.end();) {
      it = it->expired() ? sessions.erase(it) : std::next(it);
    }
    sessions.insert(s);
    ++open_sessions;
    if (open_sessions >= options.max_connections) {
      accept_paused = true;
      pause = true;
    }
  }
  s->Start();
  if (pause) {
    spdlog::warn("{} connections open (server.max_connections); new clients wait until one closes",
                 options.max_connections);
    return;
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
  beast::error_code ec;
  auto addr = net::ip::make_address(impl->options.host, ec);
  if (ec) return InvalidArgument("bad listen address '" + impl->options.host + "': " + ec.message());
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
    beast::error_code ec;
    impl_->acceptor->close(ec);
    impl_->accept_backoff->cancel();
  });
  // In-flight requests finish (their appends become durable and get answered).
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::seconds(impl_->options.stop_grace_seconds);
  while (impl_->inflight.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Collected under the lock, shut down outside it: dropping the last reference to a
  // session runs its destructor, which takes the same lock.
  std::vector<std::shared_ptr<Session>> live;
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
