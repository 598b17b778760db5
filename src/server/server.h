// IcestreamServer: wires the parts of one server process — metadata database, stream
// manager, API front ends, HTTP server and router.
//
// Lifetime: Start() brings everything up; Stop() answers in-flight requests, makes queued
// appends durable and closes files. Not copyable.
#pragma once

#include <memory>

#include "common/status.h"
#include "server/config.h"

namespace icestream::server {

class IcestreamServer {
 public:
  static Result<std::unique_ptr<IcestreamServer>> Start(const Config& config);
  ~IcestreamServer();
  uint16_t port() const;
  void Stop();

  struct Parts;

 private:
  explicit IcestreamServer(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> parts_;
};

}  // namespace icestream::server
