// The delivery engine: channel lifecycle, scheduling of per-shard batches, the batch
// pipeline (read → build → plan → upload → checkpoint), metrics.
#include "delivery/channel_manager.h"

#include <algorithm>
#include <chrono>
#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/crypto.h"
#include "common/fs.h"
#include "delivery/batch_builder.h"
#include "delivery/delivery_log.h"
#include "stream/sequence_number.h"

namespace icestream::delivery {

struct ChannelManager::ShardState {
  uint64_t checkpoint = 0;       // next offset to deliver
  bool known = false;            // a checkpoint row exists
  bool in_flight = false;
  int64_t first_pending_ms = -1;  // arrival of the record at `checkpoint` (cache)
  int64_t retry_after_ms = 0;
  int failures = 0;
};

struct ChannelManager::Channel {
  mutable std::mutex mu;
  ChannelConfig config;
  std::shared_ptr<const KeyTemplate> key_template;
  std::map<uint32_t, ShardState> shards;
  std::map<uint32_t, bool> done;  // closed shards delivered to their end
  int in_flight = 0;
  int64_t updating_until_ms = 0;
  bool activating = false;            // an activation job is queued or running
  std::atomic<bool> stopping{false};  // deleting or failed: stop retrying
  ChannelMetrics metrics;
  // Replaced by UpdateChannel; users take a copy of the pointer under `mu`.
  std::shared_ptr<DeliveryLog> log;
};

namespace {

constexpr int64_t kMaxRetryDelayMs = 30000;

// Errors after which retrying cannot help: the bucket is gone (NoSuchBucket) or the
// request itself is refused (bad KMS key, invalid argument). Access denied (403) and
// conflicts (409) are retried, as AWS does: permissions and owners can be fixed.
bool Permanent(const Status& st) {
  return st.code() == StatusCode::kNotFound || st.code() == StatusCode::kInvalidArgument;
}

std::shared_ptr<DeliveryLog> MakeLog(const std::string& data_dir, const ChannelConfig& c) {
  if (!c.logging.enabled) return nullptr;
  std::string stream = c.logging.log_stream_name.empty() ? std::string(kDefaultLogStreamName)
                                                         : c.logging.log_stream_name;
  for (auto& ch : stream) {
    if (ch == '/') ch = '_';
  }
  std::string path =
      fs::Join(fs::Join(fs::Join(data_dir, "delivery-logs"), c.id), stream + ".jsonl");
  return std::make_shared<DeliveryLog>(path, c.logging.log_group_name);
}

}  // namespace

ChannelManager::ChannelManager(ChannelManagerOptions options, stream::StreamManager* streams,
                               std::unique_ptr<ChannelStore> store,
                               std::shared_ptr<objectstore::ObjectStore> objects,
                               const Clock* clock)
    : options_(std::move(options)),
      streams_(streams),
      store_(std::move(store)),
      objects_(std::move(objects)),
      clock_(clock) {}

Result<std::unique_ptr<ChannelManager>> ChannelManager::Open(
    ChannelManagerOptions options, stream::StreamManager* streams, Database* db,
    std::shared_ptr<objectstore::ObjectStore> store, const Clock* clock) {
  ASSIGN_OR_RETURN(auto cs, ChannelStore::Open(db));
  std::unique_ptr<ChannelManager> m(
      new ChannelManager(std::move(options), streams, std::move(cs), std::move(store), clock));
  RETURN_IF_ERROR(m->Load());
  ChannelManager* raw = m.get();
  streams->SetRetentionFloor(
      [raw](uint64_t uid, uint32_t shard) { return raw->RetentionFloor(uid, shard); });
  for (size_t i = 0; i < std::max<size_t>(1, m->options_.worker_threads); ++i) {
    m->workers_.emplace_back([raw] { raw->WorkerLoop(); });
  }
  m->scheduler_ = std::thread([raw] { raw->SchedulerLoop(); });
  return m;
}

ChannelManager::~ChannelManager() { Stop(); }

void ChannelManager::Stop() {
  if (stopping_.exchange(true)) return;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, ch] : channels_) ch->stopping = true;
  }
  tick_cv_.notify_all();
  queue_cv_.notify_all();
  if (scheduler_.joinable()) scheduler_.join();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
  // Until the stream manager stops, retention must not delete what channels still need:
  // with the channels gone, nothing is known to be delivered, so nothing is released.
  streams_->SetRetentionFloor([](uint64_t, uint32_t) { return uint64_t{0}; });
}

std::string ChannelManager::ArnFor(const std::string& id) const {
  return fmt::format("arn:aws:kinesis:{}:{}:channel/{}", options_.region, options_.account, id);
}

Status ChannelManager::Load() {
  ASSIGN_OR_RETURN(auto all, store_->LoadAll());
  for (auto& c : all) {
    auto ch = std::make_shared<Channel>();
    ASSIGN_OR_RETURN(auto cps, store_->Checkpoints(c.id));
    for (const auto& [k, off] : cps) {
      if (k.stream_uid != c.stream_uid) continue;
      ch->shards[k.shard].checkpoint = off;
      ch->shards[k.shard].known = true;
    }
    auto t = KeyTemplate::Parse(c.s3.output_key_template, c.s3.compression);
    if (!t.ok()) {
      c.status = ChannelStatus::kFailed;
      c.status_reason = t.status().message();
      t = KeyTemplate::Parse(kDefaultKeyTemplate, Compression::kGzip);
    }
    ch->key_template = std::make_shared<const KeyTemplate>(std::move(*t));
    ch->log = MakeLog(options_.data_dir, c);
    if (c.status == ChannelStatus::kUpdating) c.status = ChannelStatus::kActive;
    ch->config = std::move(c);
    channels_[ch->config.id] = std::move(ch);
  }
  return Status::OK();
}

Result<std::shared_ptr<ChannelManager::Channel>> ChannelManager::Find(const std::string& arn) const {
  std::string prefix = ArnFor("");
  std::lock_guard lock(mu_);
  if (arn.rfind(prefix, 0) == 0) {
    auto it = channels_.find(arn.substr(prefix.size()));
    if (it != channels_.end()) return it->second;
  }
  return NotFound(fmt::format("Channel {} under account {} not found.", arn, options_.account));
}

bool ChannelManager::Owns(std::string_view arn) const {
  return arn.rfind(ArnFor(""), 0) == 0;
}

Result<ChannelConfig> ChannelManager::Create(ChannelConfig c) {
  ASSIGN_OR_RETURN(auto info, streams_->Describe(c.stream_name));
  if (info.mode != stream::StreamMode::kOnDemand) {
    return FailedPrecondition(fmt::format(
        "Stream {} under account {} is PROVISIONED; channels can only be created on ON_DEMAND "
        "streams.",
        c.stream_name, options_.account));
  }
  if (info.encryption_type == "KMS" &&
      (info.key_id == "alias/aws/kinesis" || info.key_id.ends_with(":alias/aws/kinesis"))) {
    return InvalidArgument(fmt::format(
        "Stream {} is encrypted with the AWS managed key aws/kinesis; channels need a customer "
        "managed key (StartStreamEncryption).",
        c.stream_name));
  }
  c.id = crypto::RandomUuid();
  c.arn = ArnFor(c.id);
  c.stream_uid = info.uid;
  c.stream_arn = info.arn;
  c.stream_created_ms = info.created_ms;
  c.created_ms = clock_->NowMillis();
  c.status = ChannelStatus::kCreating;
  if (c.s3.output_key_template.empty()) c.s3.output_key_template = std::string(kDefaultKeyTemplate);
  if (c.s3.dlq.bucket_arn.empty()) {
    c.s3.dlq.bucket_arn = c.s3.bucket_arn;
    c.s3.dlq.expected_bucket_owner = c.s3.expected_bucket_owner;
  }
  if (c.s3.dlq.error_output_prefix.empty()) {
    c.s3.dlq.error_output_prefix = DefaultErrorOutputPrefix(c.name, c.id);
  }
  if (c.logging.log_group_name.empty()) c.logging.log_group_name = DefaultLogGroupName(c.name, c.id);
  if (c.logging.log_stream_name.empty()) c.logging.log_stream_name = std::string(kDefaultLogStreamName);
  ASSIGN_OR_RETURN(auto tmpl, KeyTemplate::Parse(c.s3.output_key_template, c.s3.compression));
  RETURN_IF_ERROR(tmpl.CheckExpandedLength({c.name, c.id, c.stream_name}));

  auto ch = std::make_shared<Channel>();
  {
    std::lock_guard lock(mu_);
    size_t on_stream = 0, same_kind = 0;
    for (const auto& [id, other] : channels_) {
      std::lock_guard olock(other->mu);
      if (other->config.name == c.name) {
        return AlreadyExists(fmt::format("Channel {} under account {} already exists.", c.name,
                                         options_.account));
      }
      if (other->config.stream_uid == c.stream_uid) {
        ++on_stream;
        same_kind += other->config.destination == c.destination ? 1 : 0;
      }
    }
    if (same_kind > 0) {
      return ResourceExhausted(fmt::format(
          "Stream {} already has a channel delivering to {}; a stream can have one channel per "
          "destination type.",
          c.stream_name, c.destination == DestinationType::kS3 ? "S3" : "S3 Tables"));
    }
    if (on_stream >= options_.max_channels_per_stream) {
      return ResourceExhausted(fmt::format("Stream {} already has {} channels; the limit is {}.",
                                           c.stream_name, on_stream,
                                           options_.max_channels_per_stream));
    }
    if (channels_.size() >= options_.max_channels_per_account) {
      return ResourceExhausted(fmt::format(
          "This request would exceed the channel limit of {} for account {} in {}.",
          options_.max_channels_per_account, options_.account, options_.region));
    }
    RETURN_IF_ERROR(store_->Save(c));
    ch->config = c;
    ch->key_template = std::make_shared<const KeyTemplate>(std::move(tmpl));
    ch->log = MakeLog(options_.data_dir, c);
    channels_[c.id] = ch;
  }
  tick_cv_.notify_all();
  return c;
}

Result<ChannelConfig> ChannelManager::Describe(const std::string& arn) const {
  ASSIGN_OR_RETURN(auto ch, Find(arn));
  std::lock_guard lock(ch->mu);
  return ch->config;
}

std::vector<ChannelConfig> ChannelManager::List() const {
  std::vector<ChannelConfig> out;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, ch] : channels_) {
      std::lock_guard clock(ch->mu);
      out.push_back(ch->config);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ChannelConfig& a, const ChannelConfig& b) { return a.name < b.name; });
  return out;
}

Result<ChannelConfig> ChannelManager::Update(const std::string& arn,
                                             std::optional<int> freshness_seconds,
                                             std::optional<LoggingConfig> logging) {
  ASSIGN_OR_RETURN(auto ch, Find(arn));
  std::lock_guard lock(ch->mu);
  if (ch->config.status != ChannelStatus::kActive) {
    return FailedPrecondition(fmt::format("Channel {} is not ACTIVE, instead in state {}.", arn,
                                          ChannelStatusName(ch->config.status)));
  }
  ChannelConfig next = ch->config;
  if (freshness_seconds) next.s3.data_freshness_seconds = *freshness_seconds;
  if (logging) {
    next.logging.enabled = logging->enabled;
    if (!logging->log_group_name.empty()) next.logging.log_group_name = logging->log_group_name;
    if (!logging->log_stream_name.empty()) next.logging.log_stream_name = logging->log_stream_name;
  }
  next.status = ChannelStatus::kUpdating;
  RETURN_IF_ERROR(store_->Save(next));
  ch->config = next;
  ch->log = MakeLog(options_.data_dir, next);
  // Delivery goes on while UPDATING; the scheduler makes it ACTIVE again shortly.
  ch->updating_until_ms = clock_->NowMillis() + 200;
  return next;
}

Status ChannelManager::Delete(const std::string& arn) {
  ASSIGN_OR_RETURN(auto ch, Find(arn));
  std::lock_guard lock(ch->mu);
  if (ch->config.status != ChannelStatus::kDeleting) {
    ch->config.status = ChannelStatus::kDeleting;
    ch->stopping = true;
    RETURN_IF_ERROR(store_->Save(ch->config));
  }
  tick_cv_.notify_all();
  return Status::OK();
}

size_t ChannelManager::CountForStream(const std::string& stream_name) const {
  size_t n = 0;
  std::lock_guard lock(mu_);
  for (const auto& [id, ch] : channels_) {
    std::lock_guard clock(ch->mu);
    n += ch->config.stream_name == stream_name ? 1 : 0;
  }
  return n;
}

size_t ChannelManager::Count() const {
  std::lock_guard lock(mu_);
  return channels_.size();
}

Status ChannelManager::Tag(const std::string& arn, const std::map<std::string, std::string>& tags) {
  ASSIGN_OR_RETURN(auto ch, Find(arn));
  std::lock_guard lock(ch->mu);
  ChannelConfig next = ch->config;
  for (const auto& [k, v] : tags) next.tags[k] = v;
  if (next.tags.size() > 50) {
    return InvalidArgument(fmt::format(
        "Failed to add tags to channel {}: a resource can have at most 50 tags.", arn));
  }
  RETURN_IF_ERROR(store_->Save(next));
  ch->config = std::move(next);
  return Status::OK();
}

Status ChannelManager::Untag(const std::string& arn, const std::vector<std::string>& keys) {
  ASSIGN_OR_RETURN(auto ch, Find(arn));
  std::lock_guard lock(ch->mu);
  ChannelConfig next = ch->config;
  for (const auto& k : keys) next.tags.erase(k);
  RETURN_IF_ERROR(store_->Save(next));
  ch->config = std::move(next);
  return Status::OK();
}

Result<std::map<std::string, std::string>> ChannelManager::Tags(const std::string& arn) const {
  ASSIGN_OR_RETURN(auto ch, Find(arn));
  std::lock_guard lock(ch->mu);
  return ch->config.tags;
}

uint64_t ChannelManager::RetentionFloor(uint64_t stream_uid, uint32_t shard) const {
  uint64_t floor = UINT64_MAX;
  std::lock_guard lock(mu_);
  for (const auto& [id, ch] : channels_) {
    std::lock_guard clock(ch->mu);
    if (ch->config.stream_uid != stream_uid) continue;
    // A failed or deleted channel delivers nothing more and holds nothing back.
    if (ch->config.status == ChannelStatus::kFailed || ch->config.status == ChannelStatus::kDeleting) {
      continue;
    }
    auto it = ch->shards.find(shard);
    // A shard the channel has not reached yet is needed from its beginning.
    uint64_t need = it == ch->shards.end() ? 0 : it->second.checkpoint;
    if (ch->done.count(shard)) continue;
    floor = std::min(floor, need);
  }
  return floor;
}

std::string ChannelManager::PrometheusText() const {
  struct Def {
    const char* name;
    const char* type;
    const char* help;
    std::function<double(const ChannelMetrics&)> get;
  };
  static const std::vector<Def> kDefs = {
      {"DataFreshness", "gauge", "Age in seconds of the oldest record not yet delivered.",
       [](const ChannelMetrics& m) { return m.data_freshness_ms.load() / 1000.0; }},
      {"BytesIn", "counter", "Bytes read from the stream into the channel.",
       [](const ChannelMetrics& m) { return double(m.bytes_in.load()); }},
      {"BytesProcessed", "counter", "Bytes of valid records framed for delivery.",
       [](const ChannelMetrics& m) { return double(m.bytes_processed.load()); }},
      {"BytesOut", "counter", "Bytes written to the destination (after compression).",
       [](const ChannelMetrics& m) { return double(m.bytes_out.load()); }},
      {"RecordCount", "counter", "Records read from the stream.",
       [](const ChannelMetrics& m) { return double(m.record_count.load()); }},
      {"SuccessfulRecordCount", "counter", "Records delivered to the destination.",
       [](const ChannelMetrics& m) { return double(m.successful_record_count.load()); }},
      {"FailedRecordCount", "counter", "Records that failed validation (sent to the DLQ).",
       [](const ChannelMetrics& m) { return double(m.failed_record_count.load()); }},
      {"DeliverySuccess", "counter", "Successful delivery operations (objects written).",
       [](const ChannelMetrics& m) { return double(m.delivery_success.load()); }},
      {"DLQDeliverySuccess", "counter", "Records written to the dead-letter queue.",
       [](const ChannelMetrics& m) { return double(m.dlq_delivery_success.load()); }},
  };
  std::vector<std::shared_ptr<Channel>> all;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, ch] : channels_) all.push_back(ch);
  }
  auto esc = [](const std::string& s) {
    std::string o;
    for (char c : s) {
      if (c == '\\' || c == '"') o.push_back('\\');
      if (c == '\n') {
        o += "\\n";
        continue;
      }
      o.push_back(c);
    }
    return o;
  };
  std::string out;
  for (const auto& d : kDefs) {
    std::string name = std::string("DeliveryToS3_") + d.name;
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, d.help, name, d.type);
    for (const auto& ch : all) {
      std::string cname, cid, sname;
      {
        std::lock_guard lock(ch->mu);
        if (ch->config.destination != DestinationType::kS3) continue;
        cname = ch->config.name;
        cid = ch->config.id;
        sname = ch->config.stream_name;
      }
      out += fmt::format("{}{{channel_name=\"{}\",channel_id=\"{}\",stream_name=\"{}\"}} {}\n", name,
                         esc(cname), esc(cid), esc(sname), d.get(ch->metrics));
    }
  }
  return out;
}

void ChannelManager::Submit(std::function<void()> job) {
  {
    std::lock_guard lock(queue_mu_);
    queue_.push_back(std::move(job));
  }
  queue_cv_.notify_one();
}

void ChannelManager::WorkerLoop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(queue_mu_);
      queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;  // unfinished batches replay after a restart
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

void ChannelManager::SchedulerLoop() {
  while (!stopping_) {
    Tick();
    std::unique_lock lock(tick_mu_);
    tick_cv_.wait_for(lock, std::chrono::milliseconds(options_.tick_ms));
  }
}

void ChannelManager::Tick() {
  std::vector<std::shared_ptr<Channel>> all;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, ch] : channels_) all.push_back(ch);
  }
  int64_t now = clock_->NowMillis();
  for (const auto& ch : all) {
    ChannelStatus status;
    {
      std::lock_guard lock(ch->mu);
      status = ch->config.status;
      if (status == ChannelStatus::kUpdating && now >= ch->updating_until_ms) {
        ch->config.status = ChannelStatus::kActive;
        (void)store_->Save(ch->config);
        status = ChannelStatus::kActive;
      }
    }
    switch (status) {
      case ChannelStatus::kCreating: {
        // Bucket checks may wait on S3: they run on a worker, not on the scheduler.
        std::lock_guard lock(ch->mu);
        if (ch->activating) break;
        ch->activating = true;
        Submit([this, ch] {
          Activate(ch);
          std::lock_guard l(ch->mu);
          ch->activating = false;
        });
        break;
      }
      case ChannelStatus::kActive:
      case ChannelStatus::kUpdating: ScheduleShards(ch, now); break;
      case ChannelStatus::kDeleting: {
        std::string id;
        {
          std::lock_guard lock(ch->mu);
          if (ch->in_flight > 0) break;
          id = ch->config.id;
        }
        Status st = store_->Remove(id);
        if (!st.ok()) {
          spdlog::warn("deleting channel {}: {}", id, st.ToString());
          break;
        }
        std::lock_guard lock(mu_);
        channels_.erase(id);
        break;
      }
      case ChannelStatus::kFailed: break;
    }
  }
}

void ChannelManager::Activate(const std::shared_ptr<Channel>& ch) {
  ChannelConfig c;
  {
    std::lock_guard lock(ch->mu);
    c = ch->config;
  }
  auto check = [&](const std::string& arn, const std::string& owner, const char* what) -> Status {
    ASSIGN_OR_RETURN(std::string bucket, objectstore::BucketFromArn(arn));
    objectstore::ReadOptions ro;
    if (!options_.local_buckets) ro.expected_bucket_owner = owner;
    Status st = objects_->CheckBucket(bucket, ro);
    if (!st.ok()) return st.WithContext(fmt::format("{} bucket {}", what, bucket));
    return Status::OK();
  };
  Status st = check(c.s3.bucket_arn, c.s3.expected_bucket_owner, "destination");
  if (st.ok() && c.s3.dlq.bucket_arn != c.s3.bucket_arn) {
    st = check(c.s3.dlq.bucket_arn, c.s3.dlq.expected_bucket_owner, "dead-letter queue");
  }
  if (!st.ok()) {
    if (st.code() == StatusCode::kUnavailable) return;  // try again next tick
    return Fail(ch, "The channel cannot write to its destination: " + st.message());
  }
  // Where delivery starts in each shard that exists now (shards created later start at
  // their beginning: everything in them arrived after activation).
  auto info = streams_->Describe(c.stream_name);
  if (!info.ok() || info->uid != c.stream_uid) return Fail(ch, "The source stream no longer exists.");
  std::map<ShardKey, uint64_t> cps;
  for (const auto& s : info->shards) {
    auto log = streams_->ShardLogFor(c.stream_uid, s.index);
    if (!log.ok()) continue;
    uint64_t end = s.end_offset ? std::min(*s.end_offset, (*log)->committed_end())
                                : (*log)->committed_end();
    uint64_t at = end;
    if (c.starting_position.type == "TRIM_HORIZON") {
      at = (*log)->start_offset();
    } else if (c.starting_position.type == "AT_TIMESTAMP") {
      auto o = (*log)->OffsetAtTime(c.starting_position.timestamp_ms);
      at = o.ok() ? std::min(*o, end) : end;
    }
    cps[{c.stream_uid, s.index}] = at;
  }
  std::lock_guard lock(ch->mu);
  if (ch->config.status != ChannelStatus::kCreating) return;  // deleted meanwhile
  ch->config.status = ChannelStatus::kActive;
  Status ps = store_->Activate(ch->config, cps);
  if (!ps.ok()) {
    ch->config.status = ChannelStatus::kCreating;
    spdlog::warn("activating channel {}: {}", c.id, ps.ToString());
    return;
  }
  for (const auto& [k, off] : cps) {
    auto& s = ch->shards[k.shard];
    s.checkpoint = off;
    s.known = true;
  }
  if (ch->log) ch->log->Write({{"eventType", "ChannelActive"}, {"channelARN", c.arn}}, clock_->NowMillis());
}

void ChannelManager::Fail(const std::shared_ptr<Channel>& ch, const std::string& reason) {
  std::lock_guard lock(ch->mu);
  if (ch->config.status == ChannelStatus::kDeleting) return;
  ch->config.status = ChannelStatus::kFailed;
  ch->config.status_reason = reason.substr(0, 2048);
  ch->stopping = true;
  (void)store_->Save(ch->config);
  spdlog::warn("channel {} FAILED: {}", ch->config.name, reason);
  if (ch->log) {
    ch->log->Write({{"eventType", "Error"}, {"channelARN", ch->config.arn}, {"errorMessage", reason}},
                   clock_->NowMillis());
  }
}

void ChannelManager::ScheduleShards(const std::shared_ptr<Channel>& ch, int64_t now) {
  std::string stream_name;
  uint64_t uid;
  int64_t freshness_ms;
  {
    std::lock_guard lock(ch->mu);
    stream_name = ch->config.stream_name;
    uid = ch->config.stream_uid;
    freshness_ms = int64_t{ch->config.s3.data_freshness_seconds} * 1000;
  }
  auto info = streams_->Describe(stream_name);
  if (!info.ok() || info->uid != uid) return Fail(ch, "The source stream no longer exists.");
  // Flush a little before the oldest record reaches the freshness interval, so that it is
  // visible within it.
  int64_t lead = std::min<int64_t>(500, freshness_ms / 10);
  int64_t oldest_pending = -1;
  // Shard logs are looked up before taking the channel lock (lock order: stream manager
  // locks are never taken while a channel lock is held).
  std::map<uint32_t, std::shared_ptr<log::ShardLog>> logs;
  for (const auto& s : info->shards) {
    auto log = streams_->ShardLogFor(uid, s.index);
    if (log.ok()) logs[s.index] = *log;
  }
  std::vector<std::tuple<uint32_t, uint64_t, std::shared_ptr<log::ShardLog>>> due;
  {
    std::lock_guard lock(ch->mu);
    for (const auto& s : info->shards) {
      if (ch->done.count(s.index)) continue;
      // Parents first: a child waits until every parent is delivered to its end.
      bool parents_done = true;
      for (auto p : {s.parent, s.adjacent_parent}) {
        if (p && info->FindShard(*p) && !ch->done.count(*p)) parents_done = false;
      }
      auto lit = logs.find(s.index);
      if (lit == logs.end()) continue;
      const auto& log = lit->second;
      auto& st = ch->shards[s.index];
      uint64_t end = log->committed_end();
      if (s.end_offset) end = std::min(end, *s.end_offset);
      if (st.checkpoint < log->start_offset() && !st.in_flight) {
        // Records expired before delivery (retention was forced past the channel).
        spdlog::warn("channel {}: {} records of shard {} expired before delivery",
                     ch->config.name, log->start_offset() - st.checkpoint, s.index);
        st.checkpoint = log->start_offset();
        st.first_pending_ms = -1;
      }
      if (st.checkpoint >= end) {
        if (s.end_offset && !st.in_flight && st.checkpoint >= *s.end_offset) ch->done[s.index] = true;
        continue;
      }
      if (st.first_pending_ms < 0) {
        auto a = log->ArrivalOf(st.checkpoint);
        if (!a.ok()) continue;
        st.first_pending_ms = *a;
      }
      if (oldest_pending < 0 || st.first_pending_ms < oldest_pending) oldest_pending = st.first_pending_ms;
      if (!parents_done || st.in_flight || now < st.retry_after_ms) continue;
      // Due when the oldest record is about to outlive the freshness interval, or when
      // enough is pending to fill a batch (a backlog is delivered at full speed).
      bool ripe = now >= st.first_pending_ms + freshness_ms - lead ||
                  end - st.checkpoint >= options_.max_batch_records ||
                  log->ApproximateBytes(st.checkpoint, end) >= options_.max_batch_bytes;
      if (!ripe) continue;
      st.in_flight = true;
      ++ch->in_flight;
      due.emplace_back(s.index, end, log);
    }
  }
  ch->metrics.data_freshness_ms.store(oldest_pending < 0 ? 0 : std::max<int64_t>(0, now - oldest_pending));
  for (auto& [shard, end, log] : due) {
    Submit([this, ch, shard = shard, end = end, log = log] { RunBatch(ch, shard, end, log); });
  }
}

Status ChannelManager::PutWithRetry(const std::shared_ptr<Channel>& ch,
                                    const std::shared_ptr<DeliveryLog>& dlog,
                                    const std::string& bucket, const std::string& key,
                                    const std::string& body, const objectstore::PutOptions& opts) {
  std::mt19937_64 rng(crypto::RandomU64());
  int64_t delay = 200;
  for (int attempt = 1;; ++attempt) {
    Status st = objects_->Put(bucket, key, body, opts);
    if (st.ok() || Permanent(st)) return st;
    if (ch->stopping || stopping_) return ShuttingDown("channel stopped while uploading");
    spdlog::debug("upload of {}/{} failed ({}), retrying", bucket, key, st.ToString());
    if (dlog) {
      dlog->Write({{"eventType", "DeliveryAttemptFailed"},
                      {"destination", bucket + "/" + key},
                      {"attempt", attempt},
                      {"errorMessage", st.message()}},
                     clock_->NowMillis());
    }
    // Sleep in short steps so that a delete or a shutdown is not held up by a backoff.
    auto until = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(static_cast<int64_t>(rng() % delay) + delay / 2);
    while (std::chrono::steady_clock::now() < until) {
      if (ch->stopping || stopping_) return ShuttingDown("channel stopped while uploading");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    delay = std::min<int64_t>(delay * 2, kMaxRetryDelayMs);
  }
}

void ChannelManager::RunBatch(const std::shared_ptr<Channel>& ch, uint32_t shard, uint64_t end,
                              std::shared_ptr<log::ShardLog> log) {
  ChannelConfig c;
  std::shared_ptr<const KeyTemplate> tmpl;
  std::shared_ptr<DeliveryLog> dlog;
  uint64_t first;
  {
    std::lock_guard lock(ch->mu);
    c = ch->config;
    tmpl = ch->key_template;
    dlog = ch->log;
    first = ch->shards[shard].checkpoint;
  }
  ShardKey key{c.stream_uid, shard};
  auto finish = [&](bool advanced, uint64_t next, Status error) {
    std::lock_guard lock(ch->mu);
    auto& st = ch->shards[shard];
    st.in_flight = false;
    --ch->in_flight;
    if (advanced) {
      st.checkpoint = next;
      st.known = true;
      st.first_pending_ms = -1;
      st.failures = 0;
      st.retry_after_ms = 0;
    } else if (!error.ok()) {
      st.failures++;
      st.retry_after_ms = clock_->NowMillis() + std::min<int64_t>(kMaxRetryDelayMs, 500LL << std::min(st.failures, 6));
    }
  };

  // 1. The plan: a batch that was planned before a crash is rebuilt exactly.
  auto plan = store_->LoadPlan(c.id, key);
  if (!plan.ok()) return finish(false, 0, plan.status());
  uint64_t stop = plan->has_value() ? (*plan)->end_offset : end;
  if (plan->has_value()) first = (*plan)->first_offset;

  // 2. Read and build.
  int64_t attempt_ms = plan->has_value() && (*plan)->attempt_ms > 0 ? (*plan)->attempt_ms
                                                                     : clock_->NowMillis();
  BatchContext bctx{&c, tmpl.get(), c.stream_uid, shard, stream::ShardIdString(shard),
                    options_.compression_level, attempt_ms};
  BatchBuilder builder(bctx);
  uint64_t offset = first;
  size_t bytes = 0;
  while (offset < stop) {
    size_t chunk_bytes = std::min<size_t>(4u << 20, options_.max_batch_bytes);
    auto r = log->Read(offset, 10000, chunk_bytes, stop);
    if (!r.ok()) {
      spdlog::error("channel {}: reading shard {}: {}", c.name, shard, r.status().ToString());
      return finish(false, 0, r.status());
    }
    if (r->records.empty()) break;
    for (const auto& rec : r->records) {
      Status st = builder.Add({rec.offset, rec.arrival_ms, rec.data});
      if (!st.ok()) return finish(false, 0, st);
      bytes += rec.data.size();
    }
    offset = r->next_offset;
    if (!plan->has_value() &&
        (bytes >= options_.max_batch_bytes || offset - first >= options_.max_batch_records)) {
      break;
    }
  }
  if (plan->has_value() && offset != stop) {
    // The planned records are no longer all there (retention forced past them).
    spdlog::error("channel {}: planned batch [{}, {}) of shard {} cannot be rebuilt (got to {})",
                  c.name, first, stop, shard, offset);
  }
  auto built = builder.Finish();
  if (!built.ok()) return finish(false, 0, built.status());
  uint64_t next = offset;

  // 3. Persist the plan before any upload.
  if (!plan->has_value()) {
    Status st = store_->SavePlan(c.id, key, {first, next, attempt_ms});
    if (!st.ok()) return finish(false, 0, st);
  }

  // 4. Upload the objects, then the DLQ lines, under deterministic keys.
  auto bucket = objectstore::BucketFromArn(c.s3.bucket_arn);
  auto dlq_bucket = objectstore::BucketFromArn(c.s3.dlq.bucket_arn);
  if (!bucket.ok() || !dlq_bucket.ok()) {
    Fail(ch, "invalid bucket ARN");
    return finish(false, 0, Internal("bad bucket"));
  }
  objectstore::PutOptions opts;
  opts.storage_class = c.s3.storage_class;
  if (!options_.local_buckets) opts.expected_bucket_owner = c.s3.expected_bucket_owner;
  if (c.encryption) {
    opts.server_side_encryption = "aws:kms";
    opts.sse_kms_key_id = c.encryption->key_id;
  }
  opts.content_type = c.record_format == RecordFormat::kByteArray ? "application/octet-stream"
                      : c.record_format == RecordFormat::kString ? "text/plain"
                                                                  : "application/x-ndjson";
  size_t out_bytes = 0;
  for (const auto& obj : built->objects) {
    Status st = PutWithRetry(ch, dlog, *bucket, obj.key, obj.body, opts);
    if (!st.ok()) {
      if (Permanent(st)) Fail(ch, "Delivery to the destination failed: " + st.message());
      if (dlog) {
        dlog->Write({{"eventType", "DeliveryFailed"},
                        {"channelARN", c.arn},
                        {"shardId", bctx.shard_id},
                        {"destination", *bucket + "/" + obj.key},
                        {"errorMessage", st.message()}},
                       clock_->NowMillis());
      }
      return finish(false, 0, st);
    }
    out_bytes += obj.body.size();
    ch->metrics.delivery_success++;
    if (dlog) {
      dlog->Write({{"eventType", "DeliverySucceeded"},
                      {"channelARN", c.arn},
                      {"streamName", c.stream_name},
                      {"shardId", bctx.shard_id},
                      {"firstSequenceNumber", stream::SequenceNumber::ForRecord(c.stream_uid, shard, obj.first_offset).ToString()},
                      {"lastSequenceNumber", stream::SequenceNumber::ForRecord(c.stream_uid, shard, obj.last_offset).ToString()},
                      {"destination", "s3://" + *bucket + "/" + obj.key},
                      {"records", obj.records},
                      {"bytes", obj.body.size()}},
                     clock_->NowMillis());
    }
  }
  if (built->dlq) {
    objectstore::PutOptions dopts;
    dopts.content_type = "application/x-ndjson";
    if (!options_.local_buckets) dopts.expected_bucket_owner = c.s3.dlq.expected_bucket_owner;
    Status st = PutWithRetry(ch, dlog, *dlq_bucket, built->dlq->key, built->dlq->body, dopts);
    if (!st.ok()) {
      if (Permanent(st)) Fail(ch, "Writing to the dead-letter queue failed: " + st.message());
      if (dlog) {
        dlog->Write({{"eventType", "DLQWriteFailed"}, {"channelARN", c.arn}, {"errorMessage", st.message()}},
                       clock_->NowMillis());
      }
      return finish(false, 0, st);
    }
    ch->metrics.dlq_delivery_success += built->dlq->records;
    if (dlog) {
      dlog->Write({{"eventType", "DLQWrite"},
                      {"channelARN", c.arn},
                      {"shardId", bctx.shard_id},
                      {"destination", "s3://" + *dlq_bucket + "/" + built->dlq->key},
                      {"records", built->dlq->records}},
                     clock_->NowMillis());
    }
  }

  // 5. Only now move the checkpoint (and drop the plan).
  Status st = store_->Commit(c.id, key, next);
  if (!st.ok()) return finish(false, 0, st);
  size_t processed = 0, delivered = 0;
  for (const auto& o : built->objects) {
    processed += o.raw_bytes;
    delivered += o.records;
  }
  ch->metrics.bytes_in += built->bytes_in;
  ch->metrics.record_count += built->records_in;
  ch->metrics.bytes_processed += processed;
  ch->metrics.bytes_out += out_bytes;
  ch->metrics.successful_record_count += delivered;
  ch->metrics.failed_record_count += built->failed_records;
  finish(true, next, Status::OK());
  tick_cv_.notify_all();  // a long backlog continues at once
}

}  // namespace icestream::delivery
