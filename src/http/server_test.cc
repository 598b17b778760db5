// The HTTP server driven by libcurl (an independent client) on 127.0.0.1.
#include "http/server.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "http/server_test_util.h"

namespace icestream::http {
namespace {

using CurlResult = CurlReply;

CurlResult Call(CURL* c, const std::string& url, const std::string* body,
                std::vector<std::string> headers = {}) {
  return CurlCall(c, url, body, headers);
}

class ServerTest : public ServerFixture {
 protected:
  void StartServer(Handler h, size_t max_body = 1 << 20) {
    ServerOptions o;
    o.max_body_bytes = max_body;
    ServerFixture::StartServer(std::move(h), o);
  }
};

TEST_F(ServerTest, EchoesAndKeepsConnectionsAlive) {
  std::atomic<int> calls{0};
  StartServer([&](std::shared_ptr<Request> req, Responder respond) {
    calls++;
    Response r;
    r.SetHeader("X-Echo-Method", req->method);
    r.body = req->path + "|" + req->query + "|" + std::string(req->GetHeader("x-test")) + "|" +
             req->body;
    respond(std::move(r));
  });
  CURL* c = curl_easy_init();
  auto a = Call(c, url_ + "/p?q=1", nullptr, {"X-Test: hi"});
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "/p|q=1|hi|");
  std::string body = "payload";
  auto b = Call(c, url_ + "/post", &body);
  EXPECT_EQ(b.body,
            "/post||"
            "|payload");
  long conns = -1;
  curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &conns);
  EXPECT_EQ(conns, 0);  // second request reused the connection
  curl_easy_cleanup(c);
  EXPECT_EQ(calls.load(), 2);
}

TEST_F(ServerTest, AsyncResponderFromAnotherThread) {
  StartServer([](std::shared_ptr<Request> req, Responder respond) {
    std::thread([req, respond] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      Response r;
      r.status = 201;
      r.body = "late:" + req->body;
      respond(std::move(r));
    }).detach();
  });
  CURL* c = curl_easy_init();
  std::string body = "x";
  auto r = Call(c, url_ + "/", &body);
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body, "late:x");
  curl_easy_cleanup(c);
}

TEST_F(ServerTest, LargeBodyWithExpectContinueAndTooLarge) {
  StartServer(
      [](std::shared_ptr<Request> req, Responder respond) {
        Response r;
        r.body = std::to_string(req->body.size());
        respond(std::move(r));
      },
      4 << 20);
  CURL* c = curl_easy_init();
  std::string big(3 << 20, 'a');
  auto ok = Call(c, url_ + "/", &big, {"Expect: 100-continue"});
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, std::to_string(big.size()));
  std::string huge(5 << 20, 'b');
  auto too = Call(c, url_ + "/", &huge);
  EXPECT_EQ(too.status, 413) << curl_easy_strerror(too.code);
  curl_easy_cleanup(c);
}

TEST_F(ServerTest, StopWaitsForInFlightRequests) {
  std::promise<void> entered;
  StartServer([&](std::shared_ptr<Request>, Responder respond) {
    entered.set_value();
    std::thread([respond] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      Response r;
      r.body = "done";
      respond(std::move(r));
    }).detach();
  });
  auto client = std::async(std::launch::async, [&] {
    CURL* c = curl_easy_init();
    std::string b = "x";
    auto r = Call(c, url_ + "/", &b);
    curl_easy_cleanup(c);
    return r;
  });
  entered.get_future().wait();
  server_->Stop();
  auto r = client.get();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "done");
}

}  // namespace
}  // namespace icestream::http
