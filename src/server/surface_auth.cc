// Authentication of the Iceberg REST catalog and /metrics.
#include "server/surface_auth.h"

#include <nlohmann/json.hpp>

namespace icestream::server {

namespace {

bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

SurfaceAuth::SurfaceAuth(const aws::Authenticator* sigv4, std::vector<std::string> bearer_tokens,
                         bool public_metrics, std::string internal_token)
    : sigv4_(sigv4),
      tokens_(std::move(bearer_tokens)),
      public_metrics_(public_metrics),
      internal_token_(std::move(internal_token)) {}

bool SurfaceAuth::catalog_requires_auth() const {
  return sigv4_->verifies_signatures() || !tokens_.empty();
}

bool SurfaceAuth::metrics_require_auth() const {
  return catalog_requires_auth() && !public_metrics_;
}

std::optional<bool> SurfaceAuth::BearerMatches(const http::Request& req) const {
  std::string_view auth = req.GetHeader("authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.size() < kBearer.size()) return std::nullopt;
  for (size_t i = 0; i < kBearer.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(auth[i])) !=
        std::tolower(static_cast<unsigned char>(kBearer[i]))) {
      return std::nullopt;
    }
  }
  std::string_view token = auth.substr(kBearer.size());
  bool known = !internal_token_.empty() && SameSecret(internal_token_, token);
  for (const auto& t : tokens_) known |= SameSecret(t, token);
  return known;
}

std::optional<Denied> SurfaceAuth::CheckCatalog(const http::Request& req) const {
  if (!catalog_requires_auth()) return std::nullopt;
  if (auto bearer = BearerMatches(req)) {
    if (*bearer) return std::nullopt;
    return Denied{401, "NotAuthorizedException", "The bearer token is not valid."};
  }
  if (req.GetHeader("authorization").empty()) {
    return Denied{401, "NotAuthorizedException",
                  "Authentication required: sign the request with SigV4 for service 's3tables' "
                  "or send a configured bearer token."};
  }
  if (!sigv4_->verifies_signatures()) {
    return Denied{401, "NotAuthorizedException",
                  "This server has no SigV4 credentials configured; send a configured bearer "
                  "token."};
  }
  if (auto e = sigv4_->Check(req, "s3tables")) {
    int status =
        e->type == "MissingAuthenticationTokenException" || e->type == "UnrecognizedClientException"
            ? 401
            : 403;
    return Denied{status, status == 401 ? "NotAuthorizedException" : "ForbiddenException",
                  e->type + ": " + e->message};
  }
  return std::nullopt;
}

std::optional<Denied> SurfaceAuth::CheckMetrics(const http::Request& req) const {
  if (!metrics_require_auth()) return std::nullopt;
  auto bearer = BearerMatches(req);
  if (bearer && *bearer) return std::nullopt;
  return Denied{401, "NotAuthorizedException",
                bearer ? "The bearer token is not valid."
                       : "/metrics needs 'Authorization: Bearer <token>' with a token from [auth] "
                         "bearer_tokens (or [auth] public_metrics = true)."};
}

http::Response MetricsDenied(const Denied& d) {
  http::Response r;
  r.status = d.status;
  r.SetHeader("Content-Type", "application/json");
  r.SetHeader("WWW-Authenticate", "Bearer");
  r.body = nlohmann::json{{"message", d.message}}.dump();
  return r;
}

}  // namespace icestream::server
