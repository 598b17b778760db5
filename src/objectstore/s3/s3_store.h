// S3ObjectStore: any S3-compatible store over HTTP, signed with our own SigV4. Path-style
// (http://host:port/bucket/key, the default for custom endpoints) or virtual-hosted
// addressing; multipart uploads above a threshold; retries with full-jitter exponential
// backoff on 5xx, 429, SlowDown, RequestTimeout, timeouts and connection resets — never
// on other 4xx. `x-amz-expected-bucket-owner` goes on every call that names an owner.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "aws/sigv4.h"
#include "common/clock.h"
#include "http/client.h"
#include "objectstore/object_store.h"

namespace icestream::objectstore::s3 {

struct S3Options {
  std::string endpoint;  // "http://127.0.0.1:17480" or "https://s3.us-east-1.amazonaws.com"
  std::string region = "us-east-1";
  aws::Credentials credentials;
  bool path_style = true;
  uint64_t multipart_threshold = 16ull << 20;
  uint64_t part_size = 8ull << 20;  // >= 5 MiB (S3's minimum for all but the last part)
  int max_attempts = 8;
  int base_backoff_ms = 100;
  int max_backoff_ms = 5000;
  int request_timeout_ms = 120000;
  // A request is tried again only while less than this has passed since its first
  // attempt began: quick failures (5xx, SlowDown, resets) get their few retries, but a
  // request that stalled for the whole low-speed window is not retried in place (the
  // caller's own retry policy decides: delivery backs the batch off).
  int retry_budget_ms = 10000;
};

// Credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN.
aws::Credentials CredentialsFromEnvironment();

class S3ObjectStore final : public ObjectStore {
 public:
  explicit S3ObjectStore(S3Options options, const Clock* clock = SystemClock::Default());

  Status Put(const std::string& bucket, const std::string& key, std::string_view data,
             const PutOptions& options = {}) override;
  Result<std::string> Get(const std::string& bucket, const std::string& key,
                          const ReadOptions& options = {}) override;
  Result<std::string> GetRange(const std::string& bucket, const std::string& key, uint64_t offset,
                               uint64_t length, const ReadOptions& options = {}) override;
  Result<ObjectInfo> Head(const std::string& bucket, const std::string& key,
                          const ReadOptions& options = {}) override;
  Result<std::vector<ObjectInfo>> List(const std::string& bucket, const std::string& prefix,
                                       const ReadOptions& options = {}) override;
  Status Delete(const std::string& bucket, const std::string& key,
                const ReadOptions& options = {}) override;
  Status CheckBucket(const std::string& bucket, const ReadOptions& options = {}) override;
  std::string Uri(const std::string& bucket, const std::string& key) const override;

  // Requests sent and retried (for tests and metrics).
  uint64_t requests_sent() const { return requests_.load(); }
  uint64_t retries() const { return retries_.load(); }
  void Abort() override { client_->Abort(); }

 private:
  struct Call {
    std::string method;
    std::string bucket;
    std::string key;    // may be empty (bucket-level call)
    std::string query;  // raw, already encoded
    std::vector<http::Header> headers;
    std::string_view body;
  };
  // Sends with signing and retries. Returns the last response (any status) or a transport
  // error after the retries are spent.
  Result<http::ClientResponse> Send(const Call& call);
  Status PutMultipart(const std::string& bucket, const std::string& key, std::string_view data,
                      const PutOptions& options);
  static Status ErrorFrom(const http::ClientResponse& r, const std::string& what);

  S3Options options_;
  const Clock* clock_;
  std::string scheme_;
  std::string host_;  // host[:port] of the endpoint
  std::unique_ptr<http::HttpClient> client_;
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> retries_{0};
};

}  // namespace icestream::objectstore::s3
