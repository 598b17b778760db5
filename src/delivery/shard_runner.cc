// The shard runner: due checks, plans, log reads, checkpoints, backoff, recovery.
#include "delivery/shard_runner.h"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "delivery/kpl.h"
#include "stream/model.h"
#include "stream/sequence_number.h"

namespace icestream::delivery {

struct ShardRunner::ShardState {
  uint64_t checkpoint = 0;        // next offset to deliver
  bool known = false;             // a checkpoint exists (activation or a delivered batch)
  bool in_flight = false;
  int64_t first_pending_ms = -1;  // arrival of the record at `checkpoint` (cache)
  int64_t retry_after_ms = 0;
  int failures = 0;
};

namespace {

// Reads a batch's ranges from the shard logs in chunks. Records that retention removed
// before they could be delivered are skipped with a warning (they cannot be delivered
// by anyone); everything else comes out exactly once, in order.
class LogRecordSource final : public RecordSource {
 public:
  LogRecordSource(const ChannelConfig& config, const DeliveryBatch& batch,
                  const std::map<uint32_t, std::shared_ptr<log::ShardLog>>& logs, const RunnerOptions& options)
      : config_(config), batch_(batch), logs_(logs), options_(options) {
    if (!batch_.ranges.empty()) next_ = batch_.ranges[0].first;
  }

  Result<bool> Next(RecordChunk* chunk) override {
    std::lock_guard lock(mu_);
    while (index_ < batch_.ranges.size()) {
      const ShardRange& r = batch_.ranges[index_];
      if (next_ >= r.end) {
        if (++index_ < batch_.ranges.size()) next_ = batch_.ranges[index_].first;
        continue;
      }
      auto it = logs_.find(r.shard);
      if (it == logs_.end()) return Internal(fmt::format("no log for shard {}", r.shard));
      ASSIGN_OR_RETURN(log::ReadResult read,
                       it->second->Read(next_, options_.read_chunk_records, options_.read_chunk_bytes, r.end));
      if (read.records.empty()) {
        spdlog::warn("channel {}: records [{}, {}) of shard {} are gone (retention) and cannot be delivered",
                     config_.name, next_, r.end, r.shard);
        next_ = r.end;
        continue;
      }
      if (read.records.front().offset != next_) {
        spdlog::warn("channel {}: records [{}, {}) of shard {} are gone (retention) and cannot be delivered",
                     config_.name, next_, read.records.front().offset, r.shard);
      }
      next_ = read.next_offset;
      chunk->range = index_;
      chunk->storage = std::move(read.records);
      chunk->records.clear();
      for (const auto& rec : chunk->storage) {
        KplAggregate agg = Deaggregate(rec.data);
        switch (agg.kind) {
          case KplAggregate::Kind::kPlain:
            chunk->records.push_back({rec.offset, rec.arrival_ms, std::nullopt, rec.partition_key, rec.data, {}});
            break;
          case KplAggregate::Kind::kAggregate:
            for (size_t i = 0; i < agg.records.size(); ++i) {
              chunk->records.push_back({rec.offset, rec.arrival_ms, static_cast<uint32_t>(i),
                                        agg.records[i].partition_key, agg.records[i].data, {}});
            }
            break;
          case KplAggregate::Kind::kCorrupt:
            chunk->records.push_back({rec.offset, rec.arrival_ms, std::nullopt, rec.partition_key, rec.data,
                                      std::move(agg.error)});
            break;
        }
      }
      return true;
    }
    return false;
  }

  Status Rewind() override {
    std::lock_guard lock(mu_);
    index_ = 0;
    next_ = batch_.ranges.empty() ? 0 : batch_.ranges[0].first;
    return Status::OK();
  }

 private:
  const ChannelConfig& config_;
  const DeliveryBatch& batch_;
  const std::map<uint32_t, std::shared_ptr<log::ShardLog>>& logs_;
  const RunnerOptions& options_;
  std::mutex mu_;
  size_t index_ = 0;
  uint64_t next_ = 0;
};

}  // namespace

ShardRunner::ShardRunner(ChannelConfig config, stream::StreamManager* streams, ChannelStore* store,
                         const Clock* clock, RunnerOptions options)
    : config_(std::move(config)), streams_(streams), store_(store), clock_(clock), options_(options) {}

ShardRunner::~ShardRunner() { Stop(); }

Result<std::unique_ptr<ShardRunner>> ShardRunner::Make(const ChannelConfig& config, Destination* destination,
                                                       stream::StreamManager* streams, ChannelStore* store,
                                                       const Clock* clock, RunnerOptions options, SinkEnv env) {
  std::unique_ptr<ShardRunner> r(new ShardRunner(config, streams, store, clock, options));
  ShardRunner* raw = r.get();
  std::string id = config.id;
  env.clock = clock;
  env.stopping = [raw] { return raw->stopping(); };
  env.log_event = [raw](nlohmann::json e) { raw->LogEvent(std::move(e)); };
  env.load_state = [store, id] { return store->LoadSinkState(id); };
  env.save_state = [store, id](const nlohmann::json& doc) { return store->SaveSinkState(id, doc); };
  ASSIGN_OR_RETURN(r->sink_, destination->MakeSink(config, std::move(env)));
  return r;
}

Status ShardRunner::Load() {
  ASSIGN_OR_RETURN(auto cps, store_->Checkpoints(config_.id));
  ASSIGN_OR_RETURN(auto plans, store_->Plans(config_.id));
  std::lock_guard lock(mu_);
  for (const auto& [k, off] : cps) {
    if (k.stream_uid != config_.stream_uid) continue;
    shards_[k.shard].checkpoint = off;
    shards_[k.shard].known = true;
  }
  for (const auto& [k, plan] : plans) {
    if (k.stream_uid == config_.stream_uid) plans_[k.shard] = plan;
  }
  // The destination's own record of what it holds is read before the first batch.
  recovered_ = false;
  return Status::OK();
}

Result<std::map<ShardKey, uint64_t>> ShardRunner::PrepareActivation(const StartingPosition& start) {
  RETURN_IF_ERROR(sink_->Check());
  ASSIGN_OR_RETURN(auto held, sink_->Checkpoints());
  ASSIGN_OR_RETURN(auto info, streams_->Describe(config_.stream_name));
  if (info.uid != config_.stream_uid) return NotFound("The source stream no longer exists.");
  std::map<ShardKey, uint64_t> cps;
  for (const auto& s : info.shards) {
    auto log = streams_->ShardLogFor(config_.stream_uid, s.index);
    if (!log.ok()) continue;
    uint64_t end = s.end_offset ? std::min(*s.end_offset, (*log)->committed_end()) : (*log)->committed_end();
    uint64_t at = end;
    if (start.type == "TRIM_HORIZON") {
      at = (*log)->start_offset();
    } else if (start.type == "AT_TIMESTAMP") {
      auto o = (*log)->OffsetAtTime(start.timestamp_ms);
      at = o.ok() ? std::min(*o, end) : end;
    }
    auto h = held.find(s.index);
    if (h != held.end()) at = std::max(at, h->second);
    cps[{config_.stream_uid, s.index}] = at;
  }
  return cps;
}

void ShardRunner::Activated(const std::map<ShardKey, uint64_t>& checkpoints) {
  std::lock_guard lock(mu_);
  for (const auto& [k, off] : checkpoints) {
    auto& s = shards_[k.shard];
    s.checkpoint = off;
    s.known = true;
    s.first_pending_ms = -1;
  }
  recovered_ = true;
}

void ShardRunner::SetFatal(const std::string& reason) {
  if (!fatal_) fatal_ = reason.substr(0, 2048);
  stopping_ = true;
}

void ShardRunner::Stop() { stopping_ = true; }

int ShardRunner::in_flight() const {
  std::lock_guard lock(mu_);
  return in_flight_;
}

std::optional<std::string> ShardRunner::fatal() const {
  std::lock_guard lock(mu_);
  return fatal_;
}

std::string ShardRunner::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

void ShardRunner::SetLog(std::shared_ptr<DeliveryLog> log) {
  std::lock_guard lock(mu_);
  log_ = std::move(log);
}

void ShardRunner::LogEvent(nlohmann::json event) {
  std::shared_ptr<DeliveryLog> log;
  {
    std::lock_guard lock(mu_);
    log = log_;
  }
  if (!log) return;
  if (!event.contains("channelARN")) event["channelARN"] = config_.arn;
  log->Write(std::move(event), clock_->NowMillis());
}

int64_t ShardRunner::Backoff(int failures) const {
  return std::min<int64_t>(options_.max_retry_delay_ms, 500LL << std::min(failures, 6));
}

uint64_t ShardRunner::RetentionFloor(uint32_t shard) const {
  std::lock_guard lock(mu_);
  if (done_.count(shard)) return UINT64_MAX;
  auto it = shards_.find(shard);
  // A shard the channel has not reached yet is needed from its beginning.
  uint64_t need = it == shards_.end() ? 0 : it->second.checkpoint;
  auto p = plans_.find(shard);
  if (p != plans_.end()) need = std::min(need, p->second.first_offset);
  return need;
}

uint64_t ShardRunner::BatchEnd(const log::ShardLog& log, uint64_t first, uint64_t end, uint64_t bytes,
                               size_t records) const {
  uint64_t hi = std::min<uint64_t>(end, first + std::max<size_t>(1, records));
  if (log.ApproximateBytes(first, hi) <= bytes) return hi;
  // The largest end within the byte budget (at least one record).
  uint64_t lo = first + 1;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo + 1) / 2;
    if (log.ApproximateBytes(first, mid) <= bytes) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

std::vector<ShardRunner::Job> ShardRunner::Schedule(const stream::StreamInfo& info, int64_t now,
                                                    int64_t freshness_ms) {
  std::vector<Job> jobs;
  if (stopping_) return jobs;
  // Shard logs are looked up before taking mu_ (lock order: stream manager locks are never
  // taken while a runner lock is held).
  std::map<uint32_t, std::shared_ptr<log::ShardLog>> logs;
  for (const auto& s : info.shards) {
    auto log = streams_->ShardLogFor(config_.stream_uid, s.index);
    if (log.ok()) logs[s.index] = *log;
  }
  std::lock_guard lock(mu_);
  if (fatal_) return jobs;
  if (!recovered_) {
    if (!recovering_ && now >= recover_after_ms_) {
      recovering_ = true;
      ++in_flight_;
      jobs.push_back(RecoverJob());
    }
    return jobs;
  }
  const bool spanning = sink_->spans_shards();
  // Flush a little before the oldest record reaches the freshness interval, so that it is
  // visible within it.
  const int64_t lead = std::min<int64_t>(500, freshness_ms / 10);
  int64_t oldest_pending = -1;
  struct Pending {
    uint32_t shard;
    uint64_t first;
    uint64_t end;
    bool ripe;
    uint64_t bytes;  // approximate, of [first, end)
  };
  std::vector<Pending> pending;
  bool any_in_flight = in_flight_ > 0;
  for (const auto& s : info.shards) {
    if (done_.count(s.index)) continue;
    auto lit = logs.find(s.index);
    if (lit == logs.end()) continue;
    const auto& log = lit->second;
    auto& st = shards_[s.index];
    uint64_t end = log->committed_end();
    if (s.end_offset) end = std::min(end, *s.end_offset);
    if (st.checkpoint < log->start_offset() && !st.in_flight && !plans_.count(s.index)) {
      // Records expired before delivery (retention was forced past the channel).
      spdlog::warn("channel {}: {} records of shard {} expired before delivery", config_.name,
                   log->start_offset() - st.checkpoint, s.index);
      st.checkpoint = log->start_offset();
      st.first_pending_ms = -1;
    }
    if (st.checkpoint >= end && !plans_.count(s.index)) {
      if (s.end_offset && !st.in_flight && st.checkpoint >= *s.end_offset) done_[s.index] = true;
      continue;
    }
    if (st.first_pending_ms < 0) {
      auto a = log->ArrivalOf(st.checkpoint);
      if (a.ok()) st.first_pending_ms = *a;
    }
    if (st.first_pending_ms >= 0 && (oldest_pending < 0 || st.first_pending_ms < oldest_pending)) {
      oldest_pending = st.first_pending_ms;
    }
    // Parents first: a child waits until every parent is delivered to its end.
    bool parents_done = true;
    for (auto p : {s.parent, s.adjacent_parent}) {
      if (p && info.FindShard(*p) && !done_.count(*p)) parents_done = false;
    }
    if (!parents_done || st.in_flight) continue;
    const uint64_t bytes = log->ApproximateBytes(st.checkpoint, end);
    bool ripe = (st.first_pending_ms >= 0 && now >= st.first_pending_ms + freshness_ms - lead) ||
                end - st.checkpoint >= (spanning ? options_.max_spanning_batch_records : options_.max_batch_records) ||
                bytes >= (spanning ? options_.max_spanning_batch_bytes : options_.max_batch_bytes);
    pending.push_back({s.index, st.checkpoint, end, ripe, bytes});
  }
  metrics_.data_freshness_ms.store(oldest_pending < 0 ? 0 : std::max<int64_t>(0, now - oldest_pending));

  // A plan must start where its shard's checkpoint is: anything else would skip records
  // (or deliver some twice).
  for (const auto& [shard, plan] : plans_) {
    auto it = shards_.find(shard);
    uint64_t cp = it == shards_.end() ? 0 : it->second.checkpoint;
    if (plan.first_offset != cp || plan.end_offset < plan.first_offset) {
      SetFatal(fmt::format(
          "The persisted delivery plan of shard {} covers offsets [{}, {}) but the shard's checkpoint is {}; "
          "delivering it would skip or repeat records.",
          stream::ShardIdString(shard), plan.first_offset, plan.end_offset, cp));
      spdlog::error("channel {}: {}", config_.name, *fatal_);
      return jobs;
    }
  }

  auto launch = [&](std::vector<ShardRange> ranges, int64_t attempt_ms, bool replay) {
    DeliveryBatch batch{std::move(ranges), attempt_ms, replay};
    std::map<uint32_t, std::shared_ptr<log::ShardLog>> batch_logs;
    for (const auto& r : batch.ranges) {
      shards_[r.shard].in_flight = true;
      batch_logs[r.shard] = logs[r.shard];
    }
    ++in_flight_;
    jobs.push_back(BatchJob(std::move(batch), std::move(batch_logs)));
  };

  if (spanning) {
    if (any_in_flight || now < spanning_retry_after_ms_) return jobs;
    if (!plans_.empty()) {
      // Replay the planned batch as it was.
      std::vector<ShardRange> ranges;
      int64_t attempt_ms = 0;
      for (const auto& [shard, plan] : plans_) {
        if (!logs.count(shard)) return jobs;  // the log is not open (yet)
        ranges.push_back({shard, plan.first_offset, plan.end_offset});
        attempt_ms = std::max(attempt_ms, plan.attempt_ms);
      }
      launch(std::move(ranges), attempt_ms, true);
      return jobs;
    }
    // Ripe when one shard is, or when the shards together fill a batch: a backlog spread
    // over many shards is delivered in full batches back to back, not at the freshness
    // deadline of each.
    uint64_t total_bytes = 0, total_records = 0;
    for (const auto& p : pending) {
      total_bytes += p.bytes;
      total_records += p.end - p.first;
    }
    bool ripe = std::any_of(pending.begin(), pending.end(), [](const Pending& p) { return p.ripe; }) ||
                total_bytes >= options_.max_spanning_batch_bytes ||
                total_records >= options_.max_spanning_batch_records;
    if (!ripe || pending.empty()) return jobs;
    const uint64_t share_bytes = std::max<uint64_t>(1 << 20, options_.max_spanning_batch_bytes / pending.size());
    const size_t share_records = std::max<size_t>(1000, options_.max_spanning_batch_records / pending.size());
    std::vector<ShardRange> ranges;
    std::map<ShardKey, BatchPlan> plans;
    const int64_t attempt_ms = clock_->NowMillis();
    for (const auto& p : pending) {
      uint64_t e = BatchEnd(*logs[p.shard], p.first, p.end, share_bytes, share_records);
      ranges.push_back({p.shard, p.first, e});
      plans[{config_.stream_uid, p.shard}] = {p.first, e, attempt_ms};
    }
    if (Status st = store_->SavePlans(config_.id, plans); !st.ok()) {
      spdlog::warn("channel {}: saving a delivery plan: {}", config_.name, st.ToString());
      return jobs;
    }
    for (const auto& [k, plan] : plans) plans_[k.shard] = plan;
    launch(std::move(ranges), attempt_ms, false);
    return jobs;
  }

  for (const auto& p : pending) {
    auto& st = shards_[p.shard];
    if (now < st.retry_after_ms) continue;
    auto planned = plans_.find(p.shard);
    if (planned != plans_.end()) {
      launch({{p.shard, planned->second.first_offset, planned->second.end_offset}}, planned->second.attempt_ms, true);
      continue;
    }
    if (!p.ripe) continue;
    uint64_t e = BatchEnd(*logs[p.shard], p.first, p.end, options_.max_batch_bytes, options_.max_batch_records);
    BatchPlan plan{p.first, e, clock_->NowMillis()};
    if (Status s = store_->SavePlan(config_.id, {config_.stream_uid, p.shard}, plan); !s.ok()) {
      spdlog::warn("channel {}: saving a delivery plan: {}", config_.name, s.ToString());
      continue;
    }
    plans_[p.shard] = plan;
    launch({{p.shard, p.first, e}}, plan.attempt_ms, false);
  }
  return jobs;
}

ShardRunner::Job ShardRunner::RecoverJob() {
  return [this] {
    Recover();
    std::lock_guard lock(mu_);
    recovering_ = false;
    --in_flight_;
  };
}

void ShardRunner::Recover() {
  Status check = sink_->Check();
  auto held = check.ok() ? sink_->Checkpoints() : Result<std::map<uint32_t, uint64_t>>(check);
  std::lock_guard lock(mu_);
  if (!held.ok()) {
    const Status& st = held.status();
    if (IsPermanent(st)) {
      SetFatal(st.message());
      return;
    }
    last_error_ = st.message();
    recover_after_ms_ = clock_->NowMillis() + Backoff(++recover_failures_);
    spdlog::warn("channel {}: reading what the destination holds: {} (retrying)", config_.name, st.ToString());
    return;
  }
  // The destination is ahead of meta.db when the server stopped between a commit and the
  // checkpoint update; a plan it already holds is done.
  std::map<ShardKey, uint64_t> moved;
  for (const auto& [shard, next] : *held) {
    auto& s = shards_[shard];
    if (s.known && next <= s.checkpoint) continue;
    auto plan = plans_.find(shard);
    if (plan != plans_.end() && next > plan->second.first_offset && next < plan->second.end_offset) {
      SetFatal(fmt::format("The destination holds shard {} up to offset {}, inside the planned batch [{}, {}).",
                           stream::ShardIdString(shard), next, plan->second.first_offset, plan->second.end_offset));
      return;
    }
    s.checkpoint = next;
    s.known = true;
    s.first_pending_ms = -1;
    moved[{config_.stream_uid, shard}] = next;
  }
  if (!moved.empty()) {
    if (Status st = store_->Commit(config_.id, moved); !st.ok()) {
      last_error_ = st.message();
      recover_after_ms_ = clock_->NowMillis() + Backoff(++recover_failures_);
      return;
    }
    for (const auto& [k, next] : moved) {
      auto plan = plans_.find(k.shard);
      if (plan != plans_.end()) plans_.erase(plan);  // Commit() dropped its row
    }
    spdlog::info("channel {}: resumed {} shard(s) from the destination's checkpoints", config_.name, moved.size());
  }
  recover_failures_ = 0;
  last_error_.clear();
  recovered_ = true;
}

ShardRunner::Job ShardRunner::BatchJob(DeliveryBatch batch, std::map<uint32_t, std::shared_ptr<log::ShardLog>> logs) {
  return [this, batch = std::move(batch), logs = std::move(logs)] { RunBatch(batch, logs); };
}

void ShardRunner::RunBatch(const DeliveryBatch& batch,
                           const std::map<uint32_t, std::shared_ptr<log::ShardLog>>& logs) {
  LogRecordSource source(config_, batch, logs, options_);
  auto result = sink_->Deliver(batch, &source);
  std::map<ShardKey, uint64_t> next;
  for (const auto& r : batch.ranges) next[{config_.stream_uid, r.shard}] = r.end;
  Status st = result.ok() ? store_->Commit(config_.id, next) : result.status();

  std::lock_guard lock(mu_);
  --in_flight_;
  for (const auto& r : batch.ranges) shards_[r.shard].in_flight = false;
  if (st.ok()) {
    metrics_.Add(*result);
    if (spdlog::should_log(spdlog::level::debug)) {
      std::string ranges;
      for (const auto& r : batch.ranges) {
        ranges += fmt::format("{}{} [{}, {})", ranges.empty() ? "" : ", ", stream::ShardIdString(r.shard),
                              r.first, r.end);
      }
      spdlog::debug("channel {}: delivered {} record(s) ({} bytes in, {} bytes out, {} to the DLQ) of {}",
                    config_.name, result->records_in, result->bytes_in, result->bytes_out, result->failed, ranges);
    }
    for (const auto& r : batch.ranges) {
      auto& s = shards_[r.shard];
      s.checkpoint = r.end;
      s.known = true;
      s.first_pending_ms = -1;
      s.failures = 0;
      s.retry_after_ms = 0;
      plans_.erase(r.shard);
    }
    spanning_failures_ = 0;
    spanning_retry_after_ms_ = 0;
    last_error_.clear();
    return;
  }
  if (st.code() == StatusCode::kShuttingDown || stopping_) return;  // replayed after a restart
  if (IsPermanent(st)) {
    SetFatal(st.message());
    return;
  }
  last_error_ = st.message();
  int64_t now = clock_->NowMillis();
  if (sink_->spans_shards()) {
    spanning_retry_after_ms_ = now + Backoff(++spanning_failures_);
  } else {
    for (const auto& r : batch.ranges) {
      auto& s = shards_[r.shard];
      s.retry_after_ms = now + Backoff(++s.failures);
    }
  }
  spdlog::warn("channel {}: delivery failed: {} (will retry)", config_.name, st.ToString());
}

nlohmann::json ShardRunner::StatusJson(const stream::StreamInfo* info, int64_t now) const {
  nlohmann::json shards = nlohmann::json::array();
  std::map<uint32_t, std::shared_ptr<log::ShardLog>> logs;
  if (info) {
    for (const auto& s : info->shards) {
      auto log = streams_->ShardLogFor(config_.stream_uid, s.index);
      if (log.ok()) logs[s.index] = *log;
    }
  }
  nlohmann::json out;
  {
    std::lock_guard lock(mu_);
    if (info) {
      for (const auto& s : info->shards) {
        nlohmann::json j = {{"ShardId", stream::ShardIdString(s.index)}};
        auto it = shards_.find(s.index);
        uint64_t cp = it == shards_.end() ? 0 : it->second.checkpoint;
        if (cp > 0) {
          j["LastCommittedSequenceNumber"] =
              stream::SequenceNumber::ForRecord(config_.stream_uid, s.index, cp - 1).ToString();
        }
        uint64_t end = 0;
        auto lit = logs.find(s.index);
        if (lit != logs.end()) {
          end = lit->second->committed_end();
          if (s.end_offset) end = std::min(end, *s.end_offset);
        }
        j["LagRecords"] = end > cp ? end - cp : 0;
        double lag_s = 0;
        if (end > cp && it != shards_.end() && it->second.first_pending_ms >= 0) {
          lag_s = std::max<int64_t>(0, now - it->second.first_pending_ms) / 1000.0;
        }
        j["LagSeconds"] = lag_s;
        j["Delivered"] = done_.count(s.index) > 0;
        shards.push_back(std::move(j));
      }
    }
    out["Shards"] = std::move(shards);
    out["DLQRecordCount"] = metrics_.dlq_delivery_success.load();
    out["DeliveredRecordCount"] = metrics_.successful_record_count.load();
    if (!last_error_.empty()) out["LastError"] = last_error_;
  }
  nlohmann::json sink_status = sink_->StatusJson();
  for (const auto& [k, v] : sink_status.items()) out[k] = v;
  return out;
}

}  // namespace icestream::delivery
