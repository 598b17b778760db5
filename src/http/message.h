// HTTP request and response as plain structs, free of any HTTP library's types.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace icestream::http {

struct Header {
  std::string name;  // lower-case in requests; as set (case kept) in responses
  std::string value;
};

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query as sent
  std::string path;    // percent-decoding is the handler's business
  std::string query;   // without '?'
  std::vector<Header> headers;
  std::string body;
  std::string remote_address;

  // Value of the first header with this (lower-case) name, or "".
  std::string_view GetHeader(std::string_view lower_name) const;
  bool HasHeader(std::string_view lower_name) const;
};

struct Response {
  int status = 200;
  std::vector<Header> headers;
  std::string body;
  // When true the connection is closed after this response.
  bool close = false;

  // Replaces a header of the same name (compared case-insensitively); keeps the case given.
  void SetHeader(std::string name, std::string value);
};

// Completes a request. Call exactly once, from any thread.
using Responder = std::function<void(Response)>;
using Handler = std::function<void(std::shared_ptr<Request>, Responder)>;

}  // namespace icestream::http
