// ObjectStore: the one seam between icestream and where objects live — local folders in
// the embedded mode, any S3-compatible store otherwise (ARCHITECTURE.md §5).
//
// Errors: kNotFound (no such bucket or key), kConflict (a conditional write lost:
// If-None-Match on an existing key), kUnavailable (transient; the S3 implementation has
// already retried), kFailedPrecondition (access denied, wrong bucket owner, KMS key
// refused), kInvalidArgument (the request itself is wrong), kIOError (local disk).
// Thread-safety: implementations are safe to call from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace icestream::objectstore {

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  int64_t last_modified_ms = 0;
  std::string etag;
};

struct PutOptions {
  std::string content_type;
  std::string content_encoding;
  std::string storage_class;           // S3 x-amz-storage-class; ignored locally
  std::string server_side_encryption;  // "aws:kms" or empty
  std::string sse_kms_key_id;
  std::string expected_bucket_owner;  // x-amz-expected-bucket-owner
  bool if_none_match = false;         // fail with kConflict if the key exists
};

struct ReadOptions {
  std::string expected_bucket_owner;
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // Writes the whole object; on success it is durable and visible as a whole.
  virtual Status Put(const std::string& bucket, const std::string& key, std::string_view data,
                     const PutOptions& options = {}) = 0;
  virtual Result<std::string> Get(const std::string& bucket, const std::string& key,
                                  const ReadOptions& options = {}) = 0;
  // Bytes [offset, offset + length) (shorter at the end of the object).
  virtual Result<std::string> GetRange(const std::string& bucket, const std::string& key,
                                       uint64_t offset, uint64_t length,
                                       const ReadOptions& options = {}) = 0;
  virtual Result<ObjectInfo> Head(const std::string& bucket, const std::string& key,
                                  const ReadOptions& options = {}) = 0;
  // Every object whose key starts with `prefix`, in key order.
  virtual Result<std::vector<ObjectInfo>> List(const std::string& bucket, const std::string& prefix,
                                               const ReadOptions& options = {}) = 0;
  // Deleting a missing key is not an error.
  virtual Status Delete(const std::string& bucket, const std::string& key,
                        const ReadOptions& options = {}) = 0;
  // Checks that the bucket exists and is usable (owner, permissions).
  virtual Status CheckBucket(const std::string& bucket, const ReadOptions& options = {}) = 0;
  // "file:///.../buckets/b" or "s3://b": how a location in this store is written in
  // metadata (Iceberg paths).
  virtual std::string Uri(const std::string& bucket, const std::string& key) const = 0;
  // The process stops: requests in flight end soon (kShuttingDown) instead of waiting for
  // a store that does not answer, and later ones fail at once. No-op where nothing waits.
  virtual void Abort() {}
};

// Bucket name from an S3 bucket ARN (arn:aws:s3:::name) or a plain name.
Result<std::string> BucketFromArn(std::string_view arn_or_name);

}  // namespace icestream::objectstore
