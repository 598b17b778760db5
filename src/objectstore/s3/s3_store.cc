// S3 REST calls (PutObject, multipart upload, GetObject, HeadObject, ListObjectsV2,
// DeleteObject, HeadBucket) with SigV4 and retries.
#include "objectstore/s3/s3_store.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "common/crypto.h"
#include "objectstore/s3/s3_xml.h"

namespace icestream::objectstore::s3 {
namespace {

bool Retryable(int status, const std::string& code) {
  return status >= 500 || status == 429 || code == "SlowDown" || code == "RequestTimeout" ||
         code == "InternalError" || code == "ServiceUnavailable" || code == "RequestTimeTooSkewed";
}

std::string EncodeKey(const std::string& key) { return aws::UriEncode(key, true); }

}  // namespace

aws::Credentials CredentialsFromEnvironment() {
  aws::Credentials c;
  if (const char* v = std::getenv("AWS_ACCESS_KEY_ID")) c.access_key_id = v;
  if (const char* v = std::getenv("AWS_SECRET_ACCESS_KEY")) c.secret_access_key = v;
  if (const char* v = std::getenv("AWS_SESSION_TOKEN")) c.session_token = v;
  return c;
}

S3ObjectStore::S3ObjectStore(S3Options options, const Clock* clock)
    : options_(std::move(options)), clock_(clock) {
  std::string ep = options_.endpoint;
  while (!ep.empty() && ep.back() == '/') ep.pop_back();
  auto sep = ep.find("://");
  scheme_ = sep == std::string::npos ? "http" : ep.substr(0, sep);
  host_ = sep == std::string::npos ? ep : ep.substr(sep + 3);
  if (auto slash = host_.find('/'); slash != std::string::npos) host_ = host_.substr(0, slash);
  // The Host header omits the scheme's default port, as clients (and signers) do.
  if ((scheme_ == "http" && host_.ends_with(":80")) ||
      (scheme_ == "https" && host_.ends_with(":443"))) {
    host_ = host_.substr(0, host_.rfind(':'));
  }
  http::HttpClientOptions co;
  co.timeout_ms = options_.request_timeout_ms;
  client_ = std::make_unique<http::HttpClient>(co);
}

std::string S3ObjectStore::Uri(const std::string& bucket, const std::string& key) const {
  return "s3://" + bucket + "/" + key;
}

Status S3ObjectStore::ErrorFrom(const http::ClientResponse& r, const std::string& what) {
  std::string code = XmlText(r.body, "Code").value_or("");
  std::string msg = XmlText(r.body, "Message").value_or("");
  std::string text =
      fmt::format("{}: HTTP {} {}{}{}", what, r.status, code, msg.empty() ? "" : ": ", msg);
  if (r.status == 404 || code == "NoSuchKey" || code == "NoSuchBucket") return NotFound(text);
  if (r.status == 412 || r.status == 409) return Conflict(text);
  if (r.status == 403 || r.status == 401) return FailedPrecondition(text);
  if (Retryable(r.status, code)) return Unavailable(text);
  return InvalidArgument(text);
}

Result<http::ClientResponse> S3ObjectStore::Send(const Call& call) {
  std::string path;
  std::string host = host_;
  if (options_.path_style || call.bucket.empty()) {
    path = "/" + call.bucket;
    if (!call.key.empty()) path += "/" + EncodeKey(call.key);
  } else {
    host = call.bucket + "." + host_;
    path = "/" + EncodeKey(call.key);
  }
  std::string url = scheme_ + "://" + host + path + (call.query.empty() ? "" : "?" + call.query);
  std::string payload_hash = crypto::Hex(crypto::Sha256(call.body));
  std::mt19937_64 rng(crypto::RandomU64());
  Status last_transport;
  http::ClientResponse last;
  const auto started = std::chrono::steady_clock::now();
  // Another attempt follows only within the attempts and the time budget.
  auto again = [&](int attempt) {
    auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - started)
                     .count();
    return attempt < options_.max_attempts && spent < options_.retry_budget_ms;
  };
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    if (attempt > 1) {
      retries_.fetch_add(1);
      // Full jitter: uniform in [0, min(cap, base * 2^attempt)).
      int64_t cap = std::min<int64_t>(options_.max_backoff_ms,
                                      int64_t{options_.base_backoff_ms} << std::min(attempt, 16));
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % std::max<int64_t>(1, cap)));
    }
    std::vector<http::Header> headers = call.headers;
    headers.push_back({"host", host});
    aws::SignRequest(call.method, path, call.query, &headers, payload_hash, options_.credentials,
                     options_.region, "s3", clock_->NowMillis());
    requests_.fetch_add(1);
    auto r = client_->Send({call.method, url, headers, call.body, 0});
    if (!r.ok()) {
      if (r.status().code() == StatusCode::kShuttingDown) return r.status();
      last_transport = r.status();
      const bool retry = again(attempt);
      spdlog::warn("s3 {} {}: {} (attempt {} of {}{})", call.method, url, r.status().ToString(),
                   attempt, options_.max_attempts, retry ? ", retrying" : ", giving up");
      if (!retry) break;
      continue;
    }
    std::string code = r->status >= 300 ? XmlText(r->body, "Code").value_or("") : "";
    // CompleteMultipartUpload can fail with 200 and an <Error> body.
    if (r->status == 200 && call.method == "POST" && r->body.find("<Error>") != std::string::npos) {
      code = XmlText(r->body, "Code").value_or("InternalError");
      r->status = 500;
    }
    if (r->status < 300 || !Retryable(r->status, code)) return r;
    last = std::move(*r);
    last_transport = Status::OK();
    const bool retry = again(attempt);
    spdlog::warn("s3 {} {}: HTTP {} {} (attempt {} of {}{})", call.method, url, last.status, code,
                 attempt, options_.max_attempts, retry ? ", retrying" : ", giving up");
    if (!retry) break;
  }
  if (!last_transport.ok()) return last_transport;
  return last;
}

Status S3ObjectStore::Put(const std::string& bucket, const std::string& key, std::string_view data,
                          const PutOptions& o) {
  if (data.size() >= options_.multipart_threshold) return PutMultipart(bucket, key, data, o);
  Call call{"PUT", bucket, key, "", {}, data};
  if (!o.content_type.empty()) call.headers.push_back({"content-type", o.content_type});
  if (!o.content_encoding.empty()) call.headers.push_back({"content-encoding", o.content_encoding});
  if (!o.storage_class.empty()) call.headers.push_back({"x-amz-storage-class", o.storage_class});
  if (!o.server_side_encryption.empty()) {
    call.headers.push_back({"x-amz-server-side-encryption", o.server_side_encryption});
  }
  if (!o.sse_kms_key_id.empty()) {
    call.headers.push_back({"x-amz-server-side-encryption-aws-kms-key-id", o.sse_kms_key_id});
  }
  if (!o.expected_bucket_owner.empty()) {
    call.headers.push_back({"x-amz-expected-bucket-owner", o.expected_bucket_owner});
  }
  if (o.if_none_match) call.headers.push_back({"if-none-match", "*"});
  ASSIGN_OR_RETURN(auto r, Send(call));
  if (r.status >= 300) return ErrorFrom(r, "PUT s3://" + bucket + "/" + key);
  return Status::OK();
}

Status S3ObjectStore::PutMultipart(const std::string& bucket, const std::string& key,
                                   std::string_view data, const PutOptions& o) {
  std::string what = "multipart upload s3://" + bucket + "/" + key;
  Call create{"POST", bucket, key, "uploads=", {}, {}};
  if (!o.content_type.empty()) create.headers.push_back({"content-type", o.content_type});
  if (!o.content_encoding.empty())
    create.headers.push_back({"content-encoding", o.content_encoding});
  if (!o.storage_class.empty()) create.headers.push_back({"x-amz-storage-class", o.storage_class});
  if (!o.server_side_encryption.empty()) {
    create.headers.push_back({"x-amz-server-side-encryption", o.server_side_encryption});
  }
  if (!o.sse_kms_key_id.empty()) {
    create.headers.push_back({"x-amz-server-side-encryption-aws-kms-key-id", o.sse_kms_key_id});
  }
  std::vector<http::Header> owner;
  if (!o.expected_bucket_owner.empty())
    owner.push_back({"x-amz-expected-bucket-owner", o.expected_bucket_owner});
  create.headers.insert(create.headers.end(), owner.begin(), owner.end());
  ASSIGN_OR_RETURN(auto cr, Send(create));
  if (cr.status >= 300) return ErrorFrom(cr, what);
  auto upload_id = XmlText(cr.body, "UploadId");
  if (!upload_id) return Internal(what + ": no UploadId in the response");
  std::string uid_q = "uploadId=" + aws::UriEncode(*upload_id, false);

  auto abort = [&] {
    Call a{"DELETE", bucket, key, uid_q, owner, {}};
    auto ar = Send(a);
    if (!ar.ok() || ar->status >= 300) spdlog::warn("{}: abort failed", what);
  };
  std::string complete = "<CompleteMultipartUpload>";
  uint64_t part_size = std::max<uint64_t>(options_.part_size, 5ull << 20);
  int part = 1;
  for (uint64_t off = 0; off < data.size(); off += part_size, ++part) {
    std::string_view chunk = data.substr(off, part_size);
    Call up{"PUT", bucket, key, fmt::format("partNumber={}&{}", part, uid_q), owner, chunk};
    auto ur = Send(up);
    if (!ur.ok() || ur->status >= 300) {
      abort();
      return ur.ok() ? ErrorFrom(*ur, what) : ur.status();
    }
    std::string etag(ur->GetHeader("etag"));
    complete += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", part,
                            XmlEscape(etag));
  }
  complete += "</CompleteMultipartUpload>";
  Call done{"POST", bucket, key, uid_q, owner, complete};
  done.headers.push_back({"content-type", "application/xml"});
  if (o.if_none_match) done.headers.push_back({"if-none-match", "*"});
  auto dr = Send(done);
  if (dr.ok() && dr->status == 404 && XmlText(dr->body, "Code").value_or("") == "NoSuchUpload") {
    // A retried completion whose first attempt succeeded (its reply was lost): the upload
    // id is gone because the object is complete. Believe it only if the object is there
    // with the right size.
    auto head = Head(bucket, key, {o.expected_bucket_owner});
    if (head.ok() && head->size == data.size()) return Status::OK();
  }
  if (!dr.ok() || dr->status >= 300) {
    abort();
    return dr.ok() ? ErrorFrom(*dr, what) : dr.status();
  }
  return Status::OK();
}

Result<std::string> S3ObjectStore::Get(const std::string& bucket, const std::string& key,
                                       const ReadOptions& o) {
  Call call{"GET", bucket, key, "", {}, {}};
  if (!o.expected_bucket_owner.empty())
    call.headers.push_back({"x-amz-expected-bucket-owner", o.expected_bucket_owner});
  ASSIGN_OR_RETURN(auto r, Send(call));
  if (r.status >= 300) return ErrorFrom(r, "GET s3://" + bucket + "/" + key);
  return std::move(r.body);
}

Result<std::string> S3ObjectStore::GetRange(const std::string& bucket, const std::string& key,
                                            uint64_t offset, uint64_t length,
                                            const ReadOptions& o) {
  if (length == 0) return std::string();
  Call call{
      "GET", bucket, key, "", {{"range", fmt::format("bytes={}-{}", offset, offset + length - 1)}},
      {}};
  if (!o.expected_bucket_owner.empty())
    call.headers.push_back({"x-amz-expected-bucket-owner", o.expected_bucket_owner});
  ASSIGN_OR_RETURN(auto r, Send(call));
  if (r.status == 416) return std::string();  // range past the end
  if (r.status >= 300) return ErrorFrom(r, "GET s3://" + bucket + "/" + key);
  return std::move(r.body);
}

Result<ObjectInfo> S3ObjectStore::Head(const std::string& bucket, const std::string& key,
                                       const ReadOptions& o) {
  Call call{"HEAD", bucket, key, "", {}, {}};
  if (!o.expected_bucket_owner.empty())
    call.headers.push_back({"x-amz-expected-bucket-owner", o.expected_bucket_owner});
  ASSIGN_OR_RETURN(auto r, Send(call));
  if (r.status >= 300) return ErrorFrom(r, "HEAD s3://" + bucket + "/" + key);
  ObjectInfo info;
  info.key = key;
  info.size = std::strtoull(std::string(r.GetHeader("content-length")).c_str(), nullptr, 10);
  info.etag = r.GetHeader("etag");
  return info;
}

Result<std::vector<ObjectInfo>> S3ObjectStore::List(const std::string& bucket,
                                                    const std::string& prefix,
                                                    const ReadOptions& o) {
  std::vector<ObjectInfo> out;
  std::string token;
  do {
    std::string q = "list-type=2&max-keys=1000";
    if (!token.empty()) q = "continuation-token=" + aws::UriEncode(token, false) + "&" + q;
    if (!prefix.empty()) q += "&prefix=" + aws::UriEncode(prefix, false);
    Call call{"GET", bucket, "", q, {}, {}};
    if (!o.expected_bucket_owner.empty())
      call.headers.push_back({"x-amz-expected-bucket-owner", o.expected_bucket_owner});
    ASSIGN_OR_RETURN(auto r, Send(call));
    if (r.status >= 300) return ErrorFrom(r, "LIST s3://" + bucket + "/" + prefix);
    ListPage page = ParseListObjectsV2(r.body);
    for (auto& obj : page.objects) out.push_back(std::move(obj));
    token = page.truncated ? page.next_token : "";
  } while (!token.empty());
  return out;
}

Status S3ObjectStore::Delete(const std::string& bucket, const std::string& key,
                             const ReadOptions& o) {
  Call call{"DELETE", bucket, key, "", {}, {}};
  if (!o.expected_bucket_owner.empty())
    call.headers.push_back({"x-amz-expected-bucket-owner", o.expected_bucket_owner});
  ASSIGN_OR_RETURN(auto r, Send(call));
  if (r.status >= 300 && r.status != 404) return ErrorFrom(r, "DELETE s3://" + bucket + "/" + key);
  return Status::OK();
}

Status S3ObjectStore::CheckBucket(const std::string& bucket, const ReadOptions& o) {
  Call call{"HEAD", bucket, "", "", {}, {}};
  if (!o.expected_bucket_owner.empty())
    call.headers.push_back({"x-amz-expected-bucket-owner", o.expected_bucket_owner});
  ASSIGN_OR_RETURN(auto r, Send(call));
  if (r.status == 404) return NotFound("bucket " + bucket + " does not exist");
  if (r.status == 403) {
    return FailedPrecondition("bucket " + bucket +
                              " is not accessible (access denied, or it is "
                              "not owned by account " +
                              o.expected_bucket_owner + ")");
  }
  if (r.status >= 300) return ErrorFrom(r, "HEAD bucket " + bucket);
  return Status::OK();
}

}  // namespace icestream::objectstore::s3
