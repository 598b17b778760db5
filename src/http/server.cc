// The server's sockets: accepting, sniffing a connection's protocol, TLS (Boost.Asio over
// OpenSSL), HTTP/1.1 sessions (Boost.Beast) and the I/O glue of HTTP/2 connections (whose
// protocol lives in h2_connection.cc). This is the only file that includes Beast for
// serving; keep it that way (Beast makes translation units slow to compile).
#include "http/server.h"

#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <type_traits>
#include <vector>

#include "common/clock.h"
#include "common/time_format.h"
#include "http/body_queue.h"
#include "http/h2_connection.h"

namespace icestream::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;
using TlsStream = ssl::stream<tcp::socket>;

// The HTTP/2 connection preface a client sends first (RFC 9113 §3.4).
constexpr std::string_view kH2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

class Connection;
template <class Stream>
class Session;

struct Server::Impl {
  ServerOptions options;
  Handler handler;
  // Declared before ioc: sessions still queued in ioc when it is destroyed report their
  // end through these (SessionClosed), so they must outlive it.
  std::atomic<int> inflight{0};
  std::atomic<bool> stopping{false};
  std::mutex sessions_mu;
  std::set<std::weak_ptr<Connection>, std::owner_less<std::weak_ptr<Connection>>> sessions;
  // Connection cap: open sessions; accepting pauses at the cap (guarded by sessions_mu).
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
  std::vector<std::thread> threads;
  uint16_t port = 0;

  explicit Impl(ServerOptions o, Handler h) : options(std::move(o)), handler(std::move(h)) {}
  void Accept();
  void OnAccepted(beast::error_code ec, tcp::socket socket);
  // Counts a new connection (accepted, or taking over from another); true at the cap.
  // `accepting`: a fresh accept, which pauses accepting at the cap.
  bool Register(const std::shared_ptr<Connection>& c, bool accepting = false);
  void SessionClosed();
  H2Options h2_options() const {
    H2Options o;
    o.max_body_bytes = options.max_body_bytes;
    o.max_header_bytes = options.max_header_bytes;
    o.max_concurrent_streams = options.h2_max_concurrent_streams;
    return o;
  }
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

 protected:
  Server::Impl* server_;
};

template <class Stream>
tcp::socket& Lowest(Stream& s) {
  return beast::get_lowest_layer(s);
}

template <class Stream>
void StartH2(Stream stream, Server::Impl* server, std::string initial,
             std::string upgrade_settings = {}, std::shared_ptr<Request> upgrade = nullptr);

// One connection. All its handlers run on its strand, one request at a time: read the
// header (Beast's parser), read a Content-Length body straight into the request's string
// with one composed read (a chunked body goes through Beast), hand the request to the
// handler, write the response, repeat. A deadline timer bounds each phase; the socket
// itself carries no per-operation timer (that would cost one timer per 64 KiB read).
template <class Stream>
class Session : public Connection {
 public:
  Session(Stream stream, Server::Impl* server)
      : Connection(server), stream_(std::move(stream)), timer_(stream_.get_executor()) {}

  // `initial`: bytes already read from the connection (by the sniffer).
  void Start(std::string initial) {
    if (!initial.empty()) {
      buffer_.commit(net::buffer_copy(buffer_.prepare(initial.size()), net::buffer(initial)));
    }
    net::dispatch(stream_.get_executor(), [self = Self()] { self->ReadHeader(); });
  }

  // Called from Stop(): closes the socket on the session's strand.
  void Shutdown() override {
    net::post(stream_.get_executor(), [self = Self()] {
      beast::error_code ec;
      self->socket().shutdown(tcp::socket::shutdown_both, ec);
      self->socket().close(ec);
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
        static_cast<Session*>(self.get())->socket().close(ignored);
      }
    });
  }

  void ReadHeader() {
    if (server_->stopping) return Close();
    parser_.emplace();
    parser_->body_limit(server_->options.max_body_bytes);
    parser_->header_limit(static_cast<uint32_t>(server_->options.max_header_bytes));
    ArmDeadline(server_->options.idle_timeout_seconds);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = Self()](beast::error_code ec, size_t) { self->OnHeader(ec); });
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
    // From here the request counts as in flight, so Stop() waits for a body still arriving.
    CountRequest();
    ArmDeadline(120);
    if (beast::iequals(msg[bhttp::field::expect], "100-continue")) {
      auto cont = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_,
                                                                       msg.version());
      bhttp::async_write(stream_, *cont, [self = Self(), cont](beast::error_code wec, size_t) {
        if (wec) return self->Close();
        self->ReadBody();
      });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    if (parser_->chunked()) {
      bhttp::async_read(stream_, buffer_, *parser_, [self = Self()](beast::error_code ec, size_t) {
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
    net::async_read(stream_, net::buffer(body_.data() + have, len - have),
                    [self = Self()](beast::error_code ec, size_t) {
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
      req->headers.push_back({AsciiLower(std::string(f.name_string())), std::string(f.value())});
    }
    req->body = std::move(body_);
    beast::error_code rec;
    auto ep = socket().remote_endpoint(rec);
    if (!rec) req->remote_address = ep.address().to_string();
    keep_alive_ = msg.keep_alive();
    version_ = msg.version();
    parser_.reset();
    if constexpr (std::is_same_v<Stream, tcp::socket>) {
      // h2c upgrade only in the clear (RFC 7540 §3.2; over TLS, ALPN decides). HTTP/2
      // counts the request as its stream 1.
      if (WantsH2c(*req)) {
        UncountRequest();
        return UpgradeToH2(std::move(req));
      }
    }
    HandCountToResponse();
    auto self = Self();
    Responder respond = [self](Response r) {
      net::post(self->stream_.get_executor(),
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

  // RFC 7540 §3.2: `Upgrade: h2c`, one HTTP2-Settings, and both named in Connection.
  static bool WantsH2c(const Request& req) {
    auto has_token = [](std::string_view list, beast::string_view token) {
      size_t i = 0;
      while (i <= list.size()) {
        size_t j = list.find(',', i);
        if (j == std::string_view::npos) j = list.size();
        std::string_view t = list.substr(i, j - i);
        while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
        while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
        if (beast::iequals(beast::string_view(t.data(), t.size()), token)) return true;
        i = j + 1;
      }
      return false;
    };
    int settings = 0;
    for (const auto& h : req.headers) settings += h.name == "http2-settings";
    return settings == 1 && has_token(req.GetHeader("upgrade"), "h2c") &&
           has_token(req.GetHeader("connection"), "upgrade") &&
           has_token(req.GetHeader("connection"), "http2-settings");
  }

  // Answers 101 and hands the connection (with any bytes already read past the request)
  // to HTTP/2, where the request is served as stream 1.
  void UpgradeToH2(std::shared_ptr<Request> req) {
    auto answer = std::make_shared<std::string>(
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n");
    ArmDeadline(120);
    net::async_write(stream_, net::buffer(*answer),
                     [self = Self(), answer, req](beast::error_code ec, size_t) mutable {
                       self->timer_.cancel();
                       if (ec) return self->Close();
                       std::string rest(static_cast<const char*>(self->buffer_.data().data()),
                                        self->buffer_.size());
                       std::string settings(req->GetHeader("http2-settings"));
                       StartH2(std::move(self->stream_), self->server_, std::move(rest),
                               std::move(settings), std::move(req));
                     });
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
    HandCountToResponse();
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
    HandCountToResponse();
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
    socket().shutdown(tcp::socket::shutdown_send, ec);
    ArmDeadline(5);
    drain_buf_.resize(64 * 1024);
    stream_.async_read_some(net::buffer(drain_buf_),
                            [self = Self()](beast::error_code rec, size_t n) {
                              self->drained_ += n;
                              if (rec || self->drained_ > (64u << 20)) {
                                beast::error_code ignored;
                                self->socket().close(ignored);
                                self->timer_.cancel();
                                return;
                              }
                              self->DrainThenClose();
                            });
  }

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
    bhttp::async_write(stream_, *res_, [self = Self(), keep](beast::error_code ec, size_t) {
      self->server_->inflight.fetch_sub(1);
      self->res_.reset();
      if (!ec && self->drain_after_write_) return self->DrainThenClose();
      if (ec || !keep) return self->Close();
      self->ReadHeader();
    });
  }

  // The request read so far holds one share of the server's in-flight count (idempotent);
  // the response's write, or Close() when there will be none, releases it.
  void CountRequest() {
    if (counted_) return;
    counted_ = true;
    server_->inflight.fetch_add(1);
  }
  // The response about to be written carries the request's share (taken now if the
  // request was not counted yet); its write completion releases it.
  void HandCountToResponse() {
    if (!counted_) server_->inflight.fetch_add(1);
    counted_ = false;
  }
  void UncountRequest() {
    if (!counted_) return;
    counted_ = false;
    server_->inflight.fetch_sub(1);
  }

  void Close() {
    UncountRequest();
    beast::error_code ec;
    socket().shutdown(tcp::socket::shutdown_send, ec);
    socket().close(ec);
    timer_.cancel();
  }

  std::optional<bhttp::response<bhttp::empty_body>> stream_res_;
  std::optional<bhttp::response_serializer<bhttp::empty_body>> stream_sr_;
  std::shared_ptr<BodyQueue> stream_writer_;  // the body being streamed, if any
  bool stream_keep_ = false;
  bool chunk_writing_ = false;

  tcp::socket& socket() { return Lowest(stream_); }
  std::shared_ptr<Session> Self() { return std::static_pointer_cast<Session>(shared_from_this()); }

  Stream stream_;
  net::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::string body_;
  std::optional<bhttp::response<bhttp::string_body>> res_;
  bool keep_alive_ = true;
  bool counted_ = false;  // a request being read holds a share of server_->inflight
  bool drain_after_write_ = false;
  std::string drain_buf_;
  size_t drained_ = 0;
  unsigned version_ = 11;
};

template <class Stream>
void Session<Stream>::WriteStream(Response r) {
  stream_res_.emplace();
  stream_res_->version(version_);
  stream_res_->result(static_cast<unsigned>(r.status));
  for (auto& h : r.headers) stream_res_->set(h.name, h.value);
  stream_res_->set(bhttp::field::date, FormatHttpDate(SystemClock::Default()->NowMillis()));
  stream_keep_ = keep_alive_ && !r.close && !server_->stopping;
  stream_res_->keep_alive(stream_keep_);
  stream_res_->chunked(true);
  stream_sr_.emplace(*stream_res_);
  // The kick keeps the session alive until the body ends (MarkClosed drops it).
  stream_writer_ = std::make_shared<BodyQueue>(
      [self = Self()] { net::post(self->stream_.get_executor(), [self] { self->PumpChunks(); }); },
      &server_->stopping);
  ArmDeadline(120);
  bhttp::async_write_header(
      stream_, *stream_sr_,
      [self = Self(), producer = std::move(r.stream)](beast::error_code ec, size_t) {
        self->timer_.cancel();
        if (ec) {
          self->stream_writer_->MarkClosed();
          self->stream_writer_->Finish();
          producer(self->stream_writer_);
          return self->PumpChunks();
        }
        producer(self->stream_writer_);
        self->PumpChunks();
      });
}

template <class Stream>
void Session<Stream>::PumpChunks() {
  if (!stream_writer_ || chunk_writing_) return;
  auto end_stream = [this](bool ok) {
    server_->inflight.fetch_sub(1);
    auto writer = std::move(stream_writer_);
    writer->MarkClosed();
    stream_sr_.reset();
    stream_res_.reset();
    if (ok && stream_keep_) return ReadHeader();
    Close();
  };
  if (stream_writer_->connection_closed()) return end_stream(false);
  if (auto piece = stream_writer_->TakePiece()) {
    chunk_writing_ = true;
    auto data = std::make_shared<std::string>(std::move(*piece));
    ArmDeadline(120);
    net::async_write(stream_, bhttp::make_chunk(net::buffer(*data)),
                     [self = Self(), data](beast::error_code ec, size_t) {
                       self->timer_.cancel();
                       self->chunk_writing_ = false;
                       if (!self->stream_writer_) return;
                       if (ec) {
                         self->stream_writer_->MarkClosed();
                         return self->PumpChunks();
                       }
                       self->stream_writer_->Written(data->size());
                       self->PumpChunks();
                     });
    return;
  }
  if (stream_writer_->finished()) {
    chunk_writing_ = true;
    ArmDeadline(120);
    net::async_write(stream_, bhttp::make_chunk_last(),
                     [self = Self(), end_stream](beast::error_code ec, size_t) mutable {
                       self->timer_.cancel();
                       self->chunk_writing_ = false;
                       if (!self->stream_writer_) return;
                       end_stream(!ec);
                     });
  }
}

// The I/O side of one HTTP/2 connection: reads into H2Connection, writes what it gives
// back, one write at a time, all on the connection's strand.
template <class Stream>
class H2Io : public Connection {
 public:
  H2Io(Stream stream, Server::Impl* server)
      : Connection(server), stream_(std::move(stream)), timer_(stream_.get_executor()) {}

  void Start(std::string initial, std::string upgrade_settings, std::shared_ptr<Request> upgrade) {
    H2Env env;
    env.handler = server_->handler;
    env.inflight = &server_->inflight;
    env.stopping = &server_->stopping;
    std::weak_ptr<H2Io> weak = Self();
    env.post = [ex = stream_.get_executor(), weak](std::function<void()> fn) {
      net::post(ex, [fn = std::move(fn), weak] {
        fn();
        if (auto self = weak.lock()) self->Flush();
      });
    };
    env.run = [ex = server_->ioc.get_executor()](std::function<void()> fn) {
      net::post(ex, std::move(fn));
    };
    beast::error_code rec;
    auto ep = Lowest(stream_).remote_endpoint(rec);
    if (!rec) env.remote_address = ep.address().to_string();
    auto conn = H2Connection::Make(server_->h2_options(), std::move(env));
    if (!conn.ok()) {
      spdlog::warn("http/2: {}", conn.status().ToString());
      return Close();
    }
    conn_ = std::move(*conn);
    if (upgrade) {
      if (Status st = conn_->Upgrade(upgrade_settings, std::move(upgrade)); !st.ok()) {
        spdlog::debug("h2c upgrade: {}", st.ToString());
        return Close();
      }
    }
    if (server_->stopping) conn_->GoAway();
    rbuf_.resize(64 * 1024);  // per connection: 4096 connections hold 256 MiB at most
    if (!initial.empty()) {
      conn_->Receive(reinterpret_cast<const uint8_t*>(initial.data()), initial.size());
    }
    Flush();
    ArmIdle(std::chrono::seconds(server_->options.idle_timeout_seconds));
    Read();
  }

  void GoAway() override {
    net::post(stream_.get_executor(), [self = Self()] {
      if (self->closed_ || !self->conn_) return;
      self->conn_->GoAway();
      self->Flush();
    });
  }

  void Shutdown() override {
    net::post(stream_.get_executor(), [self = Self()] { self->Close(); });
  }

 private:
  std::shared_ptr<H2Io> Self() { return std::static_pointer_cast<H2Io>(shared_from_this()); }

  void Read() {
    if (closed_) return;
    stream_.async_read_some(net::buffer(rbuf_), [self = Self()](beast::error_code ec, size_t n) {
      if (self->closed_) return;
      if (ec) return self->Close();
      self->last_read_ = std::chrono::steady_clock::now();
      bool ok = self->conn_->Receive(self->rbuf_.data(), n);
      self->Flush();
      if (ok) self->Read();
    });
  }

  void Flush() {
    if (closed_ || writing_ || !conn_) return;
    wbuf_ = conn_->TakeOutput();
    if (wbuf_.empty()) {
      if (conn_->Finished()) Close();
      return;
    }
    writing_ = true;
    net::async_write(stream_, net::buffer(wbuf_), [self = Self()](beast::error_code ec, size_t) {
      self->writing_ = false;
      if (ec) return self->Close();
      self->Flush();
    });
  }

  // A connection that read nothing for idle_timeout_seconds and has no stream open is
  // closed; one with streams open (a long event stream, a slow handler) is not. Reads only
  // note their time: the timer is not re-armed on the read path.
  void ArmIdle(std::chrono::steady_clock::duration after) {
    timer_.expires_after(after);
    timer_.async_wait([weak = std::weak_ptr<H2Io>(Self())](beast::error_code ec) {
      if (ec) return;
      auto self = weak.lock();
      if (!self || self->closed_) return;
      auto idle = std::chrono::seconds(self->server_->options.idle_timeout_seconds);
      auto quiet = std::chrono::steady_clock::now() - self->last_read_;
      if (quiet < idle) return self->ArmIdle(idle - quiet);
      if (self->conn_ && self->conn_->active_streams() > 0) return self->ArmIdle(idle);
      self->Close();
    });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    if (conn_) conn_->Abort();
    beast::error_code ec;
    Lowest(stream_).shutdown(tcp::socket::shutdown_both, ec);
    Lowest(stream_).close(ec);
    timer_.cancel();
  }

  Stream stream_;
  net::steady_timer timer_;
  std::shared_ptr<H2Connection> conn_;
  std::vector<uint8_t> rbuf_;
  std::string wbuf_;
  std::chrono::steady_clock::time_point last_read_ = std::chrono::steady_clock::now();
  bool writing_ = false;
  bool closed_ = false;
};

template <class Stream>
void StartH2(Stream stream, Server::Impl* server, std::string initial, std::string upgrade_settings,
             std::shared_ptr<Request> upgrade) {
  auto h2 = std::make_shared<H2Io<Stream>>(std::move(stream), server);
  server->Register(h2);
  h2->Start(std::move(initial), std::move(upgrade_settings), std::move(upgrade));
}

template <class Stream>
void StartHttp1(Stream stream, Server::Impl* server, std::string initial) {
  auto s = std::make_shared<Session<Stream>>(std::move(stream), server);
  server->Register(s);
  s->Start(std::move(initial));
}

// A fresh connection until its protocol is known: reads the first bytes, then hands the
// socket (and the bytes) to TLS, HTTP/2 or HTTP/1.1.
class Sniffer : public Connection {
 public:
  Sniffer(tcp::socket socket, Server::Impl* server)
      : Connection(server), socket_(std::move(socket)), timer_(socket_.get_executor()) {}

  void Start() {
    net::dispatch(socket_.get_executor(), [self = Self()] { self->ReadMore(); });
  }

  void Shutdown() override {
    net::post(socket_.get_executor(), [self = Self()] { self->Close(); });
  }

 private:
  std::shared_ptr<Sniffer> Self() { return std::static_pointer_cast<Sniffer>(shared_from_this()); }

  void Arm(int seconds) {
    timer_.expires_after(std::chrono::seconds(seconds));
    timer_.async_wait([weak = std::weak_ptr<Sniffer>(Self())](beast::error_code ec) {
      if (ec) return;
      if (auto self = weak.lock()) self->Close();
    });
  }

  void ReadMore() {
    if (server_->stopping) return Close();
    Arm(server_->options.idle_timeout_seconds);
    size_t have = data_.size();
    data_.resize(have + 4096);
    socket_.async_read_some(net::buffer(data_.data() + have, 4096),
                            [self = Self(), have](beast::error_code ec, size_t n) {
                              self->data_.resize(have + n);
                              if (ec) return self->Close();
                              self->Decide();
                            });
  }

  void Decide() {
    // TLS records start with content type 22 (handshake).
    if (server_->tls && static_cast<unsigned char>(data_[0]) == 0x16) return Handshake();
    size_t n = std::min(data_.size(), kH2Preface.size());
    if (data_.compare(0, n, kH2Preface.substr(0, n)) == 0) {
      if (n < kH2Preface.size()) return ReadMore();  // "PRI * HT..." so far
      timer_.cancel();
      return StartH2(std::move(socket_), server_, std::move(data_));
    }
    timer_.cancel();
    StartHttp1(std::move(socket_), server_, std::move(data_));
  }

  void Handshake() {
    Arm(30);
    tls_.emplace(std::move(socket_), *server_->tls);
    tls_->async_handshake(ssl::stream_base::server, net::buffer(data_),
                          [self = Self()](beast::error_code ec, size_t) {
                            self->timer_.cancel();
                            if (ec) {
                              spdlog::debug("tls handshake: {}", ec.message());
                              return self->Close();
                            }
                            const unsigned char* proto = nullptr;
                            unsigned len = 0;
                            SSL_get0_alpn_selected(self->tls_->native_handle(), &proto, &len);
                            std::string_view alpn(reinterpret_cast<const char*>(proto), len);
                            if (alpn == "h2") {
                              return StartH2(std::move(*self->tls_), self->server_, std::string());
                            }
                            StartHttp1(std::move(*self->tls_), self->server_, std::string());
                          });
  }

  void Close() {
    beast::error_code ec;
    tcp::socket& s = tls_ ? Lowest(*tls_) : socket_;
    s.shutdown(tcp::socket::shutdown_both, ec);
    s.close(ec);
    timer_.cancel();
  }

  tcp::socket socket_;
  net::steady_timer timer_;
  std::string data_;
  std::optional<TlsStream> tls_;
};

bool Server::Impl::Register(const std::shared_ptr<Connection>& c, bool accepting) {
  std::lock_guard lock(sessions_mu);
  for (auto it = sessions.begin(); it != sessions.end();) {
    it = it->expired() ? sessions.erase(it) : std::next(it);
  }
  sessions.insert(c);
  ++open_sessions;
  if (!accepting || open_sessions < options.max_connections) return false;
  accept_paused = true;
  return true;
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
  auto s = std::make_shared<Sniffer>(std::move(socket), this);
  bool pause = Register(s, /*accepting=*/true);
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

namespace {

// ALPN (RFC 7301): the server's preference, h2 first, among what the client offers.
int SelectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void*) {
  static const unsigned char kProtocols[] = "\x02h2\x08http/1.1";
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, kProtocols, sizeof(kProtocols) - 1, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;  // no common protocol: carry on without ALPN (HTTP/1.1)
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

Result<ssl::context> MakeTlsContext(const ServerOptions& o) {
  if (o.tls_cert_file.empty() || o.tls_key_file.empty()) {
    return InvalidArgument("TLS needs both a certificate (--tls-cert) and a key (--tls-key)");
  }
  for (const auto* f : {&o.tls_cert_file, &o.tls_key_file}) {
    if (FILE* fp = std::fopen(f->c_str(), "rb")) {
      std::fclose(fp);
    } else {
      return InvalidArgument("cannot read TLS file '" + *f + "': " + std::strerror(errno));
    }
  }
  ssl::context ctx(ssl::context::tls_server);
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                  ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                  ssl::context::single_dh_use);
  beast::error_code ec;
  ctx.use_certificate_chain_file(o.tls_cert_file, ec);
  if (ec) {
    return InvalidArgument("TLS certificate '" + o.tls_cert_file + "': " + ec.message() +
                           " (want a PEM certificate chain)");
  }
  ctx.use_private_key_file(o.tls_key_file, ssl::context::pem, ec);
  if (ec) {
    return InvalidArgument("TLS key '" + o.tls_key_file + "': " + ec.message() +
                           " (want a PEM private key matching the certificate)");
  }
  if (SSL_CTX_check_private_key(ctx.native_handle()) != 1) {
    return InvalidArgument("TLS key '" + o.tls_key_file + "' does not match certificate '" +
                           o.tls_cert_file + "'");
  }
  SSL_CTX_set_alpn_select_cb(ctx.native_handle(), SelectAlpn, nullptr);
  return ctx;
}

}  // namespace

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options, Handler handler) {
  auto impl = std::make_unique<Impl>(std::move(options), std::move(handler));
  if (!impl->options.tls_cert_file.empty() || !impl->options.tls_key_file.empty()) {
    ASSIGN_OR_RETURN(auto ctx, MakeTlsContext(impl->options));
    impl->tls.emplace(std::move(ctx));
  }
  beast::error_code ec;
  auto addr = net::ip::make_address(impl->options.host, ec);
  if (ec)
    return InvalidArgument("bad listen address '" + impl->options.host + "': " + ec.message());
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
