// HttpClient against our own HTTP server (a real socket on 127.0.0.1) and against a
// closed port.
#include "http/client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "common/testing/status_assertions.h"
#include "http/server.h"

namespace icestream::http {
namespace {

TEST(HttpClientTest, MethodsHeadersBodiesAndReuse) {
  std::atomic<int> calls{0};
  ASSERT_OK_AND_ASSIGN(
      auto server, Server::Start({.port = 0}, [&](std::shared_ptr<Request> req, Responder respond) {
        calls++;
        Response r;
        r.status = req->path == "/missing" ? 404 : 200;
        r.SetHeader("X-Method", req->method);
        r.SetHeader("X-Got-Type", std::string(req->GetHeader("content-type")));
        r.SetHeader("X-Expect", std::string(req->GetHeader("expect")));
        if (req->method != "HEAD") r.body = req->method + ":" + req->query + ":" + req->body;
        respond(std::move(r));
      }));
  std::string base = "http://127.0.0.1:" + std::to_string(server->port());
  HttpClient client;
  ASSERT_OK_AND_ASSIGN(auto get, client.Send({.url = base + "/a?x=1"}));
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(get.body, "GET:x=1:");
  EXPECT_EQ(get.GetHeader("x-method"), "GET");
  std::string big(3 << 20, 'b');
  ASSERT_OK_AND_ASSIGN(auto put, client.Send({.method = "PUT", .url = base + "/o", .body = big}));
  EXPECT_EQ(put.body.size(), std::string("PUT::").size() + big.size());
  EXPECT_EQ(put.GetHeader("x-got-type"), "");  // no default form content type
  EXPECT_EQ(put.GetHeader("x-expect"), "");    // no 100-continue round trip
  auto post = client.Send({.method = "POST",
                           .url = base + "/p",
                           .headers = {{"Content-Type", "application/xml"}},
                           .body = "<x/>"});
  EXPECT_EQ(post->GetHeader("x-got-type"), "application/xml");
  ASSERT_OK_AND_ASSIGN(auto head, client.Send({.method = "HEAD", .url = base + "/h"}));
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  auto del = client.Send({.method = "DELETE", .url = base + "/missing"});
  EXPECT_EQ(del->status, 404);
  EXPECT_EQ(calls.load(), 5);
}

// A body with a Content-Length gets its room once: not grown by doubling as it arrives
// (every doubling a copy of all so far and fresh pages to fault in). A length larger than
// the body that comes is only room, and the body is what arrived.
TEST(HttpClientTest, ABodyOfAKnownLengthIsReceivedIntoItsRoomAtOnce) {
  const size_t kSize = 10'000'000;
  ASSERT_OK_AND_ASSIGN(auto server,
                       Server::Start({.port = 0}, [&](std::shared_ptr<Request>, Responder respond) {
                         Response r;
                         r.body.assign(kSize, 'r');
                         respond(std::move(r));
                       }));
  HttpClient client;
  ASSERT_OK_AND_ASSIGN(
      auto got, client.Send({.url = "http://127.0.0.1:" + std::to_string(server->port()) + "/"}));
  ASSERT_EQ(got.body.size(), kSize);
  EXPECT_EQ(got.body.find_first_not_of('r'), std::string::npos);
  EXPECT_EQ(got.body.capacity(), kSize);
}

TEST(HttpClientTest, TransportErrorsAreUnavailable) {
  HttpClient client({.connect_timeout_ms = 1000});
  // A port nobody listens on (bind, read the port, close).
  auto server = Server::Start({.port = 0}, [](std::shared_ptr<Request>, Responder r) { r({}); });
  std::string url = "http://127.0.0.1:" + std::to_string((*server)->port()) + "/";
  (*server)->Stop();
  server->reset();
  auto r = client.Send({.url = url});
  EXPECT_STATUS(kUnavailable, r);
  EXPECT_STATUS(kInvalidArgument, client.Send({.url = "nope://x"}));
}

TEST(HttpClientTest, TimeoutIsUnavailable) {
  std::thread late;
  auto server = Server::Start({.port = 0}, [&](std::shared_ptr<Request>, Responder respond) {
    late = std::thread([respond] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
      respond({});
    });
  });
  HttpClient client;
  auto r = client.Send(
      {.url = "http://127.0.0.1:" + std::to_string((*server)->port()) + "/", .timeout_ms = 300});
  EXPECT_STATUS(kUnavailable, r);
  late.join();  // the server must outlive the answer it was promised
}

}  // namespace
}  // namespace icestream::http
