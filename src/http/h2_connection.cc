// HTTP/2 server connection on libnghttp2 (see h2_connection.h). nghttp2 does the framing,
// HPACK, flow control, stream states and HTTP messaging checks (pseudo-headers,
// content-length against DATA); this file maps streams to Request/Response and keeps the
// connection's memory within its budget.
#include "http/h2_connection.h"

#include <nghttp2/nghttp2.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "common/base64.h"
#include "common/clock.h"
#include "common/time_format.h"
#include "http/body_budget.h"
#include "http/body_queue.h"

namespace icestream::http {

namespace {

// Reserved for a handler's answer when it is dispatched (most answers are smaller), and
// the least reserve_response grants (an answer must be able to carry one record).
constexpr int64_t kDefaultReserve = 64 << 10;
constexpr int64_t kMinGrant = 64 << 10;
// A request body's first allocation; it grows as bytes arrive (never to what a peer
// merely announces in content-length).
constexpr size_t kFirstBodyReserve = 64 << 10;
// simdjson reads past a document's end: bodies keep this much room after them.
constexpr size_t kBodyPadding = 64;

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
  bool credit_timeout = false;     // answered 503: its body waited too long for credit
  bool queued = false;             // complete, waiting for the budget before dispatch
  bool dispatched = false;
  bool responded = false;
  // Every stream holds a share of `inflight` from its creation (its first HEADERS frame,
  // or the upgrade) until it is settled: answered, reset, or the connection lost.
  bool settled = false;
  size_t received = 0;        // request body bytes held (in used_ and the server budget)
  size_t unconsumed = 0;      // of those, bytes whose window credit was not returned yet
  int64_t waiting_since = 0;  // when credit was first withheld (0: not waiting)
  // Set when the stream is reset while its handler is queued or running: a handler not
  // started yet is skipped.
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  // The running handler's reservation for its answer (counted in used_ until answered).
  std::shared_ptr<std::atomic<int64_t>> reserved;
  std::string body;  // a whole response body, sent from `offset` (the rest is in used_)
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

  static int OnBeginHeaders(nghttp2_session* session, const nghttp2_frame* frame, void* ud) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    auto* c = Conn(ud);
    // nghttp2 counts open streams against SETTINGS_MAX_CONCURRENT_STREAMS; handlers still
    // running for streams the peer reset count too, or resets would pile up work.
    if (c->streams_.size() + c->orphaned_.size() >= c->options_.max_concurrent_streams) {
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                NGHTTP2_REFUSED_STREAM);
      return 0;
    }
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
    auto* c = Conn(ud);
    auto* s = State(session, stream_id);
    if (!s || s->body_too_large || s->credit_timeout || s->dispatched) {
      // Bytes nobody keeps: their credit goes back at once.
      nghttp2_session_consume(session, stream_id, len);
      return 0;
    }
    std::string& body = s->request->body;
    if (body.size() + len > c->options_.max_body_bytes) {
      s->body_too_large = true;
      c->ReleaseBody(s);
      std::string().swap(body);
      nghttp2_session_consume(session, stream_id, len);
      // Answer at once (RFC 9113 §8.1: a server may respond before the request is
      // complete); nghttp2 then resets the stream with NO_ERROR to stop the upload.
      c->Ready(stream_id);
      return 0;
    }
    if (body.empty()) body.reserve(kFirstBodyReserve);
    body.append(reinterpret_cast<const char*>(data), len);
    s->received += len;
    s->unconsumed += len;
    c->used_->fetch_add(static_cast<int64_t>(len));
    if (c->env_.bodies) c->env_.bodies->Charge(len);
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
        c->Ready(frame->hd.stream_id);
        return 0;
      }
      if (!end && r.GetHeader("expect") == "100-continue") {
        std::string status = ":status", code = "100";
        nghttp2_nv nv = Nv(status, code);
        nghttp2_submit_headers(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, nullptr, &nv, 1,
                               nullptr);
      }
    }
    if (end) c->Ready(frame->hd.stream_id);
    return 0;
  }

  static int OnStreamClose(nghttp2_session* /*session*/, int32_t stream_id, uint32_t /*error*/,
                           void* ud) {
    auto* c = Conn(ud);
    auto it = c->streams_.find(stream_id);
    if (it == c->streams_.end()) return 0;
    auto& s = *it->second;
    if (s.writer) s.writer->MarkClosed();
    // An answer not sent in full is no longer held.
    c->used_->fetch_sub(static_cast<int64_t>(s.body.size() - s.offset));
    std::string().swap(s.body);
    s.offset = 0;
    if (s.dispatched && !s.responded) {
      // Reset while its handler is queued or running: a handler that has not started is
      // skipped; one that runs still counts against the stream limit until it answers
      // (Respond settles it and frees what it holds).
      s.cancelled->store(true);
      c->orphaned_[stream_id] = std::move(it->second);
    } else {
      c->ReleaseBody(&s);
      c->Settle(&s);
    }
    c->streams_.erase(it);
    return 0;
  }

  static ssize_t ReadBody(nghttp2_session* /*session*/, int32_t /*stream_id*/, uint8_t* buf,
                          size_t length, uint32_t* data_flags, nghttp2_data_source* source,
                          void* ud) {
    auto* s = static_cast<H2Connection::StreamState*>(source->ptr);
    if (!s->writer) {
      size_t n = std::min(length, s->body.size() - s->offset);
      std::memcpy(buf, s->body.data() + s->offset, n);
      s->offset += n;
      Conn(ud)->used_->fetch_sub(static_cast<int64_t>(n));
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
    : options_(std::move(options)), env_(std::move(env)) {
  // Credit is returned while the connection holds less than budget - window, so the
  // window must leave room for a whole body below the budget.
  int64_t half = static_cast<int64_t>(options_.budget_bytes / 2);
  options_.connection_window_bytes = static_cast<int32_t>(
      std::max<int64_t>(65535, std::min<int64_t>(options_.connection_window_bytes, half)));
  options_.stream_window_bytes =
      std::min(options_.stream_window_bytes, options_.connection_window_bytes);
}

H2Connection::~H2Connection() {
  Abort();
  if (session_) nghttp2_session_del(session_);
}

Result<std::shared_ptr<H2Connection>> H2Connection::Make(H2Options options, H2Env env) {
  std::shared_ptr<H2Connection> c(new H2Connection(std::move(options), std::move(env)));
  RETURN_IF_ERROR(c->Init());
  return c;
}

int64_t H2Connection::Now() const {
  if (env_.now_ms) return env_.now_ms();
  return MonotonicNanos() / 1000000;
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
  // Window credit is returned by ReturnCredit, as bodies are consumed and the budgets
  // allow; nghttp2's automatic updates would let a peer upload without bound.
  nghttp2_option_set_no_auto_window_update(opt, 1);
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
  Ready(1);
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
  ReturnCredit();
  while (out.size() < max) {
    const uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      spdlog::debug("http/2 to {}: {}", env_.remote_address, nghttp2_strerror(static_cast<int>(n)));
      fatal_ = true;
      break;
    }
    if (n == 0) {
      // Answers sent just now may have made room for credit (WINDOW_UPDATE to send).
      if (ReturnCredit()) continue;
      break;
    }
    out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  DispatchQueued();
  NotifyWritable();
  return out;
}

bool H2Connection::Finished() const {
  return fatal_ || aborted_ ||
         (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0);
}

bool H2Connection::idle() const {
  return streams_.empty() && orphaned_.empty() && !aborted_ && !fatal_ &&
         nghttp2_session_want_write(session_) == 0;
}

bool H2Connection::NeedsTick() const {
  for (const auto& [id, s] : streams_) {
    if (s->waiting_since) return true;
  }
  return false;
}

void H2Connection::Tick() {
  if (aborted_ || fatal_) return;
  int64_t now = Now();
  std::vector<int32_t> expired;
  for (const auto& [id, s] : streams_) {
    if (s->waiting_since && !s->dispatched && now - s->waiting_since >= options_.credit_wait_ms) {
      expired.push_back(id);
    }
  }
  for (int32_t id : expired) {
    auto it = streams_.find(id);
    if (it == streams_.end()) continue;
    StreamState& s = *it->second;
    spdlog::debug("http/2 stream {} from {}: its body waited {} ms for room; answered 503", id,
                  env_.remote_address, now - s.waiting_since);
    s.credit_timeout = true;
    ReleaseBody(&s);
    std::string().swap(s.request->body);
    if (s.queued) s.queued = false;  // a queued request is complete: it is not waiting
    Ready(id);
  }
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
  if (room_ticket_ && env_.bodies) env_.bodies->Cancel(room_ticket_);
  room_ticket_ = 0;
  for (auto& [id, s] : streams_) {
    if (s->writer) s->writer->MarkClosed();
    used_->fetch_sub(static_cast<int64_t>(s->body.size() - s->offset));
    std::string().swap(s->body);
    s->offset = 0;
    if (s->dispatched && !s->responded) {
      s->cancelled->store(true);
      orphaned_[id] = std::move(s);  // settled and freed by its responder
      continue;
    }
    if (env_.bodies) env_.bodies->Release(s->received);
    used_->fetch_sub(static_cast<int64_t>(s->received));
    s->received = s->unconsumed = 0;
    Settle(s.get());
  }
  streams_.clear();
  ready_.clear();
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

bool H2Connection::OverBudget() const {
  return used_->load() >= static_cast<int64_t>(options_.budget_bytes);
}

void H2Connection::ReleaseBody(StreamState* s) {
  if (s->received) {
    used_->fetch_sub(static_cast<int64_t>(s->received));
    if (env_.bodies) env_.bodies->Release(s->received);
    s->received = 0;
  }
  if (s->unconsumed && !aborted_) {
    // The stream may be gone already: then only the connection's window gets it back.
    for (auto& [id, st] : streams_) {
      if (st.get() != s) continue;
      nghttp2_session_consume(session_, id, s->unconsumed);
      s->unconsumed = 0;
      break;
    }
    if (s->unconsumed) nghttp2_session_consume_connection(session_, s->unconsumed);
  }
  s->unconsumed = 0;
  s->waiting_since = 0;
}

bool H2Connection::ReturnCredit() {
  if (aborted_ || fatal_) return false;
  bool returned = false, server_full = false;
  int64_t threshold =
      static_cast<int64_t>(options_.budget_bytes) - options_.connection_window_bytes;
  // Oldest streams first (ids grow), so the first uploads finish rather than all of them
  // creeping on.
  for (auto& [id, s] : streams_) {
    if (!s->unconsumed) continue;
    bool room = used_->load() <= threshold;
    if (room && env_.bodies && !env_.bodies->HasRoom()) {
      room = false;
      server_full = true;
    }
    if (!room) {
      if (!s->waiting_since) s->waiting_since = Now();
      continue;
    }
    nghttp2_session_consume(session_, id, s->unconsumed);
    s->unconsumed = 0;
    s->waiting_since = 0;
    returned = true;
  }
  if (server_full && room_ticket_ == 0) {
    // Woken when another connection's request ends; the post flushes, which returns the
    // credit that is due.
    std::weak_ptr<H2Connection> weak = weak_from_this();
    auto post = env_.post;
    room_ticket_ = env_.bodies->WhenRoom([weak, post] {
      post([weak] {
        if (auto c = weak.lock()) c->room_ticket_ = 0;
      });
    });
  }
  return returned;
}

void H2Connection::NotifyWritable() {
  for (auto& [id, s] : streams_) {
    if (s->writer) s->writer->CheckWritable();
  }
}

void H2Connection::Ready(int32_t stream_id) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end()) return;
  StreamState& s = *it->second;
  if (s.dispatched || s.queued) return;
  // Answers that run no handler go out at once.
  bool early = s.headers_too_large || s.body_too_large || s.credit_timeout;
  if (early || (ready_.empty() && !OverBudget())) return Dispatch(stream_id);
  s.queued = true;
  ready_.push_back(stream_id);
}

void H2Connection::DispatchQueued() {
  while (!ready_.empty() && !OverBudget() && !aborted_) {
    int32_t id = ready_.front();
    ready_.pop_front();
    auto it = streams_.find(id);
    if (it == streams_.end() || !it->second->queued) continue;  // reset meanwhile
    it->second->queued = false;
    Dispatch(id);
  }
}

void H2Connection::Dispatch(int32_t stream_id) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end() || it->second->dispatched) return;
  StreamState& s = *it->second;
  s.dispatched = true;
  if (s.headers_too_large) return SubmitSimple(stream_id, 431);
  if (s.body_too_large) return SubmitSimple(stream_id, 413);
  if (s.credit_timeout) return SubmitSimple(stream_id, 503);
  auto req = s.request;
  if (req->body.capacity() < req->body.size() + kBodyPadding) {
    req->body.reserve(req->body.size() + kBodyPadding);
  }
  req->remote_address = env_.remote_address;
  s.reserved = std::make_shared<std::atomic<int64_t>>(kDefaultReserve);
  used_->fetch_add(kDefaultReserve);
  req->reserve_response = [used = used_, reserved = s.reserved,
                           budget = static_cast<int64_t>(options_.budget_bytes)](size_t want) {
    int64_t w = static_cast<int64_t>(want);
    int64_t have = reserved->load();
    if (w <= have) return want;
    int64_t room = std::max<int64_t>(0, budget - used->load());
    int64_t grant = std::max(have + std::min(w - have, room), std::min(w, kMinGrant));
    if (grant > have) {
      reserved->fetch_add(grant - have);
      used->fetch_add(grant - have);
    }
    return static_cast<size_t>(std::max(grant, have));
  };
  auto self = shared_from_this();
  Responder respond = [self, stream_id](Response r) {
    auto shared = std::make_shared<Response>(std::move(r));
    self->env_.post([self, stream_id, shared] { self->Respond(stream_id, std::move(*shared)); });
  };
  // The handler runs off the connection's strand (env_.run), so one connection's streams
  // are parsed and decoded on every I/O thread at once while the strand goes on reading.
  auto call = [handler = env_.handler, req = std::move(req), respond = std::move(respond),
               cancelled = s.cancelled]() mutable {
    if (cancelled->load()) {
      // Reset before it started (the rapid-reset pattern): the work is not done.
      respond(Response{});
      return;
    }
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
  if (status == 503) {
    r.SetHeader("Content-Type", "application/json");
    r.SetHeader("Retry-After", "1");
    r.body = R"({"__type":"ServiceUnavailable","message":"The server is receiving too many )"
             R"(request bodies at once; retry."})";
  }
  Respond(stream_id, std::move(r));
}

void H2Connection::Respond(int32_t stream_id, Response r) {
  auto it = aborted_ ? streams_.end() : streams_.find(stream_id);
  if (it == streams_.end() || it->second->responded) {
    // The stream is gone (reset by the client, connection lost): nothing to send.
    if (auto o = orphaned_.find(stream_id); o != orphaned_.end()) {
      StreamState& gone = *o->second;
      if (gone.reserved) used_->fetch_sub(gone.reserved->exchange(0));
      ReleaseBody(&gone);
      orphaned_.erase(o);
    }
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
  if (s.reserved) used_->fetch_sub(s.reserved->exchange(0));
  ReleaseBody(&s);  // the request is answered: its body is no longer held
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
        env_.stopping, BodyQueue::Accounting{used_, static_cast<int64_t>(options_.budget_bytes)});
  } else if (with_body) {
    s.body = std::move(r.body);
    used_->fetch_add(static_cast<int64_t>(s.body.size()));
  }
  int rv = nghttp2_submit_response(session_, stream_id, nva.data(), nva.size(),
                                   with_body ? &prd : nullptr);
  if (rv != 0) {
    spdlog::debug("http/2 stream {}: {}", stream_id, nghttp2_strerror(rv));
    if (s.writer) s.writer->MarkClosed();
    used_->fetch_sub(static_cast<int64_t>(s.body.size()));
    std::string().swap(s.body);
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
