// ShardLimiter: AWS's per-shard throughput limits (aws-api.md §C.4, §B.4, §B.5), enforced
// only when the server runs with --aws-strict. Without it icestream takes whatever the
// machine can absorb.
//
//   writes           1 MiB/s (data + partition key) and 1,000 records/s per shard
//   GetRecords       5 calls/s and 2 MiB/s per shard
//   GetShardIterator 5 calls/s per shard
//
// Each limit is a token bucket holding one second's worth. A record or read larger than
// what is left is admitted while the bucket is not empty and leaves it in debt, so large
// records can burst above the rate while the average holds (as AWS allows).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "common/clock.h"
#include "common/token_bucket.h"

namespace icestream::stream {

class ShardLimiter {
 public:
  static constexpr double kWriteBytesPerSecond = 1024.0 * 1024.0;
  static constexpr double kWriteRecordsPerSecond = 1000.0;
  static constexpr double kReadCallsPerSecond = 5.0;
  static constexpr double kReadBytesPerSecond = 2.0 * 1024.0 * 1024.0;
  static constexpr double kIteratorCallsPerSecond = 5.0;

  explicit ShardLimiter(const Clock* clock) : clock_(clock) {}

  // One record of `bytes` (data plus partition key) into the shard: true when admitted
  // (and counted), false when the shard is over its write rate.
  bool AdmitWrite(uint64_t stream_uid, uint32_t shard, size_t bytes);
  // A GetRecords call: true when admitted; the bytes it returns are charged afterwards.
  bool AdmitRead(uint64_t stream_uid, uint32_t shard);
  void ChargeRead(uint64_t stream_uid, uint32_t shard, size_t bytes);
  bool AdmitIterator(uint64_t stream_uid, uint32_t shard);
  // Drops the buckets of a deleted stream.
  void Forget(uint64_t stream_uid);
  size_t tracked_shards() {
    std::lock_guard lock(mu_);
    return shards_.size();
  }

 private:
  struct Shard {
    TokenBucket write_bytes, write_records, read_calls, read_bytes, iterators;
  };
  Shard& Get(uint64_t stream_uid, uint32_t shard, int64_t now_ms);

  const Clock* clock_;
  std::mutex mu_;
  std::map<std::pair<uint64_t, uint32_t>, Shard> shards_;
};

}  // namespace icestream::stream
