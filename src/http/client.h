// HttpClient: HTTP/1.1 requests over libcurl with connection reuse (a pool of easy
// handles). Used by the S3 object store, the REST catalog client and the CLI.
//
// Errors: transport failures (refused, reset, timeout, DNS) are kUnavailable with
// curl's text; an HTTP error status is NOT an error here — callers read the status.
// Thread-safety: Send may be called from many threads at once.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "http/message.h"

namespace icestream::http {

struct ClientRequest {
  std::string method = "GET";
  std::string url;              // absolute: http://host:port/path?query
  std::vector<Header> headers;  // sent as given
  std::string_view body;        // must stay alive during Send
  int timeout_ms = 0;           // 0 = the client's default
};

struct ClientResponse {
  int status = 0;
  std::vector<Header> headers;  // names lower-case
  std::string body;
  std::string_view GetHeader(std::string_view lower_name) const;
};

struct HttpClientOptions {
  int connect_timeout_ms = 5000;
  int timeout_ms = 120000;
  // Fail a transfer that moves fewer than this many bytes/s for `low_speed_seconds`
  // (catches stalled servers without limiting big transfers).
  long low_speed_bytes = 1024;
  long low_speed_seconds = 30;
  size_t max_pooled_handles = 32;
  // TLS: verify the server's certificate (against `ca_file` when set, else the system's
  // store). Off only on request (a test server's self-signed certificate).
  bool verify_tls = true;
  std::string ca_file;
};

class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  Result<ClientResponse> Send(const ClientRequest& request);

 private:
  void* Acquire();
  void Release(void* handle);

  HttpClientOptions options_;
  std::mutex mu_;
  std::vector<void*> idle_;
};

}  // namespace icestream::http
