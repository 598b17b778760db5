// For the server's tests: one HTTP request through libcurl (an independent client), and a
// fixture that starts a server on a free port of 127.0.0.1.
#pragma once

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/testing/status_assertions.h"
#include "http/server.h"

namespace icestream::http {

struct CurlReply {
  long status = 0;
  long version = 0;  // CURL_HTTP_VERSION_* the answer came in
  std::string body;
  CURLcode code = CURLE_OK;
};

inline size_t CollectCurlBody(char* p, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(p, size * n);
  return size * n;
}

// POSTs `body` (GET when null) on the handle `c` (options already set on it stay).
inline CurlReply CurlCall(CURL* c, const std::string& url, const std::string* body,
                          const std::vector<std::string>& headers = {}) {
  CurlReply r;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, CollectCurlBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  curl_slist* hs = nullptr;
  for (auto& h : headers) hs = curl_slist_append(hs, h.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  } else {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  }
  r.code = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_easy_getinfo(c, CURLINFO_HTTP_VERSION, &r.version);
  curl_slist_free_all(hs);
  return r;
}

class ServerFixture : public ::testing::Test {
 protected:
  void StartServer(Handler h, ServerOptions o = {}) {
    o.port = 0;
    ASSERT_OK_AND_ASSIGN(server_, Server::Start(o, std::move(h)));
    url_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }
  std::unique_ptr<Server> server_;
  std::string url_;
};

}  // namespace icestream::http
