// Per-shard token buckets for --aws-strict.
#include "stream/shard_limiter.h"

namespace icestream::stream {

ShardLimiter::Shard& ShardLimiter::Get(uint64_t stream_uid, uint32_t shard, int64_t now_ms) {
  auto [it, inserted] = shards_.try_emplace({stream_uid, shard});
  Shard& s = it->second;
  if (inserted) {
    s.write_bytes = TokenBucket::Full(kWriteBytesPerSecond, now_ms);
    s.write_records = TokenBucket::Full(kWriteRecordsPerSecond, now_ms);
    s.read_calls = TokenBucket::Full(kReadCallsPerSecond, now_ms);
    s.read_bytes = TokenBucket::Full(kReadBytesPerSecond, now_ms);
    s.iterators = TokenBucket::Full(kIteratorCallsPerSecond, now_ms);
  }
  return s;
}

bool ShardLimiter::AdmitWrite(uint64_t stream_uid, uint32_t shard, size_t bytes) {
  int64_t now = clock_->NowMillis();
  std::lock_guard lock(mu_);
  Shard& s = Get(stream_uid, shard, now);
  s.write_bytes.Refill(now);
  s.write_records.Refill(now);
  if (s.write_bytes.tokens <= 0 || s.write_records.tokens < 1) return false;
  s.write_bytes.tokens -= static_cast<double>(bytes);
  s.write_records.tokens -= 1;
  return true;
}

bool ShardLimiter::AdmitRead(uint64_t stream_uid, uint32_t shard) {
  int64_t now = clock_->NowMillis();
  std::lock_guard lock(mu_);
  Shard& s = Get(stream_uid, shard, now);
  s.read_calls.Refill(now);
  s.read_bytes.Refill(now);
  if (s.read_calls.tokens < 1 || s.read_bytes.tokens <= 0) return false;
  s.read_calls.tokens -= 1;
  return true;
}

void ShardLimiter::ChargeRead(uint64_t stream_uid, uint32_t shard, size_t bytes) {
  int64_t now = clock_->NowMillis();
  std::lock_guard lock(mu_);
  Shard& s = Get(stream_uid, shard, now);
  s.read_bytes.Refill(now);
  s.read_bytes.tokens -= static_cast<double>(bytes);
}

bool ShardLimiter::AdmitIterator(uint64_t stream_uid, uint32_t shard) {
  int64_t now = clock_->NowMillis();
  std::lock_guard lock(mu_);
  return Get(stream_uid, shard, now).iterators.TakeOne(now);
}

void ShardLimiter::Forget(uint64_t stream_uid) {
  std::lock_guard lock(mu_);
  shards_.erase(shards_.lower_bound({stream_uid, 0}), shards_.upper_bound({stream_uid, UINT32_MAX}));
}

}  // namespace icestream::stream
