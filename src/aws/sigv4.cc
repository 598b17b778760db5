// SigV4 implementation (AWS General Reference, "Signature Version 4 signing process").
#include "aws/sigv4.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "common/crypto.h"
#include "common/time_format.h"

namespace icestream::aws {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Header value as SigV4 canonicalizes it: trimmed, inner runs of spaces collapsed.
std::string CanonicalValue(std::string_view v) {
  v = Trim(v);
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      if (!space) out.push_back(' ');
      space = true;
    } else {
      out.push_back(c);
      space = false;
    }
  }
  return out;
}

}  // namespace

Result<ParsedAuthorization> ParseAuthorization(std::string_view h) {
  constexpr std::string_view kAlgo = "AWS4-HMAC-SHA256";
  ParsedAuthorization out;
  bool have_cred = false, have_sh = false, have_sig = false;
  // AWS reads "<algorithm> k=v, k=v ...": parameters separated by commas or spaces, the
  // first word being the algorithm (kinesalite's suite).
  size_t first = h.find_first_of(", ");
  std::string_view algo = h.substr(0, first);
  h = first == std::string_view::npos ? std::string_view() : h.substr(first);
  Status bad_credential;
  while (!h.empty()) {
    size_t sep = h.find_first_of(", ");
    std::string_view part = h.substr(0, sep);
    h = sep == std::string_view::npos ? std::string_view() : h.substr(sep + 1);
    part = Trim(part);
    size_t eq = part.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = part.substr(0, eq), val = part.substr(eq + 1);
    if (key == "Credential" && !val.empty()) {
      std::vector<std::string_view> f;
      size_t start = 0;
      for (size_t i = 0; i <= val.size(); ++i) {
        if (i == val.size() || val[i] == '/') {
          f.push_back(val.substr(start, i - start));
          start = i + 1;
        }
      }
      have_cred = true;
      if (f.size() != 5 || f[4] != "aws4_request") {
        bad_credential =
            InvalidArgument("Credential should be scoped to a valid region, service and date. ");
        continue;
      }
      out.access_key_id = f[0];
      out.date = f[1];
      out.region = f[2];
      out.service = f[3];
    } else if (key == "SignedHeaders" && !val.empty()) {
      size_t start = 0;
      for (size_t i = 0; i <= val.size(); ++i) {
        if (i == val.size() || val[i] == ';') {
          if (i > start) out.signed_headers.emplace_back(val.substr(start, i - start));
          start = i + 1;
        }
      }
      have_sh = true;
    } else if (key == "Signature" && !val.empty()) {
      out.signature = val;
      have_sig = true;
    }
  }
  // AWS names every missing parameter, in this order (kinesalite's suite).
  std::string missing;
  if (!have_cred) missing += "Authorization header requires 'Credential' parameter. ";
  if (!have_sig) missing += "Authorization header requires 'Signature' parameter. ";
  if (!have_sh) missing += "Authorization header requires 'SignedHeaders' parameter. ";
  if (!missing.empty()) return InvalidArgument(missing);
  if (!bad_credential.ok()) return bad_credential;
  if (algo != kAlgo) {
    return InvalidArgument("Unsupported AWS 'algorithm': '" + std::string(algo) + "'. ");
  }
  return out;
}

std::string UriEncode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string UriDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto hexval = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hexval(s[i + 1]) * 16 + hexval(s[i + 2])));
      i += 2;
    } else if (s[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string CanonicalQuery(std::string_view raw) {
  std::vector<std::pair<std::string, std::string>> params;
  size_t start = 0;
  for (size_t i = 0; i <= raw.size(); ++i) {
    if (i == raw.size() || raw[i] == '&') {
      std::string_view kv = raw.substr(start, i - start);
      start = i + 1;
      if (kv.empty()) continue;
      size_t eq = kv.find('=');
      std::string k = UriDecode(kv.substr(0, eq));
      std::string v = eq == std::string_view::npos ? "" : UriDecode(kv.substr(eq + 1));
      params.emplace_back(UriEncode(k, false), UriEncode(v, false));
    }
  }
  std::sort(params.begin(), params.end());
  std::string out;
  for (size_t i = 0; i < params.size(); ++i) {
    if (i) out.push_back('&');
    out += params[i].first + "=" + params[i].second;
  }
  return out;
}

std::string CanonicalRequest(const CanonicalInput& in,
                             const std::vector<std::string>& signed_headers) {
  std::string out;
  out += in.method;
  out += '\n';
  out += in.path.empty() ? std::string_view("/") : in.path;
  out += '\n';
  out += CanonicalQuery(in.query);
  out += '\n';
  std::vector<std::string> names = signed_headers;
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    std::string joined;
    for (const auto& h : *in.headers) {
      if (h.name == n) {
        if (!joined.empty()) joined += ',';
        joined += CanonicalValue(h.value);
      }
    }
    out += n + ":" + joined + "\n";
  }
  out += '\n';
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += ';';
    out += names[i];
  }
  out += '\n';
  out += in.payload_sha256_hex;
  return out;
}

std::string ComputeSignature(std::string_view secret, std::string_view date8,
                             std::string_view region, std::string_view service,
                             std::string_view amz_date, std::string_view canonical_request) {
  std::string scope = fmt::format("{}/{}/{}/aws4_request", date8, region, service);
  std::string to_sign = fmt::format("AWS4-HMAC-SHA256\n{}\n{}\n{}", amz_date, scope,
                                    crypto::Hex(crypto::Sha256(canonical_request)));
  auto k_date = crypto::HmacSha256("AWS4" + std::string(secret), date8);
  auto k_region = crypto::HmacSha256(crypto::AsString(k_date), region);
  auto k_service = crypto::HmacSha256(crypto::AsString(k_region), service);
  auto k_signing = crypto::HmacSha256(crypto::AsString(k_service), "aws4_request");
  return crypto::Hex(crypto::HmacSha256(crypto::AsString(k_signing), to_sign));
}

void SignRequest(std::string_view method, std::string_view path, std::string_view query,
                 std::vector<http::Header>* headers, std::string_view payload_sha256_hex,
                 const Credentials& creds, std::string_view region, std::string_view service,
                 int64_t now_ms) {
  std::string amz_date = FormatAmzDate(now_ms);
  auto set = [&](std::string name, std::string value) {
    for (auto& h : *headers) {
      if (h.name == name) {
        h.value = std::move(value);
        return;
      }
    }
    headers->push_back({std::move(name), std::move(value)});
  };
  set("x-amz-date", amz_date);
  set("x-amz-content-sha256", std::string(payload_sha256_hex));
  if (!creds.session_token.empty()) set("x-amz-security-token", creds.session_token);
  std::vector<std::string> signed_names;
  for (const auto& h : *headers) {
    if (h.name == "host" || h.name == ":authority" || h.name.starts_with("x-amz-") ||
        h.name == "content-type" || h.name == "content-md5") {
      if (std::find(signed_names.begin(), signed_names.end(), h.name) == signed_names.end()) {
        signed_names.push_back(h.name);
      }
    }
  }
  std::sort(signed_names.begin(), signed_names.end());
  CanonicalInput in{method, path, query, headers, payload_sha256_hex};
  std::string canonical = CanonicalRequest(in, signed_names);
  std::string date8 = amz_date.substr(0, 8);
  std::string sig =
      ComputeSignature(creds.secret_access_key, date8, region, service, amz_date, canonical);
  std::string joined;
  for (size_t i = 0; i < signed_names.size(); ++i) {
    if (i) joined += ';';
    joined += signed_names[i];
  }
  set("authorization",
      fmt::format("AWS4-HMAC-SHA256 Credential={}/{}/{}/{}/aws4_request, SignedHeaders={}, "
                  "Signature={}",
                  creds.access_key_id, date8, region, service, joined, sig));
}

Authenticator::Authenticator(AuthenticatorOptions options) : options_(std::move(options)) {
  if (options_.clock == nullptr) options_.clock = SystemClock::Default();
}

namespace {

ApiError InvalidSignature(std::string message) {
  return ApiError{"InvalidSignatureException", std::move(message), 400};
}

bool Signed(const ParsedAuthorization& auth, std::string_view name) {
  return std::find(auth.signed_headers.begin(), auth.signed_headers.end(), name) !=
         auth.signed_headers.end();
}

// Equal strings in time that does not depend on where they differ.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string Lower(std::string_view s) { return http::AsciiLower(std::string(s)); }

}  // namespace

std::optional<ApiError> Authenticator::Check(const http::Request& req,
                                             std::string_view service) const {
  std::string_view auth = req.GetHeader("authorization");
  // Query-string parameters by name (names only matter here: no decoding needed).
  std::map<std::string_view, std::string_view> query;
  for (std::string_view rest = req.query; !rest.empty();) {
    size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    size_t eq = pair.find('=');
    query.emplace(pair.substr(0, eq),
                  eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
  }
  bool query_auth = query.count("X-Amz-Algorithm") > 0;
  if (auth.empty() && !query_auth) {
    return ApiError{"MissingAuthenticationTokenException", "Missing Authentication Token", 400};
  }
  if (!auth.empty() && query_auth) {
    return InvalidSignature(
        "Found both 'X-Amz-Algorithm' as a query-string param and 'Authorization' as HTTP "
        "header.");
  }
  if (query_auth) {
    // AWS names every missing (or empty) parameter first (recorded by kinesalite's suite).
    std::string missing;
    for (std::string_view name : {"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature",
                                  "X-Amz-SignedHeaders", "X-Amz-Date"}) {
      auto it = query.find(name);
      if (it == query.end() || it->second.empty()) {
        missing += fmt::format("AWS query-string parameters must include '{}'. ", name);
      }
    }
    if (!missing.empty()) {
      return ApiError{"IncompleteSignatureException",
                      missing + "Re-examine the query-string parameters.", 400};
    }
    // No Kinesis, Glue or Iceberg client presigns; rather than verify a second form,
    // it is refused in every mode.
    return InvalidSignature(
        "Query-string (presigned) authentication is not accepted by this server; sign the "
        "Authorization header.");
  }
  // Missing parameters and a missing date are reported together, then the header itself
  // (AWS's text, kinesalite's suite).
  auto parsed = ParseAuthorization(auth);
  std::string incomplete = parsed.ok() ? std::string() : parsed.status().message();
  if (req.GetHeader("x-amz-date").empty() && req.GetHeader("date").empty()) {
    incomplete +=
        "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. ";
  }
  if (!incomplete.empty()) {
    return ApiError{"IncompleteSignatureException",
                    incomplete + "Authorization=" + std::string(auth), 400};
  }
  if (parsed->service != service) {
    return InvalidSignature(
        fmt::format("Credential should be scoped to correct service: '{}'. ", service));
  }
  if (parsed->region != options_.region) {
    return InvalidSignature(fmt::format(
        "Credential should be scoped to a valid region, not '{}'. This server serves region "
        "'{}' (the `region` setting).",
        parsed->region, options_.region));
  }
  std::string content_sha = Lower(req.GetHeader("x-amz-content-sha256"));
  if (content_sha == "unsigned-payload" || content_sha.starts_with("streaming-")) {
    return InvalidSignature(fmt::format(
        "x-amz-content-sha256 {} is not accepted: the payload must be signed (its SHA-256 in "
        "the canonical request).",
        req.GetHeader("x-amz-content-sha256")));
  }
  if (options_.secrets.empty()) return std::nullopt;
  return Verify(req, *parsed, service);
}

std::optional<ApiError> Authenticator::Verify(const http::Request& req,
                                              const ParsedAuthorization& auth,
                                              std::string_view service) const {
  auto secret = options_.secrets.find(auth.access_key_id);
  if (secret == options_.secrets.end()) {
    return ApiError{"UnrecognizedClientException",
                    "The security token included in the request is invalid.", 400};
  }
  // What binds the signature to this request must be signed.
  std::string_view amz_date = req.GetHeader("x-amz-date");
  // HTTP/2 clients (the JS SDK's default handler) sign the :authority pseudo-header.
  if (!Signed(auth, "host") && !Signed(auth, ":authority")) {
    return InvalidSignature(
        "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.");
  }
  if (!amz_date.empty() ? !Signed(auth, "x-amz-date") : !Signed(auth, "date")) {
    return InvalidSignature(fmt::format("'{}' must be a 'SignedHeader' in the AWS Authorization.",
                                        amz_date.empty() ? "Date" : "X-Amz-Date"));
  }
  if (req.HasHeader("x-amz-target") && !Signed(auth, "x-amz-target")) {
    return InvalidSignature("'X-Amz-Target' must be a 'SignedHeader' in the AWS Authorization.");
  }
  // The request time: X-Amz-Date, else the Date header.
  std::optional<int64_t> when =
      amz_date.empty() ? ParseHttpDate(req.GetHeader("date")) : ParseAmzDate(amz_date);
  if (!when) {
    return ApiError{"IncompleteSignatureException",
                    fmt::format("Date must be in ISO-8601 'basic format'. Got '{}'. See "
                                "http://en.wikipedia.org/wiki/ISO_8601",
                                amz_date.empty() ? req.GetHeader("date") : amz_date),
                    400};
  }
  std::string iso_date = FormatAmzDate(*when);
  if (auth.date != iso_date.substr(0, 8)) {
    return InvalidSignature(fmt::format(
        "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from "
        "HTTP: '{}' != '{}', from '{}'.",
        auth.date, iso_date.substr(0, 8), iso_date));
  }
  int64_t now = options_.clock->NowMillis();
  int64_t skew = options_.max_skew_ms;
  int64_t skew_min = skew / 60000;
  if (*when < now - skew) {
    return InvalidSignature(
        fmt::format("Signature expired: {} is now earlier than {} ({} - {} min.)", iso_date,
                    FormatAmzDate(now - skew), FormatAmzDate(now), skew_min));
  }
  if (*when > now + skew) {
    return InvalidSignature(
        fmt::format("Signature not yet current: {} is still later than {} ({} + {} min.)", iso_date,
                    FormatAmzDate(now + skew), FormatAmzDate(now), skew_min));
  }
  // The payload hash is the body's, whatever a header claims.
  std::string payload_hash = crypto::Hex(crypto::Sha256(req.body));
  std::string claimed = Lower(req.GetHeader("x-amz-content-sha256"));
  if (!claimed.empty() && claimed != payload_hash) {
    return InvalidSignature(
        "The provided 'x-amz-content-sha256' header does not match what was computed.");
  }
  // Services other than S3 sign the path encoded once more (botocore SigV4Auth, the
  // AWS SDKs' default "double URL encode"): a %1F on the wire is %251F in the canonical URI.
  std::string path = service == "s3" ? req.path : UriEncode(req.path, /*keep_slash=*/true);
  CanonicalInput in{req.method, path, req.query, &req.headers, payload_hash};
  std::string canonical = CanonicalRequest(in, auth.signed_headers);
  std::string expected =
      ComputeSignature(secret->second, auth.date, auth.region, auth.service, iso_date, canonical);
  if (!ConstantTimeEquals(expected, Lower(auth.signature))) {
    // What the client should have signed, for whoever debugs a client (never the secret).
    spdlog::debug("signature mismatch for key {}; canonical request:\n{}", auth.access_key_id,
                  canonical);
    return InvalidSignature(
        "The request signature we calculated does not match the signature you provided. Check "
        "your AWS Secret Access Key and signing method. Consult the service documentation for "
        "details.");
  }
  return std::nullopt;
}

}  // namespace icestream::aws
