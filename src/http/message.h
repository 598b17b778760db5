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
  // How many bytes this request's answer may take, for handlers whose answer size is
  // theirs to choose (GetRecords may return fewer records): returns at most `want`, and
  // never less than a small minimum (an answer always makes progress). Set by HTTP/2,
  // whose connections hold answers their peer has not read yet within a budget; empty
  // (no bound) on HTTP/1.1, which writes one answer at a time.
  std::function<size_t(size_t want)> reserve_response;

  // Value of the first header with this (lower-case) name, or "".
  std::string_view GetHeader(std::string_view lower_name) const;
  bool HasHeader(std::string_view lower_name) const;
};

// The writing end of a response body sent in pieces (HTTP/1.1 chunked transfer; event
// streams). Thread-safe; owned by the producer and the connection together.
class BodyWriter {
 public:
  virtual ~BodyWriter() = default;
  // Queues one piece; false once the connection is gone (the producer should stop).
  virtual bool Write(std::string piece) = 0;
  // Ends the body; the connection then serves its next request. Idempotent.
  virtual void Finish() = 0;
  // Bytes queued but not yet written to the socket (for back-pressure).
  virtual size_t pending_bytes() const = 0;
  // True once the connection is closed or the server is stopping: finish soon.
  virtual bool closed() const = 0;
  // True while the producer should hold back: much of this body is still queued or (HTTP/2)
  // the connection's memory budget is spent by answers the peer does not read. Write
  // never refuses a piece for it; producers that can wait (event streams) check it.
  virtual bool congested() const = 0;
  // Calls `fn` once, when congested() turns false or the body is closed (at once when it
  // already is), on the connection's thread; `fn` must not block. A newer call replaces
  // an older one that has not fired.
  virtual void WhenWritable(std::function<void()> fn) = 0;
};

struct Response {
  int status = 200;
  std::vector<Header> headers;
  std::string body;
  // When true the connection is closed after this response.
  bool close = false;
  // When set, `body` is ignored: the headers go out with chunked transfer encoding, then
  // `stream` is called (on an I/O thread; it must not block) with the body's writer.
  std::function<void(std::shared_ptr<BodyWriter>)> stream;

  // Replaces a header of the same name (compared case-insensitively); keeps the case given.
  void SetHeader(std::string name, std::string value);
};

// ASCII lower case, as header names are compared (in place; returns `s`).
std::string AsciiLower(std::string s);

// Completes a request. Call exactly once, from any thread.
using Responder = std::function<void(Response)>;
using Handler = std::function<void(std::shared_ptr<Request>, Responder)>;

}  // namespace icestream::http
