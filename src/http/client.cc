// libcurl implementation of HttpClient.
#include "http/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <mutex>

namespace icestream::http {
namespace {

std::once_flag g_curl_init;

size_t WriteBody(char* p, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(p, size * n);
  return size * n;
}

size_t WriteHeader(char* p, size_t size, size_t n, void* user) {
  auto* res = static_cast<ClientResponse*>(user);
  std::string_view line(p, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    res->headers.clear();  // a new response (after 100 Continue or a redirect)
    return size * n;
  }
  auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string_view v = line.substr(colon + 1);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) {
      v.remove_suffix(1);
    }
    if (name == "content-length") {
      // The body's room at once: appended 16 KiB at a time, a GetRecords answer of 10 MB
      // was copied again at every doubling and faulted in page by page (9% of a pool
      // worker's CPU). Bounded: a wrong length costs at most that much address space.
      constexpr size_t kMaxReserve = 64u << 20;
      size_t len = 0;
      if (std::from_chars(v.data(), v.data() + v.size(), len).ec == std::errc()) {
        res->body.reserve(std::min(len, kMaxReserve));
      }
    }
    res->headers.push_back({std::move(name), std::string(v)});
  }
  return size * n;
}

// Called by libcurl about once a second and whenever data moves: a non-zero answer ends
// the transfer (CURLE_ABORTED_BY_CALLBACK).
int Progress(void* client, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<std::atomic<bool>*>(client)->load() ? 1 : 0;
}

}  // namespace

void HttpClient::Abort() { aborted_.store(true); }

std::string_view ClientResponse::GetHeader(std::string_view lower_name) const {
  for (const auto& h : headers) {
    if (h.name == lower_name) return h.value;
  }
  return {};
}

HttpClient::HttpClient(HttpClientOptions options) : options_(options) {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

HttpClient::~HttpClient() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* HttpClient::Acquire() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void HttpClient::Release(void* handle) {
  std::lock_guard lock(mu_);
  if (idle_.size() < options_.max_pooled_handles) {
    idle_.push_back(handle);
  } else {
    curl_easy_cleanup(static_cast<CURL*>(handle));
  }
}

Result<ClientResponse> HttpClient::Send(const ClientRequest& req) {
  if (aborted_.load())
    return ShuttingDown("the HTTP client is stopping (" + req.method + " " + req.url + ")");
  CURL* c = static_cast<CURL*>(Acquire());
  if (!c) return Internal("curl_easy_init failed");
  // Reset per-request options; the connection cache of the handle survives.
  curl_easy_reset(c);
  ClientResponse res;
  curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_ms));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(req.timeout_ms ? req.timeout_ms : options_.timeout_ms));
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, options_.low_speed_bytes);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, options_.low_speed_seconds);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, options_.verify_tls ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, options_.verify_tls ? 2L : 0L);
  if (!options_.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.ca_file.c_str());
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, Progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &aborted_);
  // Large answers (GetRecords pages, objects) come in fewer, larger pieces.
  curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 256L << 10);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &res.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, WriteHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &res);

  curl_slist* hs = nullptr;
  bool has_ctype = false;
  for (const auto& h : req.headers) {
    std::string lower = h.name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (lower == "content-type") has_ctype = true;
    hs = curl_slist_append(hs, (h.name + ": " + h.value).c_str());
  }
  // No "Expect: 100-continue" round trip, and no default form content type.
  hs = curl_slist_append(hs, "Expect:");
  if (!has_ctype) hs = curl_slist_append(hs, "Content-Type:");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);

  if (req.method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (req.method == "GET") {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    if (!req.body.empty() || req.method == "PUT" || req.method == "POST") {
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, req.body.data());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    }
  }
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(hs);
  if (rc != CURLE_OK) {
    std::string msg = std::string(curl_easy_strerror(rc)) + " (" + req.method + " " + req.url + ")";
    // A failed transfer may leave the connection in an unknown state: drop the handle.
    curl_easy_cleanup(c);
    if (rc == CURLE_URL_MALFORMAT || rc == CURLE_UNSUPPORTED_PROTOCOL) return InvalidArgument(msg);
    if (rc == CURLE_ABORTED_BY_CALLBACK) return ShuttingDown("stopping: " + msg);
    return Unavailable(msg);
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  res.status = static_cast<int>(status);
  Release(c);
  return res;
}

}  // namespace icestream::http
