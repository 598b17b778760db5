// LocalObjectStore: buckets are folders `<root>/<bucket>/`, keys are paths below them.
// Put writes a temporary file, fsyncs it, renames it into place and fsyncs the folder, so
// an object is either absent or whole and durable. Objects of kDirectWriteMinBytes or more
// are written around the page cache (fs::WriteAllDirect). Buckets are created on first use.
// List leaves out the temporary files of Puts under way, and removes those of a process
// that died mid-Put (named "<key>.tmp-<pid>-<n>": that pid no longer runs): a crash
// leaves no file that nothing would ever remove.
#pragma once

#include <string>

#include "objectstore/object_store.h"

namespace icestream::objectstore {

class LocalObjectStore final : public ObjectStore {
 public:
  static constexpr size_t kDirectWriteMinBytes = 1 << 20;

  explicit LocalObjectStore(std::string root) : root_(std::move(root)) {}

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

  const std::string& root() const { return root_; }

 private:
  // Rejects names that would escape the root ("..", absolute keys, empty segments).
  Result<std::string> PathFor(const std::string& bucket, const std::string& key) const;
  std::string root_;
};

}  // namespace icestream::objectstore
