// The channel manager: lifecycle, quotas, tags, scheduling and the worker pool.
#include "delivery/channel_manager.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "aws/arn.h"
#include "common/crypto.h"
#include "common/fs.h"
#include "delivery/delivery_log.h"
#include "delivery/retry.h"

namespace icestream::delivery {

struct ChannelManager::Channel {
  mutable std::mutex mu;
  ChannelConfig config;
  // Null when the channel's sink could not be made: FAILED for a permanent reason; for a
  // passing one (the source or the registry unreachable, this process's credentials
  // refused) the start is tried again at start_retry_after_ms.
  std::shared_ptr<ShardRunner> runner;
  int start_failures = 0;
  int64_t start_retry_after_ms = 0;
  // Scale-out: the channel's row was last written here (created, or its status or settings
  // changed) as the local_writes_-th write (0: never). A reload whose list was read before
  // that has a stale row: it neither removes the channel nor applies the row over it.
  uint64_t written_here = 0;
  int64_t updating_until_ms = 0;
  bool activating = false;  // an activation job is queued or running
  int activation_attempts = 0;
  int64_t activation_retry_after_ms = 0;
  int64_t activation_started_ms = 0;      // CreateChannel, or the resume of a channel never active
  int64_t activation_grace_since_ms = 0;  // first grace-kind failure of the activation
  std::string activation_error;           // why the last activation attempt did not succeed
  int64_t failed_ms = 0;                  // when it went FAILED (0: before this server started)
  // Delivery started once (checkpoints exist): a FAILED channel that was active keeps
  // what it has not delivered (retention), so that a resume loses nothing.
  bool activated = false;
  // The local stream the channel's source reads, once opened (0: a remote stream, or not
  // opened yet); for a channel made through the Kinesis API, config.stream_uid is 0.
  uint64_t local_stream_uid = 0;
};

namespace {

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

ChannelManager::ChannelManager(ChannelManagerOptions options, SourceProvider* sources,
                               std::unique_ptr<DeliveryStore> store,
                               std::shared_ptr<objectstore::ObjectStore> buckets,
                               std::vector<std::shared_ptr<Destination>> destinations,
                               const Clock* clock)
    : options_(std::move(options)),
      sources_(sources),
      store_(std::move(store)),
      buckets_(std::move(buckets)),
      destinations_(std::move(destinations)),
      clock_(clock) {}

Result<std::unique_ptr<ChannelManager>> ChannelManager::Open(
    ChannelManagerOptions options, SourceProvider* sources, std::unique_ptr<DeliveryStore> store,
    std::shared_ptr<objectstore::ObjectStore> buckets,
    std::vector<std::shared_ptr<Destination>> destinations, const Clock* clock) {
  std::unique_ptr<ChannelManager> m(new ChannelManager(std::move(options), sources,
                                                       std::move(store), std::move(buckets),
                                                       std::move(destinations), clock));
  RETURN_IF_ERROR(m->Load());
  ChannelManager* raw = m.get();
  if (m->options_.coordinator != nullptr) {
    m->channels_watch_ = m->store_->WatchChannels([raw] {
      raw->reload_asked_.store(true);
      raw->tick_cv_.notify_all();
    });
    m->watching_ = m->channels_watch_ != nullptr;
    // Units this process just took (a channel's control, its shards) are scheduled now.
    m->taken_watch_ = m->options_.coordinator->WatchTaken([raw] { raw->tick_cv_.notify_all(); });
  }
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
    for (auto& [id, ch] : channels_) {
      std::lock_guard clock(ch->mu);
      if (ch->runner) ch->runner->Stop();
    }
  }
  tick_cv_.notify_all();
  queue_cv_.notify_all();
  if (scheduler_.joinable()) scheduler_.join();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
  channels_watch_.reset();  // its watcher is not running once this returns
  taken_watch_.reset();     // the same
}

std::string ChannelManager::ArnFor(const std::string& id) const {
  return aws::Arn{"aws", "kinesis", options_.region, options_.account, "channel/" + id}.ToString();
}

std::optional<std::string> ChannelManager::IdOf(std::string_view arn) const {
  auto parsed = aws::ParseArn(arn);
  if (!parsed || parsed->partition != "aws" || !parsed->Is("kinesis", "channel") ||
      parsed->region != options_.region || parsed->account != options_.account) {
    return std::nullopt;
  }
  return std::string(parsed->ResourceId());
}

Destination* ChannelManager::DestinationFor(DestinationType type) const {
  for (const auto& d : destinations_) {
    if (d->type() == type) return d.get();
  }
  return nullptr;
}

bool ChannelManager::Supports(DestinationType type) const {
  return DestinationFor(type) != nullptr;
}

Status ChannelManager::MakeRunner(Channel* ch, bool load) {
  const ChannelConfig& c = ch->config;
  Destination* dest = DestinationFor(c.destination_type());
  if (dest == nullptr) {
    return Unimplemented(fmt::format("this server does not deliver to {} destinations",
                                     DestinationTypeName(c.destination_type())));
  }
  SinkEnv env;
  env.buckets = buckets_.get();
  env.local_buckets = options_.local_buckets;
  env.compression_level = options_.compression_level;
  env.create_only_keys = options_.coordinator != nullptr;
  ASSIGN_OR_RETURN(auto source, sources_->OpenSource(c));
  // A channel made through the Kinesis API has no local stream id in its config; the
  // source that resolved its stream knows it.
  ch->local_stream_uid = source->LocalStreamUid();
  ASSIGN_OR_RETURN(std::shared_ptr<ShardRunner> runner,
                   ShardRunner::Make(c, dest, std::move(source), store_.get(), clock_,
                                     options_.runner, std::move(env)));
  runner->SetCoordinator(options_.coordinator);
  runner->SetLog(MakeLog(options_.data_dir, c));
  if (load) RETURN_IF_ERROR(runner->Load());
  ch->runner = std::move(runner);
  return Status::OK();
}

void ChannelManager::StartRunner(Channel* ch) {
  ChannelConfig& c = ch->config;
  Status st = MakeRunner(ch, c.status != ChannelStatus::kCreating);
  if (st.ok()) {
    ch->activated = c.status != ChannelStatus::kCreating;
    return;
  }
  if (st.Is(SourceError::kNotThisSource)) {
    // Another endpoint's stream: delivered by other processes of the pool, neither failed
    // nor counted as a failure here (looked at again every 30 s, quietly).
    ch->runner.reset();
    // Not offered here: its units go to the processes that read its stream.
    if (options_.coordinator != nullptr) options_.coordinator->Forget(c.id);
    if (ch->start_retry_after_ms == 0) {
      spdlog::info("channel {}: left to the pool: {}", c.name, st.message());
    }
    ch->start_retry_after_ms = clock_->NowMillis() + 30000;
    return;
  }
  if (!IsPermanent(st)) {
    ch->runner.reset();
    ++ch->start_failures;
    ch->start_retry_after_ms =
        clock_->NowMillis() + RetryDelayMs(ch->start_failures, 500, 30000, crypto::RandomU64());
    spdlog::warn("channel {}: cannot start delivery ({} attempt(s) so far): {} (retrying)", c.name,
                 ch->start_failures, st.ToString());
    return;
  }
  c.status = ChannelStatus::kFailed;
  c.status_reason = ("The channel cannot deliver: " + st.message()).substr(0, 2048);
  spdlog::error("channel {} FAILED: {}", c.name, c.status_reason);
}

Status ChannelManager::Load() {
  ASSIGN_OR_RETURN(auto all, store_->LoadChannels());
  for (auto& c : all) {
    auto ch = std::make_shared<Channel>();
    if (c.status == ChannelStatus::kUpdating) c.status = ChannelStatus::kActive;
    ch->config = std::move(c);
    ch->activation_started_ms = ch->config.created_ms;
    if (ch->config.status == ChannelStatus::kFailed) {
      // A FAILED channel that was active holds its undelivered records for a resume: its
      // runner keeps the checkpoints (it never schedules). If it cannot be made, the
      // channel stays FAILED for its first reason and holds nothing.
      ASSIGN_OR_RETURN(auto cps, store_->Checkpoints(ch->config.id));
      if (!cps.empty()) {
        Status st = MakeRunner(ch.get(), /*load=*/true);
        if (st.ok()) {
          ch->runner->Stop();
          ch->activated = true;
        } else {
          spdlog::warn("channel {} (FAILED): {}", ch->config.name, st.ToString());
        }
      }
    } else if (ch->config.status != ChannelStatus::kDeleting) {
      StartRunner(ch.get());
    }
    channels_[ch->config.id] = std::move(ch);
  }
  return Status::OK();
}

Result<std::shared_ptr<ChannelManager::Channel>> ChannelManager::Find(
    const std::string& arn) const {
  std::optional<std::string> id = IdOf(arn);
  std::lock_guard lock(mu_);
  if (id) {
    auto it = channels_.find(*id);
    if (it != channels_.end()) return it->second;
  }
  return NotFound(fmt::format("Channel {} under account {} not found.", arn, options_.account));
}

bool ChannelManager::Owns(std::string_view arn) const { return IdOf(arn).has_value(); }

Result<ChannelConfig> ChannelManager::Create(ChannelConfig c) {
  Destination* dest = DestinationFor(c.destination_type());
  if (dest == nullptr) {
    return InvalidArgument(fmt::format("This server does not deliver to {} destinations.",
                                       DestinationTypeName(c.destination_type())));
  }
  ASSIGN_OR_RETURN(SourceStream info, sources_->DescribeStream(c.stream_name));
  if (!info.on_demand) {
    return FailedPrecondition(
        fmt::format("Stream {} under account {} is PROVISIONED; channels can only be created on "
                    "ON_DEMAND streams.",
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
  if (c.dlq.error_output_prefix.empty())
    c.dlq.error_output_prefix = DefaultErrorOutputPrefix(c.name, c.id);
  if (c.logging.log_group_name.empty())
    c.logging.log_group_name = DefaultLogGroupName(c.name, c.id);
  if (c.logging.log_stream_name.empty())
    c.logging.log_stream_name = std::string(kDefaultLogStreamName);
  RETURN_IF_ERROR(dest->Prepare(&c));

  auto ch = std::make_shared<Channel>();
  {
    std::lock_guard lock(mu_);
    size_t on_stream = 0, same_kind = 0;
    for (const auto& [id, other] : channels_) {
      std::lock_guard olock(other->mu);
      if (other->config.name == c.name) {
        return AlreadyExists(
            fmt::format("Channel {} under account {} already exists.", c.name, options_.account));
      }
      // A channel made through the Kinesis API (no local stream id) is told by its ARN.
      if (SameStream(other->config, c)) {
        ++on_stream;
        same_kind += other->config.destination_type() == c.destination_type() ? 1 : 0;
      }
    }
    if (same_kind > 0) {
      return ResourceExhausted(fmt::format(
          "Stream {} already has a channel delivering to {}; a stream can have one channel per "
          "destination type.",
          c.stream_name, c.destination_type() == DestinationType::kS3 ? "S3" : "S3 Tables"));
    }
    if (on_stream >= options_.max_channels_per_stream) {
      return ResourceExhausted(fmt::format("Stream {} already has {} channels; the limit is {}.",
                                           c.stream_name, on_stream,
                                           options_.max_channels_per_stream));
    }
    if (channels_.size() >= options_.max_channels_per_account) {
      return ResourceExhausted(
          fmt::format("This request would exceed the channel limit of {} for account {} in {}.",
                      options_.max_channels_per_account, options_.account, options_.region));
    }
    RETURN_IF_ERROR(SaveRow(ch.get(), c));
    ch->config = c;
    ch->activation_started_ms = c.created_ms;
    StartRunner(ch.get());
    c = ch->config;  // as created (StartRunner may have failed it), before activation runs
    channels_[c.id] = ch;
  }
  spdlog::info("channel {} ({}) created: stream {} to {}", c.name, c.id, c.stream_name,
               DestinationTypeName(c.destination_type()));
  tick_cv_.notify_all();
  return c;
}

Result<ChannelConfig> ChannelManager::Describe(const std::string& arn) const {
  ASSIGN_OR_RETURN(auto ch, Find(arn));
  std::lock_guard lock(ch->mu);
  return ch->config;
}

Result<nlohmann::json> ChannelManager::DeliveryStatus(const std::string& arn) const {
  ASSIGN_OR_RETURN(auto ch, Find(arn));
  std::shared_ptr<ShardRunner> runner;
  ChannelConfig c;
  nlohmann::json out = nlohmann::json::object();
  {
    std::lock_guard lock(ch->mu);
    runner = ch->runner;
    c = ch->config;
    if (c.status == ChannelStatus::kCreating) {
      out["ActivationAttempts"] = ch->activation_attempts;
      if (!ch->activation_error.empty()) out["LastError"] = ch->activation_error;
    }
  }
  if (runner) {
    nlohmann::json status = runner->StatusJson(clock_->NowMillis());
    for (const auto& [k, v] : status.items()) {
      if (!out.contains(k)) out[k] = v;
    }
  }
  return out;
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
  if (freshness_seconds) next.data_freshness_seconds = *freshness_seconds;
  if (logging) {
    next.logging.enabled = logging->enabled;
    if (!logging->log_group_name.empty()) next.logging.log_group_name = logging->log_group_name;
    if (!logging->log_stream_name.empty()) next.logging.log_stream_name = logging->log_stream_name;
  }
  next.status = ChannelStatus::kUpdating;
  RETURN_IF_ERROR(SaveRow(ch.get(), next));
  ch->config = next;
  if (ch->runner) ch->runner->SetLog(MakeLog(options_.data_dir, next));
  // Delivery goes on while UPDATING; the scheduler makes it ACTIVE again shortly.
  ch->updating_until_ms = clock_->NowMillis() + 200;
  return next;
}

Status ChannelManager::Delete(const std::string& arn) {
  ASSIGN_OR_RETURN(auto ch, Find(arn));
  std::lock_guard lock(ch->mu);
  if (ch->config.status != ChannelStatus::kDeleting) {
    ch->config.status = ChannelStatus::kDeleting;
    if (ch->runner) ch->runner->Stop();
    RETURN_IF_ERROR(SaveRow(ch.get(), ch->config));
    spdlog::info("channel {} ({}) deleting", ch->config.name, ch->config.id);
  }
  tick_cv_.notify_all();
  return Status::OK();
}

Result<ChannelConfig> ChannelManager::Resume(const std::string& arn) {
  ASSIGN_OR_RETURN(auto ch, Find(arn));
  std::shared_ptr<ShardRunner> runner;
  ChannelConfig resumed;
  {
    std::lock_guard lock(ch->mu);
    if (ch->config.status != ChannelStatus::kFailed) {
      return FailedPrecondition(fmt::format("Channel {} is not FAILED, instead in state {}.", arn,
                                            ChannelStatusName(ch->config.status)));
    }
    // The failed runner's last jobs finish their attempt first (they must not outlive it,
    // and two runners of one channel must never deliver side by side).
    if ((ch->runner && ch->runner->in_flight() > 0) || ch->activating) {
      return FailedPrecondition(fmt::format(
          "Channel {} is finishing its last delivery attempt; try again in a moment.", arn));
    }
    ASSIGN_OR_RETURN(auto cps, store_->Checkpoints(ch->config.id));
    ChannelConfig previous = ch->config;
    // Delivery continues from the checkpoints (and plans) in the store; a channel that
    // never became active starts its activation over.
    ch->config.status = cps.empty() ? ChannelStatus::kCreating : ChannelStatus::kActive;
    ch->config.status_reason.clear();
    ch->runner.reset();
    Status st = MakeRunner(ch.get(), !cps.empty());
    if (!st.ok()) {
      ch->config = previous;
      return InvalidArgument(fmt::format("Channel {} cannot resume: {}", arn, st.message()));
    }
    ch->activated = !cps.empty();
    ch->activation_attempts = 0;
    ch->activation_error.clear();
    ch->activation_retry_after_ms = 0;
    ch->activation_grace_since_ms = 0;
    ch->activation_started_ms = clock_->NowMillis();
    if (Status save = SaveRow(ch.get(), ch->config); !save.ok()) {
      ch->runner->Stop();
      ch->config = previous;
      return save;
    }
    runner = ch->runner;
    resumed = ch->config;
    spdlog::info("channel {} ({}) resumed ({}; it had FAILED: {})", resumed.name, resumed.id,
                 cps.empty() ? "activation starts over" : "delivery continues from its checkpoints",
                 previous.status_reason);
  }
  runner->LogEvent({{"eventType", "ChannelResumed"}});
  tick_cv_.notify_all();
  return resumed;
}

Result<RedriveState> ChannelManager::StartRedrive(const std::string& arn, RedriveFilter filter) {
  ASSIGN_OR_RETURN(auto ch, Find(arn));
  std::shared_ptr<ShardRunner> runner;
  {
    std::lock_guard lock(ch->mu);
    if (ch->config.status != ChannelStatus::kActive &&
        ch->config.status != ChannelStatus::kUpdating) {
      return FailedPrecondition(fmt::format("Channel {} is not ACTIVE, instead in state {}.", arn,
                                            ChannelStatusName(ch->config.status)));
    }
    runner = ch->runner;
  }
  if (!runner) return FailedPrecondition(fmt::format("Channel {} does not deliver.", arn));
  ASSIGN_OR_RETURN(RedriveState r, runner->StartRedrive(std::move(filter)));
  tick_cv_.notify_all();
  return r;
}

Result<std::vector<RedriveState>> ChannelManager::Redrives(const std::string& arn) const {
  ASSIGN_OR_RETURN(auto ch, Find(arn));
  std::shared_ptr<ShardRunner> runner;
  {
    std::lock_guard lock(ch->mu);
    runner = ch->runner;
  }
  if (runner) return runner->Redrives();
  // A channel whose runner could not be made: its redrives as the store has them.
  ASSIGN_OR_RETURN(auto docs, store_->LoadRedrives(ch->config.id));
  std::vector<RedriveState> out;
  for (const auto& d : docs) {
    ASSIGN_OR_RETURN(RedriveState r, RedriveStateFromJson(d));
    out.push_back(std::move(r));
  }
  return out;
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
    return InvalidArgument(
        fmt::format("Failed to add tags to channel {}: a resource can have at most 50 tags.", arn));
  }
  RETURN_IF_ERROR(SaveRow(ch.get(), next));
  ch->config = std::move(next);
  return Status::OK();
}

Status ChannelManager::Untag(const std::string& arn, const std::vector<std::string>& keys) {
  ASSIGN_OR_RETURN(auto ch, Find(arn));
  std::lock_guard lock(ch->mu);
  ChannelConfig next = ch->config;
  for (const auto& k : keys) next.tags.erase(k);
  RETURN_IF_ERROR(SaveRow(ch.get(), next));
  ch->config = std::move(next);
  return Status::OK();
}

Result<std::map<std::string, std::string>> ChannelManager::Tags(const std::string& arn) const {
  ASSIGN_OR_RETURN(auto ch, Find(arn));
  std::lock_guard lock(ch->mu);
  return ch->config.tags;
}

std::optional<Position> ChannelManager::NeededPosition(uint64_t stream_uid,
                                                       const std::string& shard) const {
  std::optional<Position> floor;
  std::lock_guard lock(mu_);
  for (const auto& [id, ch] : channels_) {
    std::shared_ptr<ShardRunner> runner;
    {
      std::lock_guard clock(ch->mu);
      if (ch->config.stream_uid != stream_uid && ch->local_stream_uid != stream_uid) continue;
      // A deleted channel holds nothing back, nor does a FAILED one that never delivered
      // (its start is fixed again when it resumes); a FAILED channel that was active
      // keeps what it has not delivered, so that a resume loses nothing.
      if (ch->config.status == ChannelStatus::kDeleting) continue;
      if (ch->config.status == ChannelStatus::kFailed && (!ch->activated || !ch->runner)) {
        continue;
      }
      runner = ch->runner;
      // A channel not yet active needs everything (its start is not fixed yet).
      if (!runner || ch->config.status == ChannelStatus::kCreating) return Position{};
    }
    auto need = runner->NeededPosition(shard);
    if (need && (!floor || *need < *floor)) floor = need;
  }
  return floor;
}

std::vector<ChannelManager::Unhealthy> ChannelManager::FailingChannels() const {
  std::vector<Unhealthy> out;
  std::lock_guard lock(mu_);
  for (const auto& [id, ch] : channels_) {
    std::lock_guard clock(ch->mu);
    std::string state(ChannelStatusName(ch->config.status));
    if (ch->config.status == ChannelStatus::kFailed) {
      out.push_back({ch->config.name, state, ch->failed_ms, ch->config.status_reason});
      continue;
    }
    if (!ch->runner || ch->config.status == ChannelStatus::kDeleting) continue;
    int64_t since = ch->runner->metrics().failing_since_ms.load();
    if (since > 0) out.push_back({ch->config.name, state, since, ch->runner->last_error()});
  }
  std::sort(out.begin(), out.end(),
            [](const Unhealthy& a, const Unhealthy& b) { return a.name < b.name; });
  return out;
}

std::string ChannelManager::PrometheusText() const {
  std::vector<std::shared_ptr<Channel>> all;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, ch] : channels_) all.push_back(ch);
  }
  std::vector<MetricsRow> rows;
  std::vector<std::shared_ptr<ShardRunner>> keep;  // the metrics live in the runners
  for (const auto& ch : all) {
    std::lock_guard lock(ch->mu);
    if (!ch->runner) continue;
    keep.push_back(ch->runner);
    MetricsRow row{ch->config.destination_type(),
                   ch->config.name,
                   ch->config.id,
                   ch->config.stream_name,
                   &ch->runner->metrics(),
                   std::string(ChannelStatusName(ch->config.status)),
                   ch->runner->SinkMetrics()};
    row.rejected_by_code = ch->runner->RejectedByCode();
    for (const auto& r : ch->runner->Redrives()) {
      row.redrive_delivered += r.progress.delivered;
      row.redrive_failed_again += r.progress.failed_again;
      row.redrive_expired += r.progress.expired;
      if (r.active()) {
        row.redrive_active = true;
        row.redrive_remaining = r.total > r.progress.next ? r.total - r.progress.next : 0;
      }
    }
    rows.push_back(std::move(row));
  }
  return delivery::PrometheusText(rows);
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
    tick_cv_.notify_all();  // a long backlog continues at once
  }
}

void ChannelManager::SchedulerLoop() {
  while (!stopping_) {
    Tick();
    std::unique_lock lock(tick_mu_);
    tick_cv_.wait_for(lock, std::chrono::milliseconds(options_.tick_ms));
  }
}

Status ChannelManager::SaveRow(Channel* ch, const ChannelConfig& c) {
  RETURN_IF_ERROR(store_->SaveChannel(c));
  ch->written_here = ++local_writes_;
  return Status::OK();
}

bool ChannelManager::HoldsControl(const Channel& ch) const {
  if (options_.coordinator == nullptr) return true;
  std::string unit = ch.runner ? ch.runner->ControlUnit() : std::string(kControlUnit);
  options_.coordinator->Offer(ch.config.id, {unit});
  return options_.coordinator->HeldEpoch(ch.config.id, unit) != 0;
}

void ChannelManager::Reload() {
  const uint64_t writes_before = local_writes_.load();
  look_again_soon_ = false;
  auto stored = store_->LoadChannels();
  if (!stored.ok()) {
    spdlog::warn("reading the channels from the store: {}", stored.status().ToString());
    return;
  }
  std::map<std::string, ChannelConfig> by_id;
  for (auto& c : *stored) by_id[c.id] = std::move(c);
  std::vector<std::shared_ptr<Channel>> added;
  {
    std::lock_guard lock(mu_);
    for (auto it = channels_.begin(); it != channels_.end();) {
      auto found = by_id.find(it->first);
      std::shared_ptr<Channel> keep = it->second;  // outlives the erase below
      std::lock_guard clock(keep->mu);
      if (keep->written_here > writes_before) {
        // Created or changed here after the list was read: the row read is stale (or
        // missing). The next reload looks again.
        if (found != by_id.end()) by_id.erase(found);
        look_again_soon_ = true;
        ++it;
        continue;
      }
      if (found == by_id.end()) {
        // Removed by another process (its deletion finished there).
        if (keep->runner) keep->runner->Stop();
        if (!keep->runner || keep->runner->in_flight() == 0) {
          options_.coordinator->Forget(it->first);
          it = channels_.erase(it);
          continue;
        }
        look_again_soon_ = true;  // once its batch is done
      } else {
        ChannelConfig& mine = keep->config;
        const ChannelConfig& theirs = found->second;
        if (theirs.status != mine.status ||
            theirs.data_freshness_seconds != mine.data_freshness_seconds ||
            theirs.tags != mine.tags) {
          ChannelStatus was = mine.status;
          // Resumed by another process while this one's stopped runner still has a batch
          // in flight: the fresh runner must wait for it. The status stays FAILED here
          // meanwhile, so that a later reload sees the change again and makes the runner
          // (copied now, it left the channel ACTIVE here without a runner for good).
          const bool resumed =
              was == ChannelStatus::kFailed && (theirs.status == ChannelStatus::kActive ||
                                                theirs.status == ChannelStatus::kCreating);
          const bool batch_running = keep->runner && keep->runner->in_flight() > 0;
          if (resumed && batch_running) {
            look_again_soon_ = true;
          } else {
            mine.status = theirs.status;
            mine.status_reason = theirs.status_reason;
          }
          mine.data_freshness_seconds = theirs.data_freshness_seconds;
          mine.logging = theirs.logging;
          mine.tags = theirs.tags;
          if ((mine.status == ChannelStatus::kFailed || mine.status == ChannelStatus::kDeleting) &&
              keep->runner) {
            keep->runner->Stop();
          }
          if (was == ChannelStatus::kCreating && mine.status == ChannelStatus::kActive &&
              keep->runner) {
            // Activated by another process: its checkpoints are in the store.
            (void)keep->runner->Load();
          }
          if (resumed && !batch_running) {
            // Resumed by another process: a fresh runner from the store's state, as there.
            const bool active = mine.status == ChannelStatus::kActive;
            keep->runner.reset();
            keep->activation_attempts = 0;
            keep->activation_error.clear();
            keep->activation_retry_after_ms = 0;
            keep->activation_grace_since_ms = 0;
            keep->activation_started_ms = clock_->NowMillis();
            keep->activated = active;
            if (Status st = MakeRunner(keep.get(), active); !st.ok()) {
              spdlog::warn("channel {} (resumed elsewhere): {}", mine.name, st.ToString());
            }
          }
        }
        by_id.erase(found);
      }
      ++it;
    }
    for (auto& [id, c] : by_id) {
      auto ch = std::make_shared<Channel>();
      ch->config = std::move(c);
      // Its activation timeout counts from its creation, as for one loaded or made here.
      ch->activation_started_ms = ch->config.created_ms;
      if (ch->config.status == ChannelStatus::kUpdating) ch->config.status = ChannelStatus::kActive;
      if (ch->config.status != ChannelStatus::kFailed &&
          ch->config.status != ChannelStatus::kDeleting) {
        StartRunner(ch.get());
      }
      channels_[id] = ch;
      added.push_back(ch);
    }
  }
  for (const auto& ch : added)
    spdlog::info("channel {} ({}) taken from the store", ch->config.name, ch->config.id);
}

void ChannelManager::Tick() {
  if (options_.coordinator != nullptr) {
    const int64_t every = watching_ && !look_again_soon_ ? options_.reload_ms * kWatchedReloadFactor
                                                         : options_.reload_ms;
    const bool asked = reload_asked_.exchange(false);
    if (asked || clock_->NowMillis() - last_reload_ms_ >= every) {
      last_reload_ms_ = clock_->NowMillis();
      Reload();
    }
  }
  std::vector<std::shared_ptr<Channel>> all;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, ch] : channels_) all.push_back(ch);
  }
  int64_t now = clock_->NowMillis();
  // Each delivering channel's share of the workers.
  int delivering = 0;
  for (const auto& ch : all) {
    std::lock_guard lock(ch->mu);
    if (ch->runner && (ch->config.status == ChannelStatus::kActive ||
                       ch->config.status == ChannelStatus::kUpdating)) {
      ++delivering;
    }
  }
  const int workers = static_cast<int>(std::max<size_t>(1, options_.worker_threads));
  const int share = std::max(1, workers / std::max(1, delivering));
  for (const auto& ch : all) {
    ChannelStatus status;
    std::shared_ptr<ShardRunner> runner;
    int64_t freshness_ms;
    {
      std::lock_guard lock(ch->mu);
      status = ch->config.status;
      // Where it is delivered (a process that cannot read its stream offers no unit of it).
      if (status == ChannelStatus::kUpdating && now >= ch->updating_until_ms && ch->runner &&
          HoldsControl(*ch)) {
        ch->config.status = ChannelStatus::kActive;
        (void)SaveRow(ch.get(), ch->config);
        status = ChannelStatus::kActive;
      }
      runner = ch->runner;
      freshness_ms = int64_t{ch->config.data_freshness_seconds} * 1000;
    }
    if (!runner && status != ChannelStatus::kFailed && status != ChannelStatus::kDeleting) {
      std::lock_guard lock(ch->mu);
      if (!ch->runner && now >= ch->start_retry_after_ms) StartRunner(ch.get());
      continue;
    }
    if (runner && (status == ChannelStatus::kActive || status == ChannelStatus::kUpdating)) {
      if (auto reason = runner->fatal()) {
        Fail(ch, *reason);
        continue;
      }
    }
    switch (status) {
      case ChannelStatus::kCreating: {
        // Destination checks may wait on the network: they run on a worker.
        std::lock_guard lock(ch->mu);
        if (ch->activating || now < ch->activation_retry_after_ms) break;
        if (!HoldsControl(*ch)) break;  // another process activates it
        ch->activating = true;
        Submit([this, ch] {
          Activate(ch);
          std::lock_guard l(ch->mu);
          ch->activating = false;
        });
        break;
      }
      case ChannelStatus::kActive:
      case ChannelStatus::kUpdating: {
        for (auto& job : runner->Schedule(now, freshness_ms, share)) Submit(std::move(job));
        break;
      }
      case ChannelStatus::kDeleting: {
        std::string id;
        {
          std::lock_guard lock(ch->mu);
          if (ch->runner && ch->runner->in_flight() > 0) break;
          if (ch->activating) break;
          // Another process holds the lifecycle: it removes the rows; this one drops the
          // channel when they are gone (Reload).
          if (!HoldsControl(*ch)) break;
          id = ch->config.id;
        }
        Status st = store_->RemoveChannel(id);
        if (!st.ok()) {
          spdlog::warn("deleting channel {}: {}", id, st.ToString());
          break;
        }
        spdlog::info("channel {} deleted", id);
        if (options_.coordinator != nullptr) options_.coordinator->Forget(id);
        std::lock_guard lock(mu_);
        channels_.erase(id);
        break;
      }
      case ChannelStatus::kFailed:
        break;
    }
  }
}

void ChannelManager::Activate(const std::shared_ptr<Channel>& ch) {
  std::shared_ptr<ShardRunner> runner;
  StartingPosition start;
  int64_t created_ms;
  {
    std::lock_guard lock(ch->mu);
    if (ch->config.status != ChannelStatus::kCreating || !ch->runner) return;
    runner = ch->runner;
    start = ch->config.starting_position;
    created_ms = ch->activation_started_ms;
  }
  auto cps = runner->PrepareActivation(start);
  if (!cps.ok()) {
    const Status& st = cps.status();
    const FailureKind kind = ClassifyFailure(st);
    // What failed, for the FAILED reason: the source stream or the destination.
    const bool source = st.Is(RunnerError::kSource);
    const char* cannot =
        source ? "cannot read its source stream" : "cannot write to its destination";
    if (kind == FailureKind::kPermanent)
      return Fail(ch, fmt::format("The channel {}: {}", cannot, st.message()));
    int64_t now = clock_->NowMillis();
    int attempts;
    int64_t grace_since = 0;
    {
      std::lock_guard lock(ch->mu);
      attempts = ++ch->activation_attempts;
      ch->activation_error = st.message();
      ch->activation_retry_after_ms =
          now + std::min<int64_t>(30000, 1000LL << std::min(attempts - 1, 5));
      if (kind == FailureKind::kGrace) {
        if (ch->activation_grace_since_ms == 0) ch->activation_grace_since_ms = now;
        grace_since = ch->activation_grace_since_ms;
      }
    }
    spdlog::warn("channel {}: activation attempt {} failed: {} (retrying)", ch->config.name,
                 attempts, st.message());
    runner->LogEvent(
        {{"eventType", "ActivationFailed"}, {"attempt", attempts}, {"errorMessage", st.message()}});
    if (grace_since > 0 && now - grace_since >= options_.runner.destination_grace_ms) {
      Fail(ch, fmt::format("The channel {}: {} (still so after {} s of retries: the grace period "
                           "is over)",
                           cannot, st.message(), (now - grace_since) / 1000));
    } else if (now - created_ms >= options_.activation_timeout_ms) {
      Fail(ch, fmt::format("The channel could not reach its {} for {} s ({} attempts): {}",
                           source ? "source stream" : "destination",
                           options_.activation_timeout_ms / 1000, attempts, st.message()));
    }
    return;
  }
  std::lock_guard lock(ch->mu);
  if (ch->config.status != ChannelStatus::kCreating) return;  // deleted meanwhile
  ch->config.status = ChannelStatus::kActive;
  Status ps = store_->Activate(ch->config, *cps);
  if (!ps.ok()) {
    ch->config.status = ChannelStatus::kCreating;
    spdlog::warn("activating channel {}: {}", ch->config.id, ps.ToString());
    return;
  }
  ch->written_here = ++local_writes_;  // as SaveRow does: the activation wrote the row
  ch->activation_error.clear();
  ch->activated = true;
  runner->Activated(*cps);
  spdlog::info("channel {} ({}) ACTIVE", ch->config.name, ch->config.id);
  runner->LogEvent({{"eventType", "ChannelActive"}});
}

void ChannelManager::Fail(const std::shared_ptr<Channel>& ch, const std::string& reason) {
  std::shared_ptr<ShardRunner> runner;
  {
    std::lock_guard lock(ch->mu);
    if (ch->config.status == ChannelStatus::kDeleting ||
        ch->config.status == ChannelStatus::kFailed)
      return;
    ch->config.status = ChannelStatus::kFailed;
    ch->config.status_reason = reason.substr(0, 2048);
    ch->failed_ms = clock_->NowMillis();
    runner = ch->runner;
    if (runner) runner->Stop();
    // Not saved (the store unreachable): FAILED here until a reload brings the stored
    // status back (and with it delivery, which fails again if the cause remains).
    (void)SaveRow(ch.get(), ch->config);
  }
  spdlog::warn("channel {} FAILED: {}", ch->config.name, reason);
  if (runner) runner->LogEvent({{"eventType", "Error"}, {"errorMessage", reason}});
}

}  // namespace icestream::delivery
