// Per-shard token buckets for --aws-strict.
#include "stream/shard_limiter.h"

#include <algorithm>

namespace icestream::stream {

void ShardLimiter::Bucket::Refill(int64_t now_ms) {
  if (now_ms > last_ms) {
    tokens = std::min(rate, tokens + static_cast<double>(now_ms - last_ms) * rate / 1000.0);
  }
  last_ms = std::max(last_ms, now_ms);
}

ShardLimiter::Shard& ShardLimiter::Get(uint64_t stream_uid, uint32_t shard, int64_t now_ms) {
  auto [it, inserted] = shards_.try_emplace({stream_uid, shard});
  Shard& s = it->second;
  if (inserted) {
    auto init = [now_ms](Bucket& b, double rate) { b = Bucket{rate, rate, now_ms}; };
    init(s.write_bytes, kWriteBytesPerSecond);
    init(s.write_records, kWriteRecordsPerSecond);
    init(s.read_calls, kReadCallsPerSecond);
    init(s.read_bytes, kReadBytesPerSecond);
    init(s.iterators, kIteratorCallsPerSecond);
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
  Shard& s = Get(stream_uid, shard, now);
  s.iterators.Refill(now);
  if (s.iterators.tokens < 1) return false;
  s.iterators.tokens -= 1;
  return true;
}

}  // namespace icestream::stream
