// A fresh connection until its protocol is known: reads the first bytes, then hands the
// socket (and the bytes) to TLS, HTTP/2 or HTTP/1.1. Also the TLS context (certificate,
// key, ALPN h2 before http/1.1).
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "http/server_internal.h"

namespace icestream::http {

namespace {

// Silent sockets and stalled TLS handshakes hold a connection slot each: they get
// first_byte_timeout_seconds, and they are idle (evictable at the connection cap) until
// their protocol is known.
class Sniffer : public Connection {
 public:
  Sniffer(tcp::socket socket, Server::Impl* server)
      : Connection(server), socket_(std::move(socket)), timer_(socket_.get_executor()) {
    SetIdle(true);
  }

  void Start() {
    Arm(server_->options.first_byte_timeout_seconds);
    net::dispatch(socket_.get_executor(), [self = Self()] { self->ReadMore(); });
  }

  void Shutdown() override {
    net::post(socket_.get_executor(), [self = Self()] { self->Close(); });
  }

  void CloseIfIdle() override {
    net::post(socket_.get_executor(), [self = Self()] {
      if (self->idle_since() != 0) self->Close();
    });
  }

 private:
  std::shared_ptr<Sniffer> Self() { return std::static_pointer_cast<Sniffer>(shared_from_this()); }

  void Arm(int seconds) {
    timer_.expires_after(std::chrono::seconds(seconds));
    timer_.async_wait([weak = std::weak_ptr<Sniffer>(Self())](boost::system::error_code ec) {
      if (ec) return;
      if (auto self = weak.lock()) self->Close();
    });
  }

  void ReadMore() {
    if (server_->stopping) return Close();
    size_t have = data_.size();
    data_.resize(have + 4096);
    socket_.async_read_some(net::buffer(data_.data() + have, 4096),
                            [self = Self(), have](boost::system::error_code ec, size_t n) {
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
    // The timer armed at the start keeps running: the handshake must end within the same
    // first-byte timeout.
    tls_.emplace(std::move(socket_), *server_->tls);
    tls_->async_handshake(ssl::stream_base::server, net::buffer(data_),
                          [self = Self()](boost::system::error_code ec, size_t) {
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
    SetIdle(false);
    boost::system::error_code ec;
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

}  // namespace

void StartSniffer(tcp::socket socket, Server::Impl* server, const Connection** started) {
  auto s = std::make_shared<Sniffer>(std::move(socket), server);
  server->Register(s);
  if (started) *started = s.get();
  s->Start();
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
  boost::system::error_code ec;
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

}  // namespace icestream::http
