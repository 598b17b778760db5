// HTTP/1.1 connections (Boost.Beast's parser; this is the only file of the server that
// includes it, as it makes translation units slow to compile).
//
// One connection. All its handlers run on its strand, one request at a time: wait for the
// next request's first byte (idle: the connection may be closed at the connection cap),
// read the header (Beast's parser) within first_byte_timeout_seconds, read a
// Content-Length body in pieces as they arrive, each charged to the server's body budget
// first (a chunked body goes through Beast), hand the request to the handler, write the
// response, repeat. A deadline timer bounds each phase; the socket itself carries no
// per-operation timer (that would cost one timer per read).
#include <spdlog/spdlog.h>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <type_traits>

#include "common/clock.h"
#include "common/time_format.h"
#include "http/body_queue.h"
#include "http/server_internal.h"

namespace icestream::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

namespace {

// Content-Length bodies are read in pieces of at most this many bytes, each charged to the
// server's body budget before it is read; bodies this small or smaller are charged whole
// at once and never wait (their bound is the connection cap).
constexpr size_t kBodyPiece = 256u << 10;
constexpr size_t kSmallBody = 64u << 10;
// simdjson reads past a document's end: bodies keep this much room after them.
constexpr size_t kBodyPadding = 64;

template <class Stream>
class Session : public Connection {
 public:
  Session(Stream stream, Server::Impl* server)
      : Connection(server),
        stream_(std::move(stream)),
        timer_(stream_.get_executor()),
        wait_timer_(stream_.get_executor()) {}

  // `initial`: bytes already read from the connection (by the sniffer).
  void Start(std::string initial) {
    if (!initial.empty()) {
      buffer_.commit(net::buffer_copy(buffer_.prepare(initial.size()), net::buffer(initial)));
    }
    net::dispatch(stream_.get_executor(), [self = Self()] { self->ReadHeader(); });
  }

  // Called from Stop(): closes the socket on the session's strand.
  void Shutdown() override {
    net::post(stream_.get_executor(), [self = Self()] { self->Close(); });
  }

  // Stop(): a body waiting for room in the body budget will not get it (nothing more is
  // taken): it is answered 503 at once instead of holding Stop for its grace period.
  void GoAway() override {
    net::post(stream_.get_executor(), [self = Self()] {
      if (!self->closed_ && self->waiting_since_) {
        self->server_->bodies.Cancel(std::exchange(self->room_ticket_, 0));
        self->wait_timer_.cancel();
        self->RespondBusy();
      }
    });
  }

  void CloseIfIdle() override {
    net::post(stream_.get_executor(), [self = Self()] {
      if (self->idle_since() != 0) self->Close();
    });
  }

 private:
  // Closes the connection if the current phase takes longer than `seconds`.
  void ArmDeadline(int seconds) {
    timer_.expires_after(std::chrono::seconds(seconds));
    timer_.async_wait([weak = weak_from_this()](beast::error_code ec) {
      if (ec) return;  // re-armed or cancelled
      if (auto self = weak.lock()) static_cast<Session*>(self.get())->Close();
    });
  }

  void ReadHeader() {
    if (server_->stopping) return Close();
    if (buffer_.size() == 0) {
      // Between requests: idle until the next one's first byte.
      SetIdle(true);
      ArmDeadline(server_->options.idle_timeout_seconds);
      stream_.async_read_some(buffer_.prepare(4096),
                              [self = Self()](beast::error_code ec, size_t n) {
                                self->SetIdle(false);
                                if (ec || self->closed_) return self->Close();
                                self->buffer_.commit(n);
                                self->ReadHeader();
                              });
      return;
    }
    parser_.emplace();
    parser_->body_limit(server_->options.max_body_bytes);
    parser_->header_limit(static_cast<uint32_t>(server_->options.max_header_bytes));
    // A header that has begun must end soon (slow headers hold a connection slot).
    ArmDeadline(server_->options.first_byte_timeout_seconds);
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
        // Beast grew it as chunks came (bounded by the body limit): counted once whole.
        self->Charge(self->body_.size(), /*force=*/true);
        self->Dispatch();
      });
      return;
    }
    body_len_ = static_cast<size_t>(parser_->content_length().value_or(0));
    body_.clear();
    // The body grows as its bytes arrive, never to what the peer merely announces.
    body_.reserve(std::min(body_len_, kBodyPiece) + kBodyPadding);
    if (body_len_ <= kSmallBody) Charge(body_len_, /*force=*/true);
    size_t have = std::min(body_len_, buffer_.size());
    if (have) {
      if (body_len_ > kSmallBody) Charge(have, /*force=*/true);  // already received
      body_.resize(have);
      net::buffer_copy(net::buffer(body_.data(), have), buffer_.data());
      buffer_.consume(have);
    }
    ContinueBody();
  }

  // Reads the next piece of a Content-Length body once the server's budget has room.
  void ContinueBody() {
    if (closed_) return;
    size_t have = body_.size();
    if (have == body_len_) {
      if (body_.capacity() < body_len_ + kBodyPadding) body_.reserve(body_len_ + kBodyPadding);
      return Dispatch();
    }
    size_t want = std::min(body_len_ - have, kBodyPiece);
    if (body_len_ > kSmallBody && !Charge(want, /*force=*/false)) return WaitForRoom();
    waiting_since_ = 0;
    body_.resize(have + want);
    net::async_read(stream_, net::buffer(body_.data() + have, want),
                    [self = Self()](beast::error_code ec, size_t) {
                      if (ec) return self->Close();
                      self->ContinueBody();
                    });
  }

  // The server holds as many body bytes as it may: wait for room, at most
  // body_wait_seconds, then answer 503 (clients retry it) and free what this body holds.
  void WaitForRoom() {
    if (!waiting_since_) waiting_since_ = NowMs();
    int64_t left = int64_t{server_->options.body_wait_seconds} * 1000 - (NowMs() - waiting_since_);
    if (left <= 0) return RespondBusy();
    // The timer holds the session while it waits (nothing else does).
    wait_timer_.expires_after(std::chrono::milliseconds(left));
    wait_timer_.async_wait([self = Self()](beast::error_code ec) {
      if (ec) return;
      self->OnRoom();
    });
    std::weak_ptr<Connection> weak = weak_from_this();
    auto ex = stream_.get_executor();
    room_ticket_ = server_->bodies.WhenRoom([weak, ex] {
      net::post(ex, [weak] {
        if (auto self = weak.lock()) static_cast<Session*>(self.get())->OnRoom();
      });
    });
  }

  void OnRoom() {
    if (closed_ || !waiting_since_) return;  // resumed already
    server_->bodies.Cancel(std::exchange(room_ticket_, 0));
    wait_timer_.cancel();
    // Retries the charge; without room, WaitForRoom waits out what is left of the wait (or
    // answers 503 when none is).
    ContinueBody();
  }

  // Charges `n` body bytes to the server's budget (always, with `force`).
  bool Charge(size_t n, bool force) {
    if (force) {
      server_->bodies.Charge(n);
    } else if (!server_->bodies.TryCharge(n)) {
      return false;
    }
    charged_ += n;
    return true;
  }

  void ReleaseBody() {
    server_->bodies.Cancel(std::exchange(room_ticket_, 0));
    server_->bodies.Release(std::exchange(charged_, 0));
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
        ReleaseBody();
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

  // 503 for a body that waited too long for room in the server's body budget.
  void RespondBusy() {
    spdlog::debug(
        "a request body waited {} s for room in server.max_request_bytes_in_flight; "
        "answered 503",
        server_->options.body_wait_seconds);
    waiting_since_ = 0;
    keep_alive_ = false;
    drain_after_write_ = true;
    HandCountToResponse();
    ReleaseBody();
    std::string().swap(body_);
    Response r;
    r.status = 503;
    r.close = true;
    r.SetHeader("Content-Type", "application/json");
    r.SetHeader("Retry-After", "1");
    r.body = R"({"__type":"ServiceUnavailable","message":"The server is receiving too many )"
             R"(request bodies at once; retry."})";
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
                                self->Close();
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
    ReleaseBody();  // the handler is done with the request
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
    closed_ = true;
    SetIdle(false);
    UncountRequest();
    ReleaseBody();
    beast::error_code ec;
    socket().shutdown(tcp::socket::shutdown_send, ec);
    socket().close(ec);
    timer_.cancel();
    wait_timer_.cancel();
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
  net::steady_timer wait_timer_;  // a body waiting for room in the server's budget
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::string body_;
  size_t body_len_ = 0;
  size_t charged_ = 0;  // body bytes charged to the server's budget
  uint64_t room_ticket_ = 0;
  int64_t waiting_since_ = 0;
  std::optional<bhttp::response<bhttp::string_body>> res_;
  bool keep_alive_ = true;
  bool counted_ = false;  // a request being read holds a share of server_->inflight
  bool drain_after_write_ = false;
  bool closed_ = false;
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

}  // namespace

template <class Stream>
void StartHttp1(Stream stream, Server::Impl* server, std::string initial) {
  auto s = std::make_shared<Session<Stream>>(std::move(stream), server);
  server->Register(s);
  s->Start(std::move(initial));
}

template void StartHttp1<tcp::socket>(tcp::socket, Server::Impl*, std::string);
template void StartHttp1<TlsStream>(TlsStream, Server::Impl*, std::string);

}  // namespace icestream::http
