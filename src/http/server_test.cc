// The HTTP server driven by libcurl (an independent client) on 127.0.0.1.
#include "http/server.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

// At the connection cap every new connection evicts the one idle longest, while clients
// close theirs on other I/O threads. Picking the one to evict must not drop the last
// reference to a session under the sessions lock (its destructor takes the same lock):
// the server once hung that way, serving nothing and not stopping on SIGTERM.
TEST_F(ServerTest, EvictingAtTheCapWhileClientsCloseNeverHangs) {
  ServerOptions o;
  o.max_connections = 4;
  o.threads = 4;
  o.idle_timeout_seconds = 1;
  ServerFixture::StartServer(
      [](std::shared_ptr<Request>, Responder respond) {
        Response r;
        r.body = "ok";
        respond(std::move(r));
      },
      o);
  const uint16_t port = server_->port();
  std::vector<std::thread> churn;
  for (int t = 0; t < 12; ++t) {
    churn.emplace_back([port] {
      for (int i = 0; i < 400; ++i) {
        int fds[3];
        for (int& fd : fds) {
          fd = ::socket(AF_INET, SOCK_STREAM, 0);
          sockaddr_in a{};
          a.sin_family = AF_INET;
          a.sin_port = htons(port);
          a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
          ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
        }
        for (int fd : fds) ::close(fd);
      }
    });
  }
  for (auto& t : churn) t.join();
  // Still serving: a request gets its answer well within the idle timeout's reach.
  auto reply = std::async(std::launch::async, [&] {
    CURL* c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    auto r = Call(c, url_ + "/", nullptr);
    curl_easy_cleanup(c);
    return r;
  });
  if (reply.wait_for(std::chrono::seconds(25)) != std::future_status::ready) {
    // Hung: the server's own threads cannot be joined, so no orderly end is possible.
    std::fprintf(stderr, "FAILED: the server stopped serving (deadlocked)\n");
    std::_Exit(1);
  }
  auto r = reply.get();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok");
  auto stopped = std::async(std::launch::async, [&] { server_->Stop(); });
  if (stopped.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    std::fprintf(stderr, "FAILED: Stop() hangs\n");
    std::_Exit(1);
  }
}

}  // namespace
}  // namespace icestream::http
