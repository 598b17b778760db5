// HTTP/2 server connection on libnghttp2 (see h2_connection.h). nghttp2 does the framing,
// HPACK, flow control, stream states and HTTP messaging checks (pseudo-headers,
// content-length against DATA); this file maps streams to Request/Response.
#include "http/h2_connection.h"

#include <nghttp2/nghttp2.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/base64.h"
#include "common/clock.h"
#include "common/time_format.h"
#include "http/body_queue.h"

namespace icestream::http {

namespace {

// Connection-specific header fields may not appear in HTTP/2 (RFC 9113 §8.2.2).
bool ConnectionSpecific(std::string_view lower) {
  return lower == "connection" || lower == "keep-alive" || lower == "proxy-connection" ||
         lower == "transfer-encoding" || lower == "upgrade";
}

nghttp2_nv Nv(const std::string& name, const std::string& value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), NGHTTP2_NV_FLAG_NONE};
}

}  // namespace

struct H2Connection::StreamState {
  std::shared_ptr<Request> request = std::make_shared<Request>();
  std::string authority;
  size_t header_bytes = 0;
  bool headers_too_large = false;  // answered 431
  bool body_too_large = false;     // answered 413
  bool dispatched = false;
  bool responded = false;
  // Every stream holds a share of `inflight` from its creation (its first HEADERS frame,
  // or the upgrade) until it is settled: answered, reset, or the connection lost.
  bool settled = false;
  std::string body;  // a whole response body, sent from `offset`
  size_t offset = 0;
  std::shared_ptr<BodyQueue> writer;  // a streamed response body, pulled as the window allows
};

// nghttp2's C callbacks; `user_data` is the H2Connection.
struct H2Callbacks {
  static H2Connection* Conn(void* user_data) { return static_cast<H2Connection*>(user_data); }

  static H2Connection::StreamState* State(nghttp2_session* session, int32_t id) {
    return static_cast<H2Connection::StreamState*>(
        nghttp2_session_get_stream_user_data(session, id));
  }

  static int OnBeginHeaders(nghttp2_session* /*session*/, const nghttp2_frame* frame, void* ud) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    auto* c = Conn(ud);
    c->AddStream(frame->hd.stream_id, std::make_unique<H2Connection::StreamState>());
    return 0;
  }

  static int OnHeader(nghttp2_session* session, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t /*flags*/,
                      void* ud) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    auto* s = State(session, frame->hd.stream_id);
    if (!s || s->dispatched) return 0;  // trailers after the request was taken: ignored
    // RFC 9113 §6.5.2 counts 32 bytes of overhead per field.
    s->header_bytes += namelen + valuelen + 32;
    if (s->header_bytes > Conn(ud)->options_.max_header_bytes) {
      s->headers_too_large = true;
      return 0;
    }
    std::string_view n(reinterpret_cast<const char*>(name), namelen);
    std::string_view v(reinterpret_cast<const char*>(value), valuelen);
    Request& r = *s->request;
    if (!n.empty() && n[0] == ':') {
      if (n == ":method") {
        r.method = std::string(v);
      } else if (n == ":path") {
        r.target = std::string(v);
        auto q = r.target.find('?');
        r.path = r.target.substr(0, q);
        r.query = q == std::string::npos ? "" : r.target.substr(q + 1);
      } else if (n == ":authority") {
        s->authority = std::string(v);
      }
      return 0;
    }
    // nghttp2 has checked the name is lower case (HTTP messaging rules).
    r.headers.push_back({std::string(n), std::string(v)});
    return 0;
  }

  static int OnDataChunk(nghttp2_session* session, uint8_t /*flags*/, int32_t stream_id,
                         const uint8_t* data, size_t len, void* ud) {
    auto* s = State(session, stream_id);
    if (!s || s->body_too_large || s->dispatched) return 0;
    auto* c = Conn(ud);
    std::string& body = s->request->body;
    if (body.size() + len > c->options_.max_body_bytes) {
      s->body_too_large = true;
      std::string().swap(body);
      // Answer at once (RFC 9113 §8.1: a server may respond before the request is
      // complete); nghttp2 then resets the stream with NO_ERROR to stop the upload.
      c->Dispatch(stream_id);
      return 0;
    }
    if (body.empty()) {
      // Room for the padding simdjson wants after a document (the router parses in place).
      auto cl = s->request->GetHeader("content-length");
      size_t want = 0;
      for (char ch : cl) {
        if (ch < '0' || ch > '9' || want > c->options_.max_body_bytes) break;
        want = want * 10 + static_cast<size_t>(ch - '0');
      }
      body.reserve(std::min(want, c->options_.max_body_bytes) + 64);
    }
    body.append(reinterpret_cast<const char*>(data), len);
    return 0;
  }

  static int OnFrameRecv(nghttp2_session* session, const nghttp2_frame* frame, void* ud) {
    auto* c = Conn(ud);
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    auto* s = State(session, frame->hd.stream_id);
    if (!s) return 0;
    bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      Request& r = *s->request;
      // SigV4 signs `host` or, from HTTP/2 clients such as the JS SDK, `:authority`: both
      // are there to be found by name.
      if (!s->authority.empty()) {
        r.headers.push_back({":authority", s->authority});
        if (!r.HasHeader("host")) r.headers.push_back({"host", s->authority});
      }
      if (s->headers_too_large) {
        c->Dispatch(frame->hd.stream_id);
        return 0;
      }
      if (!end && r.GetHeader("expect") == "100-continue") {
        std::string status = ":status", code = "100";
        nghttp2_nv nv = Nv(status, code);
        nghttp2_submit_headers(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, nullptr, &nv, 1,
                               nullptr);
      }
    }
    if (end) c->Dispatch(frame->hd.stream_id);
    return 0;
  }

  static int OnStreamClose(nghttp2_session* /*session*/, int32_t stream_id, uint32_t /*error*/,
                           void* ud) {
    auto* c = Conn(ud);
    auto it = c->streams_.find(stream_id);
    if (it == c->streams_.end()) return 0;
    auto& s = *it->second;
    if (s.writer) s.writer->MarkClosed();
    // A stream closed while its handler works is settled by the responder.
    if (!s.dispatched || s.responded) c->Settle(&s);
    c->streams_.erase(it);
    return 0;
  }

  static ssize_t ReadBody(nghttp2_session* /*session*/, int32_t /*stream_id*/, uint8_t* buf,
                          size_t length, uint32_t* data_flags, nghttp2_data_source* source,
                          void* /*ud*/) {
    auto* s = static_cast<H2Connection::StreamState*>(source->ptr);
    if (!s->writer) {
      size_t n = std::min(length, s->body.size() - s->offset);
      std::memcpy(buf, s->body.data() + s->offset, n);
      s->offset += n;
      if (s->offset == s->body.size()) {
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        std::string().swap(s->body);
        s->offset = 0;
      }
      return static_cast<ssize_t>(n);
    }
    size_t n = s->writer->Pull(buf, length);
    if (s->writer->drained_and_finished()) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
      return static_cast<ssize_t>(n);
    }
    if (n == 0) return NGHTTP2_ERR_DEFERRED;  // resumed by the writer's next Write/Finish
    return static_cast<ssize_t>(n);
  }
};

H2Connection::H2Connection(H2Options options, H2Env env)
    : options_(std::move(options)), env_(std::move(env)) {}

H2Connection::~H2Connection() {
  Abort();
  if (session_) nghttp2_session_del(session_);
}

Result<std::shared_ptr<H2Connection>> H2Connection::Make(H2Options options, H2Env env) {
  std::shared_ptr<H2Connection> c(new H2Connection(std::move(options), std::move(env)));
  RETURN_IF_ERROR(c->Init());
  return c;
}

Status H2Connection::Init() {
  nghttp2_session_callbacks* cbs = nullptr;
  if (nghttp2_session_callbacks_new(&cbs) != 0) return Internal("nghttp2: out of memory");
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, H2Callbacks::OnBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(cbs, H2Callbacks::OnHeader);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, H2Callbacks::OnDataChunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, H2Callbacks::OnFrameRecv);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, H2Callbacks::OnStreamClose);
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  // Bounds HPACK's decoder table and the header block nghttp2 buffers for one stream.
  nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
  int rv = nghttp2_session_server_new2(&session_, cbs, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  if (rv != 0) return Internal(std::string("nghttp2: ") + nghttp2_strerror(rv));
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, options_.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(options_.stream_window_bytes)},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<uint32_t>(options_.max_header_bytes)},
  };
  rv = nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0]));
  if (rv == 0) {
    rv = nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                               options_.connection_window_bytes);
  }
  if (rv != 0) return Internal(std::string("nghttp2: ") + nghttp2_strerror(rv));
  return Status::OK();
}

Status H2Connection::Upgrade(std::string_view settings_b64url, std::shared_ptr<Request> request) {
  auto settings = base64::DecodeUrl(settings_b64url);
  if (!settings) return InvalidArgument("HTTP2-Settings is not base64url");
  int rv = nghttp2_session_upgrade2(session_, reinterpret_cast<const uint8_t*>(settings->data()),
                                    settings->size(), request->method == "HEAD" ? 1 : 0, nullptr);
  if (rv != 0) return InvalidArgument(std::string("HTTP2-Settings: ") + nghttp2_strerror(rv));
  auto s = std::make_unique<StreamState>();
  s->request = std::move(request);
  AddStream(1, std::move(s));
  Dispatch(1);
  return Status::OK();
}

bool H2Connection::Receive(const uint8_t* data, size_t n) {
  if (fatal_ || aborted_) return false;
  ssize_t rv = nghttp2_session_mem_recv(session_, data, n);
  if (rv < 0) {
    spdlog::debug("http/2 from {}: {}", env_.remote_address,
                  nghttp2_strerror(static_cast<int>(rv)));
    fatal_ = true;
    return false;
  }
  return true;
}

std::string H2Connection::TakeOutput(size_t max) {
  std::string out;
  if (aborted_) return out;
  while (out.size() < max) {
    const uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      spdlog::debug("http/2 to {}: {}", env_.remote_address, nghttp2_strerror(static_cast<int>(n)));
      fatal_ = true;
      break;
    }
    if (n == 0) break;
    out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  return out;
}

bool H2Connection::Finished() const {
  return fatal_ || aborted_ ||
         (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0);
}

void H2Connection::GoAway() {
  if (aborted_ || fatal_) return;
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(session_), NGHTTP2_NO_ERROR,
                        nullptr, 0);
}

void H2Connection::Abort() {
  if (aborted_) return;
  aborted_ = true;
  for (auto& [id, s] : streams_) {
    if (s->writer) s->writer->MarkClosed();
    if (!s->dispatched || s->responded) Settle(s.get());
  }
  streams_.clear();
}

void H2Connection::AddStream(int32_t stream_id, std::unique_ptr<StreamState> s) {
  s->request->headers.reserve(16);
  nghttp2_session_set_stream_user_data(session_, stream_id, s.get());
  env_.inflight->fetch_add(1);
  streams_[stream_id] = std::move(s);
}

void H2Connection::Settle(StreamState* s) {
  if (s->settled) return;
  s->settled = true;
  env_.inflight->fetch_sub(1);
}

void H2Connection::Dispatch(int32_t stream_id) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end() || it->second->dispatched) return;
  StreamState& s = *it->second;
  s.dispatched = true;
  if (s.headers_too_large) return SubmitSimple(stream_id, 431);
  if (s.body_too_large) return SubmitSimple(stream_id, 413);
  auto req = s.request;
  req->remote_address = env_.remote_address;
  auto self = shared_from_this();
  Responder respond = [self, stream_id](Response r) {
    auto shared = std::make_shared<Response>(std::move(r));
    self->env_.post([self, stream_id, shared] { self->Respond(stream_id, std::move(*shared)); });
  };
  // The handler runs off the connection's strand (env_.run), so one connection's streams
  // are parsed and decoded on every I/O thread at once while the strand goes on reading.
  auto call = [handler = env_.handler, req = std::move(req),
               respond = std::move(respond)]() mutable {
    try {
      handler(std::move(req), respond);
    } catch (const std::exception& e) {
      // Handlers report errors as responses; an exception here is a bug, but the stream
      // must still get an answer.
      spdlog::error("http handler threw: {}", e.what());
      Response r;
      r.status = 500;
      respond(std::move(r));
    }
  };
  if (env_.run) {
    env_.run(std::move(call));
  } else {
    call();
  }
}

void H2Connection::SubmitSimple(int32_t stream_id, int status) {
  Response r;
  r.status = status;
  Respond(stream_id, std::move(r));
}

void H2Connection::Respond(int32_t stream_id, Response r) {
  auto it = aborted_ ? streams_.end() : streams_.find(stream_id);
  if (it == streams_.end() || it->second->responded) {
    // The stream is gone (reset by the client, connection lost): nothing to send.
    env_.inflight->fetch_sub(1);
    if (r.stream) {
      auto dead = std::make_shared<BodyQueue>([] {}, env_.stopping);
      dead->MarkClosed();
      r.stream(dead);
    }
    return;
  }
  StreamState& s = *it->second;
  s.responded = true;
  std::vector<std::string> strings;
  strings.reserve(2 * r.headers.size() + 6);
  strings.push_back(":status");
  strings.push_back(std::to_string(r.status));
  bool has_date = false;
  for (auto& h : r.headers) {
    std::string name = AsciiLower(std::move(h.name));
    if (ConnectionSpecific(name) || name == "content-length") continue;
    has_date = has_date || name == "date";
    strings.push_back(std::move(name));
    strings.push_back(std::move(h.value));
  }
  if (!has_date) {
    strings.push_back("date");
    strings.push_back(FormatHttpDate(SystemClock::Default()->NowMillis()));
  }
  bool head = s.request->method == "HEAD";
  if (!r.stream) {
    strings.push_back("content-length");
    strings.push_back(std::to_string(r.body.size()));
  }
  std::vector<nghttp2_nv> nva;
  nva.reserve(strings.size() / 2);
  for (size_t i = 0; i + 1 < strings.size(); i += 2) nva.push_back(Nv(strings[i], strings[i + 1]));

  nghttp2_data_provider prd{};
  prd.source.ptr = &s;
  prd.read_callback = H2Callbacks::ReadBody;
  bool with_body = !head && (r.stream || !r.body.empty());
  if (r.stream) {
    std::weak_ptr<H2Connection> weak = weak_from_this();
    auto post = env_.post;
    s.writer = std::make_shared<BodyQueue>(
        [weak, post, stream_id] {
          post([weak, stream_id] {
            if (auto c = weak.lock()) c->ResumeBody(stream_id);
          });
        },
        env_.stopping);
  } else {
    s.body = std::move(r.body);
  }
  int rv = nghttp2_submit_response(session_, stream_id, nva.data(), nva.size(),
                                   with_body ? &prd : nullptr);
  if (rv != 0) {
    spdlog::debug("http/2 stream {}: {}", stream_id, nghttp2_strerror(rv));
    if (s.writer) s.writer->MarkClosed();
    Settle(&s);
  }
  if (r.stream) {
    auto writer = s.writer;
    if (head) writer->MarkClosed();
    r.stream(writer);
  }
}

void H2Connection::ResumeBody(int32_t stream_id) {
  if (aborted_ || streams_.find(stream_id) == streams_.end()) return;
  nghttp2_session_resume_data(session_, stream_id);
}

}  // namespace icestream::http
