// MemoryObjectStore: an ObjectStore held in memory, for unit tests of whatever writes
// through the seam (sinks, the DLQ writer, catalogs). It behaves as the other stores do
// (whole-object puts, If-None-Match, key-ordered listing, ranges, buckets created on first
// use) and adds what a test needs to see and to break: every object's PutOptions, counts of
// calls, a bucket owner that x-amz-expected-bucket-owner is checked against, and a fault
// hook that fails chosen calls before they take effect.
//
// Thread-safe (one mutex); the fault hook runs under no lock and may be called from any
// thread.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "objectstore/object_store.h"

namespace icestream::objectstore {

class MemoryObjectStore final : public ObjectStore {
 public:
  enum class Op { kPut, kGet, kGetRange, kHead, kList, kDelete, kCheckBucket };
  // Called before every operation; a non-OK status fails the call without any effect.
  using Fault = std::function<Status(Op op, const std::string& bucket, const std::string& key)>;

  // `clock` stamps last_modified_ms (the system clock when null); it must outlive the store.
  explicit MemoryObjectStore(const Clock* clock = nullptr) : clock_(clock) {}

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
  // "mem://<bucket>/<key>".
  std::string Uri(const std::string& bucket, const std::string& key) const override;

  // Test controls.
  void SetFault(Fault fault);
  // Calls naming a different expected_bucket_owner then fail with kFailedPrecondition, as
  // S3 answers 403 AccessDenied.
  void SetBucketOwner(const std::string& bucket, const std::string& account);
  // The options the object was last written with (nullopt: no such object).
  std::optional<PutOptions> OptionsOf(const std::string& bucket, const std::string& key) const;
  // Calls of `op` so far, successful or not (faulted calls included).
  size_t Calls(Op op) const;
  // Every object of `bucket`, key -> bytes.
  std::map<std::string, std::string> Objects(const std::string& bucket) const;

 private:
  struct Object {
    std::string data;
    PutOptions options;
    int64_t last_modified_ms = 0;
    std::string etag;
  };
  struct Bucket {
    std::string owner;  // empty: any expected owner passes
    std::map<std::string, Object> objects;
  };
  // Counts the call, runs the fault hook, checks names (and the owner, once the bucket
  // exists). Takes mu_ itself.
  Status Enter(Op op, const std::string& bucket, const std::string& key,
               const std::string& expected_owner);
  int64_t Now() const;

  const Clock* clock_;
  Fault fault_;
  mutable std::mutex mu_;
  std::map<std::string, Bucket> buckets_;
  std::map<Op, size_t> calls_;
};

}  // namespace icestream::objectstore
