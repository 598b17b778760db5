// StreamMetrics: AWS's Kinesis stream metrics (CloudWatch namespace AWS/Kinesis) counted
// by the Kinesis handlers, their Prometheus twins, and a per-shard ring of incoming
// bytes and records per minute over the last hour (the console's rate charts).
//
//   stream level (label stream_name; AWS's basic metrics, always on):
//     IncomingBytes, IncomingRecords, PutRecord.*, PutRecords.*, GetRecords.*,
//     Write/ReadProvisionedThroughputExceeded; SubscribeToShard.* and
//     SubscribeToShardEvent.* also carry consumer_name (AWS's ConsumerName dimension)
//   shard level (labels stream_name, shard_id; AWS's enhanced metrics): only those the
//     stream's EnableEnhancedMonitoring flags name, as families prefixed "Shard_"
//
// Names are the CloudWatch names with '.' written as '_' (as the channel metrics);
// latencies are histograms in seconds with the suffix _Latency_seconds (Prometheus'
// base unit). docs/operations.md, "Metrics", lists every family.
//
// Counters live in memory from the server's start (a restart resets them, which
// Prometheus' rate() handles). Entries are keyed by the stream's uid, so a re-created
// stream of the same name starts from zero; entries of streams that no longer exist
// are dropped at the next exposition.
//
// Thread-safe: the On* hooks run on I/O and subscription threads; a hook costs a
// shared lock and a few relaxed atomic adds.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"

namespace icestream::metrics {

enum class PutOutcome { kOk, kThrottled, kFailed };

// One PutRecords call's outcomes, summed by shard in the call's completion, so that
// the shared counters take a few atomic adds per call instead of several per record.
class PutTally {
 public:
  void Add(uint32_t shard, uint64_t bytes, PutOutcome outcome);

  struct PerShard {
    uint32_t shard = 0;
    uint64_t ok_records = 0;
    uint64_t ok_bytes = 0;
    uint64_t throttled = 0;
  };
  const std::vector<PerShard>& shards() const { return shards_; }
  uint64_t ok() const { return ok_; }
  uint64_t ok_bytes() const { return ok_bytes_; }
  uint64_t throttled() const { return throttled_; }
  uint64_t failed() const { return failed_; }

 private:
  std::vector<PerShard> shards_;
  // Shard -> position in shards_, once a call touches more shards than a linear search
  // should walk (a 500-record call over a stream of thousands of shards).
  std::unordered_map<uint32_t, size_t> index_;
  size_t last_ = 0;  // consecutive records often go to the same shard
  uint64_t ok_ = 0, ok_bytes_ = 0, throttled_ = 0, failed_ = 0;
};

// What the exposition needs to know of a stream that exists now.
struct StreamView {
  uint64_t uid = 0;
  std::string name;
  struct Shard {
    uint32_t index = 0;
    std::string id;  // "shardId-000000000003"
  };
  std::vector<Shard> shards;                     // unexpired shards
  std::vector<std::string> shard_level_metrics;  // the enhanced-monitoring flags
};

// Incoming traffic of one shard per minute, oldest first; the last entry is the
// current (partial) minute.
struct ShardRate {
  uint32_t shard = 0;
  std::vector<uint64_t> bytes;
  std::vector<uint64_t> records;
};
struct StreamRates {
  int64_t first_minute_ms = 0;  // start of the oldest minute (epoch ms)
  int minutes = 0;
  std::vector<ShardRate> shards;  // shards that received something in the window
};

class StreamMetrics {
 public:
  static constexpr int kRingMinutes = 60;

  // `clock` (wall time, for the per-minute ring and gauge freshness) must outlive this.
  explicit StreamMetrics(const Clock* clock);
  ~StreamMetrics();
  StreamMetrics(const StreamMetrics&) = delete;
  StreamMetrics& operator=(const StreamMetrics&) = delete;

  // A PutRecord call that reached the stream: `bytes` is the data blob's size.
  void OnPutRecord(uint64_t uid, std::string_view stream, uint32_t shard, uint64_t bytes,
                   PutOutcome outcome, int64_t latency_ns);
  // A PutRecords call that reached the stream.
  void OnPutRecords(uint64_t uid, std::string_view stream, const PutTally& tally,
                    int64_t latency_ns);
  // A successful GetRecords call: records and data bytes returned, MillisBehindLatest.
  void OnGetRecords(uint64_t uid, std::string_view stream, uint32_t shard, uint64_t records,
                    uint64_t bytes, int64_t millis_behind, int64_t latency_ns);
  // A GetRecords call refused with ProvisionedThroughputExceededException.
  void OnReadThrottled(uint64_t uid, std::string_view stream, uint32_t shard);
  // A SubscribeToShard call: started (`ok`), or refused because the consumer's
  // subscription to that shard is younger than 5 s (RateExceeded).
  void OnSubscribe(uint64_t uid, std::string_view stream, std::string_view consumer, bool ok);
  // One SubscribeToShardEvent pushed to a consumer.
  void OnSubscribeEvent(uint64_t uid, std::string_view stream, std::string_view consumer,
                        uint32_t shard, uint64_t records, uint64_t bytes, int64_t millis_behind);

  // Every family (HELP and TYPE even without streams), for the streams in `live`;
  // entries of other streams are forgotten.
  std::string PrometheusText(const std::vector<StreamView>& live);
  // The incoming ring of a stream (empty shards list when nothing arrived).
  StreamRates IncomingRates(uint64_t uid) const;

  struct Entry;

 private:
  std::shared_ptr<Entry> Find(uint64_t uid) const;
  std::shared_ptr<Entry> Get(uint64_t uid, std::string_view stream);

  const Clock* clock_;
  mutable std::shared_mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Entry>> entries_;
};

}  // namespace icestream::metrics
