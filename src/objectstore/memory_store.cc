// MemoryObjectStore (memory_store.h).
#include "objectstore/memory_store.h"

#include "common/crypto.h"

namespace icestream::objectstore {

Status MemoryObjectStore::Enter(Op op, const std::string& bucket, const std::string& key,
                                const std::string& expected_owner) {
  Fault fault;
  {
    std::lock_guard lock(mu_);
    ++calls_[op];
    fault = fault_;
  }
  if (fault) RETURN_IF_ERROR(fault(op, bucket, key));
  if (bucket.empty() || bucket.find('/') != std::string::npos) {
    return InvalidArgument("invalid bucket name: " + bucket);
  }
  bool keyed = op != Op::kList && op != Op::kCheckBucket;
  if (keyed && key.empty()) return InvalidArgument("invalid object key: (empty)");
  if (!expected_owner.empty()) {
    std::lock_guard lock(mu_);
    auto it = buckets_.find(bucket);
    if (it != buckets_.end() && !it->second.owner.empty() && it->second.owner != expected_owner) {
      return FailedPrecondition("Access Denied: bucket " + bucket + " is not owned by " +
                                expected_owner);
    }
  }
  return Status::OK();
}

int64_t MemoryObjectStore::Now() const {
  return (clock_ != nullptr ? clock_ : SystemClock::Default())->NowMillis();
}

Status MemoryObjectStore::Put(const std::string& bucket, const std::string& key,
                              std::string_view data, const PutOptions& options) {
  RETURN_IF_ERROR(Enter(Op::kPut, bucket, key, options.expected_bucket_owner));
  Object o{std::string(data), options, Now(), "\"" + crypto::Hex(crypto::Md5(data)) + "\""};
  std::lock_guard lock(mu_);
  auto& objects = buckets_[bucket].objects;
  if (options.if_none_match && objects.count(key)) {
    return Conflict("object already exists: " + bucket + "/" + key);
  }
  objects[key] = std::move(o);
  return Status::OK();
}

Result<std::string> MemoryObjectStore::Get(const std::string& bucket, const std::string& key,
                                           const ReadOptions& options) {
  RETURN_IF_ERROR(Enter(Op::kGet, bucket, key, options.expected_bucket_owner));
  std::lock_guard lock(mu_);
  auto b = buckets_.find(bucket);
  if (b == buckets_.end()) return NotFound("no such bucket: " + bucket);
  auto o = b->second.objects.find(key);
  if (o == b->second.objects.end()) return NotFound("no such object: " + bucket + "/" + key);
  return o->second.data;
}

Result<std::string> MemoryObjectStore::GetRange(const std::string& bucket, const std::string& key,
                                                uint64_t offset, uint64_t length,
                                                const ReadOptions& options) {
  RETURN_IF_ERROR(Enter(Op::kGetRange, bucket, key, options.expected_bucket_owner));
  std::lock_guard lock(mu_);
  auto b = buckets_.find(bucket);
  if (b == buckets_.end()) return NotFound("no such bucket: " + bucket);
  auto o = b->second.objects.find(key);
  if (o == b->second.objects.end()) return NotFound("no such object: " + bucket + "/" + key);
  const std::string& d = o->second.data;
  if (offset >= d.size()) return std::string();
  return d.substr(static_cast<size_t>(offset), static_cast<size_t>(length));
}

Result<ObjectInfo> MemoryObjectStore::Head(const std::string& bucket, const std::string& key,
                                           const ReadOptions& options) {
  RETURN_IF_ERROR(Enter(Op::kHead, bucket, key, options.expected_bucket_owner));
  std::lock_guard lock(mu_);
  auto b = buckets_.find(bucket);
  if (b == buckets_.end()) return NotFound("no such bucket: " + bucket);
  auto o = b->second.objects.find(key);
  if (o == b->second.objects.end()) return NotFound("no such object: " + bucket + "/" + key);
  return ObjectInfo{key, o->second.data.size(), o->second.last_modified_ms, o->second.etag};
}

Result<std::vector<ObjectInfo>> MemoryObjectStore::List(const std::string& bucket,
                                                        const std::string& prefix,
                                                        const ReadOptions& options) {
  RETURN_IF_ERROR(Enter(Op::kList, bucket, "", options.expected_bucket_owner));
  std::lock_guard lock(mu_);
  auto b = buckets_.find(bucket);
  if (b == buckets_.end()) return NotFound("no such bucket: " + bucket);
  std::vector<ObjectInfo> out;
  for (auto it = b->second.objects.lower_bound(prefix);
       it != b->second.objects.end() && it->first.starts_with(prefix); ++it) {
    out.push_back(
        {it->first, it->second.data.size(), it->second.last_modified_ms, it->second.etag});
  }
  return out;
}

Status MemoryObjectStore::Delete(const std::string& bucket, const std::string& key,
                                 const ReadOptions& options) {
  RETURN_IF_ERROR(Enter(Op::kDelete, bucket, key, options.expected_bucket_owner));
  std::lock_guard lock(mu_);
  auto b = buckets_.find(bucket);
  if (b != buckets_.end()) b->second.objects.erase(key);
  return Status::OK();
}

Status MemoryObjectStore::CheckBucket(const std::string& bucket, const ReadOptions& options) {
  RETURN_IF_ERROR(Enter(Op::kCheckBucket, bucket, "", options.expected_bucket_owner));
  std::lock_guard lock(mu_);
  buckets_[bucket];  // created on first use, as local folders are
  return Status::OK();
}

std::string MemoryObjectStore::Uri(const std::string& bucket, const std::string& key) const {
  return "mem://" + bucket + "/" + key;
}

void MemoryObjectStore::SetFault(Fault fault) {
  std::lock_guard lock(mu_);
  fault_ = std::move(fault);
}

void MemoryObjectStore::SetBucketOwner(const std::string& bucket, const std::string& account) {
  std::lock_guard lock(mu_);
  buckets_[bucket].owner = account;
}

std::optional<PutOptions> MemoryObjectStore::OptionsOf(const std::string& bucket,
                                                       const std::string& key) const {
  std::lock_guard lock(mu_);
  auto b = buckets_.find(bucket);
  if (b == buckets_.end()) return std::nullopt;
  auto o = b->second.objects.find(key);
  if (o == b->second.objects.end()) return std::nullopt;
  return o->second.options;
}

size_t MemoryObjectStore::Calls(Op op) const {
  std::lock_guard lock(mu_);
  auto it = calls_.find(op);
  return it == calls_.end() ? 0 : it->second;
}

std::map<std::string, std::string> MemoryObjectStore::Objects(const std::string& bucket) const {
  std::lock_guard lock(mu_);
  std::map<std::string, std::string> out;
  auto b = buckets_.find(bucket);
  if (b == buckets_.end()) return out;
  for (const auto& [k, o] : b->second.objects) out[k] = o.data;
  return out;
}

}  // namespace icestream::objectstore
