// The I/O side of one HTTP/2 connection: reads into H2Connection (h2_connection.h), writes
// what it gives back, one write at a time, all on the connection's strand; ticks it while
// a request body waits for window credit; reports it idle (evictable at the connection
// cap) when nothing is open, running or unsent.
#include <spdlog/spdlog.h>

#include "http/server_internal.h"

namespace icestream::http {

namespace {

template <class Stream>
class H2Io : public Connection {
 public:
  H2Io(Stream stream, Server::Impl* server)
      : Connection(server),
        stream_(std::move(stream)),
        timer_(stream_.get_executor()),
        tick_(stream_.get_executor()) {}

  void Start(std::string initial, std::string upgrade_settings, std::shared_ptr<Request> upgrade) {
    H2Env env;
    env.handler = server_->handler;
    env.inflight = &server_->inflight;
    env.stopping = &server_->stopping;
    env.bodies = &server_->bodies;
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
    boost::system::error_code rec;
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

  void CloseIfIdle() override {
    net::post(stream_.get_executor(), [self = Self()] {
      if (self->conn_ && self->conn_->idle() && !self->writing_) self->Close();
    });
  }

 private:
  std::shared_ptr<H2Io> Self() { return std::static_pointer_cast<H2Io>(shared_from_this()); }

  void Read() {
    if (closed_) return;
    stream_.async_read_some(net::buffer(rbuf_),
                            [self = Self()](boost::system::error_code ec, size_t n) {
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
      if (conn_->Finished()) return Close();
      SetIdle(conn_->idle());
      MaybeTick();
      return;
    }
    SetIdle(false);
    writing_ = true;
    net::async_write(stream_, net::buffer(wbuf_),
                     [self = Self()](boost::system::error_code ec, size_t) {
                       self->writing_ = false;
                       if (ec) return self->Close();
                       self->Flush();
                     });
  }

  // Once a second while a request body waits for window credit (H2Connection::Tick
  // answers those that waited too long).
  void MaybeTick() {
    if (ticking_ || closed_ || !conn_->NeedsTick()) return;
    ticking_ = true;
    tick_.expires_after(std::chrono::seconds(1));
    tick_.async_wait([weak = std::weak_ptr<H2Io>(Self())](boost::system::error_code ec) {
      auto self = weak.lock();
      if (!self) return;
      self->ticking_ = false;
      if (ec || self->closed_) return;
      self->conn_->Tick();
      self->Flush();
      self->MaybeTick();
    });
  }

  // A connection that read nothing for idle_timeout_seconds and has no stream open is
  // closed; one with streams open (a long event stream, a slow handler) is not. Reads only
  // note their time: the timer is not re-armed on the read path.
  void ArmIdle(std::chrono::steady_clock::duration after) {
    timer_.expires_after(after);
    timer_.async_wait([weak = std::weak_ptr<H2Io>(Self())](boost::system::error_code ec) {
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
    SetIdle(false);
    if (conn_) conn_->Abort();
    boost::system::error_code ec;
    Lowest(stream_).shutdown(tcp::socket::shutdown_both, ec);
    Lowest(stream_).close(ec);
    timer_.cancel();
    tick_.cancel();
  }

  Stream stream_;
  net::steady_timer timer_;
  net::steady_timer tick_;
  std::shared_ptr<H2Connection> conn_;
  std::vector<uint8_t> rbuf_;
  std::string wbuf_;
  std::chrono::steady_clock::time_point last_read_ = std::chrono::steady_clock::now();
  bool writing_ = false;
  bool closed_ = false;
  bool ticking_ = false;
};

}  // namespace

template <class Stream>
void StartH2(Stream stream, Server::Impl* server, std::string initial, std::string upgrade_settings,
             std::shared_ptr<Request> upgrade) {
  auto h2 = std::make_shared<H2Io<Stream>>(std::move(stream), server);
  server->Register(h2);
  h2->Start(std::move(initial), std::move(upgrade_settings), std::move(upgrade));
}

template void StartH2<tcp::socket>(tcp::socket, Server::Impl*, std::string, std::string,
                                   std::shared_ptr<Request>);
template void StartH2<TlsStream>(TlsStream, Server::Impl*, std::string, std::string,
                                 std::shared_ptr<Request>);

}  // namespace icestream::http
