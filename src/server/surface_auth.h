// SurfaceAuth: who may call the surfaces that are not AWS JSON services — the Iceberg
// REST catalog (/iceberg/...) and /metrics. (Kinesis and Glue are checked by the Router
// with the Authenticator alone.)
//
//   catalog: open while neither [[credentials]] nor [auth] bearer_tokens are configured;
//            otherwise a request needs a SigV4 signature for service "s3tables" with a
//            configured key (as AWS's S3 Tables Iceberg endpoint; PyIceberg and Spark
//            sign that way) or `Authorization: Bearer <token>` with a configured token
//            (the REST catalog spec's alternative).
//   metrics: open while nothing is configured or with [auth] public_metrics = true;
//            otherwise a configured bearer token (Prometheus' `authorization`).
//
// Thread-safe (const); the Authenticator must outlive it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "aws/sigv4.h"
#include "http/message.h"

namespace icestream::server {

struct Denied {
  int status = 401;  // 401: no or unknown credentials; 403: a bad signature
  std::string type;  // NotAuthorizedException, ForbiddenException
  std::string message;
};

class SurfaceAuth {
 public:
  // `internal_token`: a bearer token accepted besides the configured ones without
  // closing an open surface (the console's in-process dispatches; Router::SetInternalToken).
  SurfaceAuth(const aws::Authenticator* sigv4, std::vector<std::string> bearer_tokens,
              bool public_metrics, std::string internal_token = {});

  bool catalog_requires_auth() const;
  bool metrics_require_auth() const;
  std::optional<Denied> CheckCatalog(const http::Request& req) const;
  std::optional<Denied> CheckMetrics(const http::Request& req) const;

 private:
  // nullopt: no bearer token in the request; true/false: a known/unknown one.
  std::optional<bool> BearerMatches(const http::Request& req) const;

  const aws::Authenticator* sigv4_;
  std::vector<std::string> tokens_;
  bool public_metrics_;
  std::string internal_token_;
};

// The HTTP answer for a denial on /metrics (JSON {"message": ...}, WWW-Authenticate).
http::Response MetricsDenied(const Denied& d);

}  // namespace icestream::server
