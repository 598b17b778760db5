// H2Connection driven in-process by an nghttp2 client session (the client role of the
// library, independent of the server code under test): the connection's byte budget
// bounds unfinished uploads and unread answers, reset streams do not run their handlers,
// handlers still running for reset streams count against the stream limit.
#include "http/h2_connection.h"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/testing/status_assertions.h"
#include "http/body_budget.h"

namespace icestream::http {
namespace {

struct ClientStream {
  std::string data;
  int status = 0;
  bool closed = false;
  uint32_t error = 0;
  size_t upload_left = 0;  // bytes the upload still offers (never ends when > 0)
};

// One nghttp2 client session wired to an H2Connection without sockets.
class Harness {
 public:
  explicit Harness(H2Options options, uint32_t client_window = 65535) {
    env_.inflight = &inflight_;
    env_.stopping = &stopping_;
    env_.post = [this](std::function<void()> fn) { posted_.push_back(std::move(fn)); };
    env_.run = [this](std::function<void()> fn) {
      if (defer_handlers_) {
        handlers_.push_back(std::move(fn));
      } else {
        fn();
      }
    };
    env_.bodies = &bodies_;
    env_.now_ms = [this] { return now_ms_; };
    env_.handler = [this](std::shared_ptr<Request> req, Responder respond) {
      ++calls_;
      if (on_request_) return on_request_(std::move(req), std::move(respond));
      Response r;
      r.body = "ok";
      respond(std::move(r));
    };
    auto conn = H2Connection::Make(options, env_);
    EXPECT_OK(conn);
    server_ = std::move(*conn);

    nghttp2_session_callbacks* cbs;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
        cbs, [](nghttp2_session*, uint8_t, int32_t id, const uint8_t* d, size_t n, void* ud) {
          static_cast<Harness*>(ud)->streams_[id].data.append(reinterpret_cast<const char*>(d), n);
          return 0;
        });
    nghttp2_session_callbacks_set_on_header_callback(
        cbs, [](nghttp2_session*, const nghttp2_frame* f, const uint8_t* name, size_t nl,
                const uint8_t* value, size_t vl, uint8_t, void* ud) {
          if (std::string_view(reinterpret_cast<const char*>(name), nl) == ":status") {
            static_cast<Harness*>(ud)->streams_[f->hd.stream_id].status =
                std::stoi(std::string(reinterpret_cast<const char*>(value), vl));
          }
          return 0;
        });
    nghttp2_session_callbacks_set_on_stream_close_callback(
        cbs, [](nghttp2_session*, int32_t id, uint32_t error, void* ud) {
          auto& s = static_cast<Harness*>(ud)->streams_[id];
          s.closed = true;
          s.error = error;
          return 0;
        });
    nghttp2_session_client_new(&client_, cbs, this);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, client_window}};
    nghttp2_submit_settings(client_, NGHTTP2_FLAG_NONE, iv, 1);
  }

  ~Harness() {
    server_->Abort();
    Drain();
    nghttp2_session_del(client_);
  }

  // A POST of `body` (complete), or an upload announcing `announce` bytes that sends as
  // much as flow control allows and never ends (`announce` > 0, empty body).
  int32_t Submit(const std::string& body, size_t announce = 0) {
    std::string len = std::to_string(announce ? announce : body.size());
    std::vector<std::pair<std::string, std::string>> fields = {{":method", "POST"},
                                                               {":scheme", "http"},
                                                               {":authority", "t"},
                                                               {":path", "/"},
                                                               {"content-length", len}};
    std::vector<nghttp2_nv> nva;
    for (auto& [n, v] : fields) {
      nva.push_back({reinterpret_cast<uint8_t*>(n.data()), reinterpret_cast<uint8_t*>(v.data()),
                     n.size(), v.size(), NGHTTP2_NV_FLAG_NONE});
    }
    pending_body_ = announce ? std::string() : body;
    pending_upload_ = announce;
    nghttp2_data_provider prd{};
    prd.read_callback = [](nghttp2_session*, int32_t id, uint8_t* buf, size_t length,
                           uint32_t* flags, nghttp2_data_source*, void* ud) -> ssize_t {
      auto* self = static_cast<Harness*>(ud);
      auto& s = self->streams_[id];
      if (s.upload_left) {
        size_t n = std::min(length, s.upload_left);
        std::memset(buf, 'x', n);
        s.upload_left -= n;
        if (s.upload_left == 0) s.upload_left = 1;  // never ends
        return static_cast<ssize_t>(n);
      }
      auto& b = self->bodies_out_[id];
      size_t n = std::min(length, b.size());
      std::memcpy(buf, b.data(), n);
      b.erase(0, n);
      if (b.empty()) *flags |= NGHTTP2_DATA_FLAG_EOF;
      return static_cast<ssize_t>(n);
    };
    int32_t id = nghttp2_submit_request(client_, nullptr, nva.data(), nva.size(),
                                        (announce || !body.empty()) ? &prd : nullptr, nullptr);
    streams_[id].upload_left = announce;
    bodies_out_[id] = pending_body_;
    return id;
  }

  void Reset(int32_t id) {
    nghttp2_submit_rst_stream(client_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
  }
  void GrantAll(uint32_t window) {
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window}};
    nghttp2_submit_settings(client_, NGHTTP2_FLAG_NONE, iv, 1);
    nghttp2_session_set_local_window_size(client_, NGHTTP2_FLAG_NONE, 0, 1 << 30);
  }

  // Moves bytes both ways until neither side has anything to say.
  void Pump(int rounds = 1000) {
    for (int i = 0; i < rounds; ++i) {
      bool moved = false;
      const uint8_t* data;
      ssize_t n;
      std::string to_server;
      while ((n = nghttp2_session_mem_send(client_, &data)) > 0) {
        to_server.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
      }
      if (!to_server.empty()) {
        uploaded_ += to_server.size();
        server_->Receive(reinterpret_cast<const uint8_t*>(to_server.data()), to_server.size());
        moved = true;
      }
      moved |= Drain();
      std::string out = server_->TakeOutput();
      if (!out.empty()) {
        nghttp2_session_mem_recv(client_, reinterpret_cast<const uint8_t*>(out.data()), out.size());
        moved = true;
      }
      if (!moved) return;
    }
  }

  bool Drain() {
    bool any = false;
    while (!posted_.empty()) {
      auto fn = std::move(posted_.front());
      posted_.pop_front();
      fn();
      any = true;
    }
    return any;
  }

  void RunHandlers() {
    while (!handlers_.empty()) {
      auto fn = std::move(handlers_.front());
      handlers_.pop_front();
      fn();
    }
  }

  std::atomic<int> inflight_{0};
  std::atomic<bool> stopping_{false};
  BodyBudget bodies_{1u << 30};
  H2Env env_;
  std::shared_ptr<H2Connection> server_;
  nghttp2_session* client_ = nullptr;
  std::map<int32_t, ClientStream> streams_;
  std::map<int32_t, std::string> bodies_out_;
  std::string pending_body_;
  size_t pending_upload_ = 0;
  std::deque<std::function<void()>> posted_, handlers_;
  bool defer_handlers_ = false;
  int calls_ = 0;
  size_t uploaded_ = 0;
  int64_t now_ms_ = 1000;
  std::function<void(std::shared_ptr<Request>, Responder)> on_request_;
};

H2Options Small() {
  H2Options o;
  o.max_body_bytes = 1 << 20;
  o.budget_bytes = 8 << 20;
  o.connection_window_bytes = 2 << 20;
  o.stream_window_bytes = 1 << 20;
  o.max_concurrent_streams = 32;
  return o;
}

TEST(H2Connection, UnfinishedUploadsStayWithinTheBudget) {
  Harness h(Small());
  for (int i = 0; i < 24; ++i) h.Submit("", 1 << 20);  // 24 MiB announced, never finished
  h.Pump();
  // Credit stops once the connection holds budget - window; one window more may arrive.
  EXPECT_LE(h.server_->held_bytes(), 8 << 20);
  EXPECT_LE(h.uploaded_, (10u << 20) + (1u << 20));
  EXPECT_EQ(h.calls_, 0);
}

TEST(H2Connection, AServerWideBudgetWithholdsCreditToo) {
  Harness h(Small());
  ASSERT_TRUE(h.bodies_.TryCharge((1u << 30) - (1u << 20)));  // others hold nearly all of it
  for (int i = 0; i < 8; ++i) h.Submit("", 1 << 20);
  h.Pump();
  size_t first = h.uploaded_;
  EXPECT_LE(first, (4u << 20));  // the initial windows, no more
  // Another connection's request ends: credit flows again.
  h.bodies_.Release((1u << 30) - (1u << 20));
  h.Pump();
  EXPECT_GT(h.uploaded_, first);
}

TEST(H2Connection, AnUploadWaitingTooLongForCreditIsAnswered503) {
  Harness h(Small());
  ASSERT_TRUE(h.bodies_.TryCharge(1u << 30));
  int32_t id = h.Submit("", 1 << 20);
  h.Pump();
  ASSERT_TRUE(h.server_->NeedsTick());
  h.now_ms_ += 11000;
  h.server_->Tick();
  h.Pump();
  EXPECT_EQ(h.streams_[id].status, 503);
  EXPECT_EQ(h.calls_, 0);
  h.bodies_.Release(1u << 30);
}

TEST(H2Connection, UnreadAnswersDeferDispatch) {
  H2Options o = Small();
  o.budget_bytes = 4 << 20;
  Harness h(o, /*client_window=*/0);  // the client reads nothing
  // Big answers are sized by what the connection grants (as GetRecords does).
  h.on_request_ = [](std::shared_ptr<Request> req, Responder respond) {
    Response r;
    r.body = std::string(req->reserve_response(1 << 20), 'a');
    respond(std::move(r));
  };
  std::vector<int32_t> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(h.Submit("{}"));
  h.Pump();
  // Answers fill the budget (4 MiB): the last requests already wait.
  int ran = h.calls_;
  EXPECT_GE(ran, 4);
  EXPECT_LE(ran, 6);
  EXPECT_LE(h.server_->held_bytes(), (4 << 20) + 6 * (64 << 10));
  // The budget is spent on answers nobody reads: new requests wait for their handlers.
  for (int i = 0; i < 10; ++i) ids.push_back(h.Submit("{}"));
  h.Pump();
  EXPECT_EQ(h.calls_, ran) << "handlers ran while the connection's budget was spent";
  EXPECT_LE(h.server_->held_bytes(), (4 << 20) + 6 * (64 << 10));
  // Once the client reads, everything is answered.
  h.GrantAll(16 << 20);
  h.Pump();
  EXPECT_EQ(h.calls_, 16);
  for (int32_t id : ids) {
    EXPECT_EQ(h.streams_[id].status, 200) << id;
    EXPECT_GE(h.streams_[id].data.size(), 64u << 10) << id;
  }
}

TEST(H2Connection, HandlersChooseTheirAnswerSizeWithinTheBudget) {
  H2Options o = Small();
  o.budget_bytes = 4 << 20;
  Harness h(o);
  size_t granted = 0;
  h.on_request_ = [&](std::shared_ptr<Request> req, Responder respond) {
    ASSERT_TRUE(req->reserve_response);
    granted = req->reserve_response(10 << 20);
    respond(Response{});
  };
  h.Submit("{}");
  h.Pump();
  EXPECT_GE(granted, 64u << 10);
  EXPECT_LE(granted, 4u << 20);
}

TEST(H2Connection, StreamsResetBeforeTheirHandlerStartedDoNotRunIt) {
  Harness h(Small());
  h.defer_handlers_ = true;
  std::vector<int32_t> ids;
  for (int i = 0; i < 30; ++i) ids.push_back(h.Submit("{\"a\":1}"));
  h.Pump();
  for (int32_t id : ids) h.Reset(id);
  h.Pump();
  h.RunHandlers();
  h.Pump();
  EXPECT_EQ(h.calls_, 0);
  EXPECT_EQ(h.inflight_.load(), 0);
}

TEST(H2Connection, HandlersOfResetStreamsCountAgainstTheStreamLimit) {
  H2Options o = Small();
  o.max_concurrent_streams = 4;
  Harness h(o);
  std::vector<Responder> held;
  h.on_request_ = [&](std::shared_ptr<Request>, Responder respond) { held.push_back(respond); };
  std::vector<int32_t> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(h.Submit("{}"));
  h.Pump();
  ASSERT_EQ(h.calls_, 4);
  for (int32_t id : ids) h.Reset(id);
  h.Pump();
  int32_t extra = h.Submit("{}");
  h.Pump();
  EXPECT_EQ(h.calls_, 4) << "a fifth handler ran while four still run for reset streams";
  EXPECT_TRUE(h.streams_[extra].closed);
  EXPECT_EQ(h.streams_[extra].error, static_cast<uint32_t>(NGHTTP2_REFUSED_STREAM));
  for (auto& r : held) r(Response{});
  held.clear();
  h.on_request_ = nullptr;
  h.Pump();
  int32_t later = h.Submit("{}");
  h.Pump();
  EXPECT_EQ(h.calls_, 5);
  EXPECT_EQ(h.streams_[later].status, 200);
}

}  // namespace
}  // namespace icestream::http
