// StreamManager: the streams of one server — their metadata (persisted in meta.db), their
// shards' logs, partition-key routing, resharding, retention.
//
// Error statuses carry AWS's message texts; the Kinesis front end maps their codes to
// AWS error types (kNotFound → ResourceNotFoundException, kFailedPrecondition and
// kAlreadyExists → ResourceInUseException, kInvalidArgument → InvalidArgumentException,
// kResourceExhausted → LimitExceededException, kThrottled →
// ProvisionedThroughputExceededException).
//
// Thread-safety: every method may be called from any thread. Lifetime: Stop() (or the
// destructor) closes the logs after all queued appends are durable.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/sqlite.h"
#include "common/status.h"
#include "log/committer.h"
#include "log/shard_log.h"
#include "stream/model.h"
#include "stream/shard_limiter.h"

namespace icestream::stream {

struct StreamManagerOptions {
  std::string data_dir;
  std::string region = "us-east-1";
  std::string account = "000000000000";
  log::LogOptions log;
  size_t commit_threads = 4;
  int64_t retention_check_interval_ms = 60 * 1000;
  uint32_t shard_limit = 20000;          // open shards per account (DescribeLimits)
  uint32_t on_demand_stream_limit = 50;  // ON_DEMAND streams per account
  uint32_t on_demand_shard_count = 4;    // initial shards of an ON_DEMAND stream
  uint32_t max_shards_per_stream = 10000;
  // --aws-strict: AWS's per-shard write and read rates (see ShardLimiter).
  bool enforce_shard_limits = false;
  // Descriptors of sealed segments kept open at most, all shards together (readers
  // borrow them; see log/segment_files.h).
  size_t max_open_segment_files = 512;
};

// A shard that is not serving normally, for /health.
struct ShardProblem {
  std::string stream;
  std::string shard;   // shardId-...
  std::string reason;  // without file paths
};

struct CreateStreamRequest {
  std::string name;
  StreamMode mode = StreamMode::kProvisioned;
  uint32_t shard_count = 0;  // PROVISIONED only
  std::map<std::string, std::string> tags;
  int max_record_kib = 1024;
  std::optional<int> warm_throughput_mibps;
};

struct PutItem {
  std::string_view partition_key;
  std::string_view data;
  uint128 hash = 0;  // explicit hash key, or MD5 of the partition key
};

struct PutOutcome {
  uint32_t shard_index = 0;
  uint64_t offset = 0;
  Status error;  // per-record failure (kThrottled, kIOError, ...)
};

struct PutResult {
  uint64_t stream_uid = 0;
  int64_t arrival_ms = 0;
  std::vector<PutOutcome> items;  // one per input, same order
};
using PutDone = std::function<void(PutResult)>;

struct ShardReadResult {
  // Views into `buffers` (the log's read buffers, or its mapped cache pages), which the
  // result owns: an answer of 10,000 records copies each once, into the answer itself.
  std::vector<log::RecordView> records;
  std::vector<std::shared_ptr<char[]>> buffers;
  uint64_t next_offset = 0;
  bool shard_end = false;           // closed shard read to its end
  std::vector<ShardInfo> children;  // set with shard_end
  int64_t millis_behind_latest = 0;
};

// Where a shard's readable records start and end right now.
struct ShardBounds {
  uint64_t trim_horizon = 0;  // first stored offset
  uint64_t end = 0;           // committed end (or end_offset of a closed shard)
};

struct AccountTotals {
  uint32_t open_shards = 0;
  uint32_t on_demand_streams = 0;
};

class StreamManager {
 public:
  static Result<std::unique_ptr<StreamManager>> Open(StreamManagerOptions options,
                                                     const Clock* clock, Database* db);
  ~StreamManager();
  // Stops retention, refuses new appends, waits until queued appends are durable.
  void Stop();

  const StreamManagerOptions& options() const { return options_; }
  std::string ArnFor(std::string_view name) const;

  // Registers the stream CREATING and makes its shard logs on the creator thread, outside
  // the manager's lock; returns once it is ACTIVE or after a short wait (then CREATING:
  // Describe shows when it is ACTIVE). kResourceExhausted when the account's shard limit
  // or the process's descriptors would not suffice.
  Result<StreamInfo> CreateStream(const CreateStreamRequest& req);
  Status DeleteStream(const std::string& name);
  Result<StreamInfo> Describe(const std::string& name) const;
  // The stream's MaxRecordSizeInKiB, without copying its metadata (hot path).
  Result<int> MaxRecordKib(const std::string& name) const;
  std::vector<StreamInfo> ListStreams() const;  // by name
  AccountTotals Totals() const;

  // Applies `fn` to a copy of the stream's metadata and persists the result; fn's error
  // leaves everything unchanged. For tags, retention, encryption, metrics, policies.
  Status Mutate(const std::string& name, const std::function<Status(StreamInfo&)>& fn);

  Status SplitShard(const std::string& name, uint32_t shard, uint128 new_starting_hash_key);
  Status MergeShards(const std::string& name, uint32_t shard, uint32_t adjacent_shard);
  // Returns the open-shard count before the change.
  Result<uint32_t> UpdateShardCount(const std::string& name, uint32_t target);
  Status UpdateStreamMode(const std::string& name, StreamMode mode);

  // Routes records to open shards by hash and appends them. Stream-level failures come
  // back at once; otherwise `done` runs (on a log thread) once every record is durable
  // or failed.
  // With enforce_shard_limits, records over their shard's write rate fail with kThrottled
  // (one by one; the others are appended).
  Status Put(const std::string& name, const std::vector<PutItem>& items, PutDone done);
  // The per-shard rate limiter when enforce_shard_limits is set, else null.
  ShardLimiter* limiter() { return limiter_.get(); }

  Result<ShardBounds> Bounds(const std::string& name, uint64_t uid, uint32_t shard) const;
  Result<uint64_t> OffsetAtTime(const std::string& name, uint64_t uid, uint32_t shard,
                                int64_t t_ms) const;
  Result<ShardReadResult> Read(const std::string& name, uint64_t uid, uint32_t shard, uint64_t from,
                               size_t max_records, size_t max_bytes) const;

  // Calls `fn` once, when records past `known_end` are readable in the shard `log` of
  // stream `uid` (at once when they already are), or when the stream is deleted. From a
  // log thread or this one; `fn` must not block. Readers that follow a shard's tip
  // (SubscribeToShard) wait this way: a Put wakes only the readers of its own shards.
  void WhenAppended(uint64_t uid, uint32_t shard, const log::ShardLog& log, uint64_t known_end,
                    std::function<void()> fn);

  // Delivery reads shard logs directly (no GetRecords quota).
  Result<std::shared_ptr<log::ShardLog>> ShardLogFor(uint64_t uid, uint32_t shard) const;

  // Offsets below the returned one may be deleted by retention; the delivery engine
  // installs this so undelivered records are kept. Default: no floor.
  using RetentionFloor = std::function<uint64_t(uint64_t uid, uint32_t shard)>;
  void SetRetentionFloor(RetentionFloor floor);
  // Runs one retention pass now (also runs periodically).
  void RunRetention();

  // Shards that did not open (damage found at start-up) or whose last write failed.
  std::vector<ShardProblem> Problems() const;

 private:
  struct Stream {
    mutable std::shared_mutex mu;
    StreamInfo info;
    std::map<uint32_t, std::shared_ptr<log::ShardLog>> logs;
    // Shards whose log did not open (damage): listed, never served, never resharded.
    std::map<uint32_t, Status> broken;
    std::vector<std::pair<HashRange, uint32_t>> routes;  // open shards, by start
    void RebuildRoutes();
  };

  StreamManager(StreamManagerOptions options, const Clock* clock, Database* db);
  Status Load();
  Status Persist(const StreamInfo& info);
  std::string StreamDir(uint64_t uid) const;
  std::string ShardDir(uint64_t uid, uint32_t shard) const;
  Result<std::shared_ptr<Stream>> Find(const std::string& name) const;
  Result<std::shared_ptr<Stream>> FindUid(const std::string& name, uint64_t uid) const;
  Status NotFoundError(const std::string& name) const;
  Status NotActiveError(const StreamInfo& info) const;
  Status ShardNotFound(const std::string& name, uint32_t shard) const;
  Status BrokenShardError(const Stream& s, uint32_t shard) const;
  Status CheckShardQuota(uint32_t additional) const;  // takes mu_
  Status ShardQuotaError(uint32_t open_shards, uint32_t additional) const;
  // kResourceExhausted when `additional` more open shards would leave the process short
  // of descriptors (ulimit -n): each open shard holds its active segment open.
  Status DescriptorHeadroom(uint32_t additional) const;
  // Opens the shard logs of a CREATING stream and makes it ACTIVE (creator thread); on
  // failure the stream is removed.
  Status FinishCreate(const std::shared_ptr<Stream>& s);
  void CreatorLoop();
  // Persists `next` and swaps it in, opening logs for new shards and closing logs of
  // shards that closed. Caller holds the stream's lock exclusively.
  Status CommitTopology(Stream& s, StreamInfo next, const std::vector<uint32_t>& created);
  void RetentionLoop();

  const StreamManagerOptions options_;
  const Clock* clock_;
  Database* db_;
  log::Committer committer_;
  std::unique_ptr<ShardLimiter> limiter_;

  mutable std::mutex mu_;  // guards streams_ and topology-changing creates/deletes
  std::map<std::string, std::shared_ptr<Stream>> streams_;

  std::mutex floor_mu_;
  RetentionFloor floor_;

  // Tip readers waiting per shard (WhenAppended). The Put path takes no lock unless
  // someone waits (watcher_count_).
  void NotifyShard(uint64_t uid, uint32_t shard);
  void NotifyStream(uint64_t uid);
  std::mutex watch_mu_;
  std::map<std::pair<uint64_t, uint32_t>, std::vector<std::pair<uint64_t, std::function<void()>>>>
      watchers_;
  uint64_t next_watch_id_ = 1;
  std::atomic<size_t> watcher_count_{0};

  // CreateStream's shard logs are made by one creator thread, outside mu_.
  std::mutex create_mu_;
  std::condition_variable create_cv_;
  std::deque<std::function<void()>> create_queue_;
  bool create_stopping_ = false;
  std::thread create_thread_;

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread retention_thread_;
};

}  // namespace icestream::stream
