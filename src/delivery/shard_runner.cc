// The shard runner: due checks, plans, source reads, checkpoints, backoff, recovery.
#include "delivery/shard_runner.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/crypto.h"
#include "delivery/kpl.h"
#include "delivery/retry.h"

namespace icestream::delivery {

struct ShardRunner::ShardState {
  Position checkpoint;  // the last delivered record
  bool known = false;   // a checkpoint exists (activation or a delivered batch)
  bool in_flight = false;
  int64_t retry_after_ms = 0;
  int failures = 0;
  int64_t grace_since_ms = 0;  // first grace-kind failure of the shard's batch
  // From the last Schedule (for the status): what is pending after the checkpoint.
  uint64_t lag_records = 0;
  int64_t oldest_pending_ms = -1;
};

namespace {

// A batch's records, range after range, read through the source's RangeReaders with KPL
// aggregates unpacked. Records that retention removed before they could be delivered are
// skipped by the readers (with a warning); everything else comes out exactly once, in
// order.
class BatchRecordSource final : public RecordSource {
 public:
  BatchRecordSource(ShardSource* source, const DeliveryBatch& batch, const RunnerOptions& options)
      : source_(source), batch_(batch), options_(options) {}

  Result<bool> Next(RecordChunk* chunk) override {
    std::lock_guard lock(mu_);
    while (index_ < batch_.ranges.size()) {
      const ShardRange& r = batch_.ranges[index_];
      if (!reader_) {
        ASSIGN_OR_RETURN(
            reader_, source_->OpenRange(r.shard, r.after, r.last_sequence,
                                        options_.read_chunk_bytes, options_.read_chunk_records));
        first_of_range_ = true;
      }
      StreamChunk& raw = raw_;  // its records' capacity serves every chunk of the batch
      raw.records.clear();
      raw.storage.reset();
      raw.padding = 0;
      ASSIGN_OR_RETURN(bool more, reader_->Next(&raw));
      if (!more) {
        reader_.reset();
        ++index_;
        continue;
      }
      chunk->range = index_;
      chunk->records.clear();
      chunk->records.reserve(raw.records.size());
      for (const auto& rec : raw.records) {
        // A range that starts inside an aggregate begins with that aggregate: its user
        // records up to the position's sub-sequence are delivered already.
        std::optional<uint32_t> skip_through;
        if (first_of_range_ && r.after.sub_sequence &&
            rec.sequence_number == std::string_view(r.after.sequence)) {
          skip_through = r.after.sub_sequence;
        }
        first_of_range_ = false;
        KplAggregate agg = Deaggregate(rec.data);
        switch (agg.kind) {
          case KplAggregate::Kind::kPlain:
            if (!skip_through) {
              chunk->records.push_back({rec.sequence_number,
                                        rec.ordinal,
                                        rec.arrival_ms,
                                        std::nullopt,
                                        rec.partition_key,
                                        rec.data,
                                        {}});
            }
            break;
          case KplAggregate::Kind::kAggregate:
            for (size_t i = 0; i < agg.records.size(); ++i) {
              if (skip_through && i <= *skip_through) continue;
              chunk->records.push_back({rec.sequence_number,
                                        rec.ordinal,
                                        rec.arrival_ms,
                                        static_cast<uint32_t>(i),
                                        agg.records[i].partition_key,
                                        agg.records[i].data,
                                        {}});
            }
            break;
          case KplAggregate::Kind::kCorrupt:
            if (!skip_through) {
              chunk->records.push_back({rec.sequence_number, rec.ordinal, rec.arrival_ms,
                                        std::nullopt, rec.partition_key, rec.data,
                                        std::move(agg.error)});
            }
            break;
        }
      }
      chunk->storage = std::move(raw.storage);
      chunk->padding = raw.padding;
      return true;
    }
    return false;
  }

  Status Rewind() override {
    std::lock_guard lock(mu_);
    index_ = 0;
    reader_.reset();
    return Status::OK();
  }

 private:
  ShardSource* source_;
  const DeliveryBatch& batch_;
  const RunnerOptions& options_;
  std::mutex mu_;
  size_t index_ = 0;
  std::unique_ptr<RangeReader> reader_;
  bool first_of_range_ = true;
  StreamChunk raw_;
};

// A redrive batch's records: each entry's record read again from the source by shard and
// sequence number (the user record at its sub-sequence number out of a KPL aggregate), or
// the DLQ line's own copy where the source no longer holds it. Entries of which neither
// is left are Missing(). Chunks hold the entries of one shard (one range) each.
class RedriveRecordSource final : public RecordSource {
 public:
  RedriveRecordSource(ShardSource* source, std::shared_ptr<const RedriveSpan> span,
                      std::vector<size_t> range_of)
      : source_(source), span_(std::move(span)), range_of_(std::move(range_of)) {}

  Result<bool> Next(RecordChunk* chunk) override {
    std::lock_guard lock(mu_);
    const auto& entries = span_->entries;
    if (pos_ >= entries.size()) return false;
    struct Storage {
      std::shared_ptr<const RedriveSpan> span;
      std::vector<std::shared_ptr<const void>> reads;
      std::vector<std::string> sequences;  // of the records read (their views' storage)
    };
    auto storage = std::make_shared<Storage>();
    storage->span = span_;
    chunk->range = range_of_[pos_];
    chunk->records.clear();
    const size_t range = range_of_[pos_];
    size_t taken = 0;
    while (pos_ < entries.size() && range_of_[pos_] == range && taken < kChunkEntries) {
      const RedriveEntry& e = entries[pos_];
      const uint64_t index = span_->from + pos_;
      ++pos_;
      ++taken;
      auto read = source_->ReadRecord(e.shard_id, e.sequence_number);
      if (!read.ok() && read.status().code() != StatusCode::kNotFound &&
          read.status().code() != StatusCode::kUnimplemented) {
        return read.status().WithContext(
            fmt::format("reading record {} of {} again", e.sequence_number, e.shard_id));
      }
      if (!read.ok() || read->records.size() != 1) {
        if (!e.data) {
          missing_.insert(index);
          continue;
        }
        // The DLQ line's copy (IncludeRecordData): the user record itself.
        chunk->records.push_back(
            {e.sequence_number, 0, e.arrival_ms, e.sub_sequence, e.partition_key, *e.data, {}});
        continue;
      }
      const StreamRecord& rec = read->records[0];
      storage->reads.push_back(read->storage);
      KplAggregate agg = Deaggregate(rec.data);
      switch (agg.kind) {
        case KplAggregate::Kind::kPlain:
          if (e.sub_sequence) {
            missing_.insert(index);  // the line names a user record this record cannot hold
          } else {
            chunk->records.push_back({rec.sequence_number,
                                      rec.ordinal,
                                      rec.arrival_ms,
                                      std::nullopt,
                                      rec.partition_key,
                                      rec.data,
                                      {}});
          }
          break;
        case KplAggregate::Kind::kAggregate:
          if (!e.sub_sequence) {
            // A line for a whole aggregate (it did not decode then): every user record.
            for (size_t i = 0; i < agg.records.size(); ++i) {
              chunk->records.push_back({rec.sequence_number,
                                        rec.ordinal,
                                        rec.arrival_ms,
                                        static_cast<uint32_t>(i),
                                        agg.records[i].partition_key,
                                        agg.records[i].data,
                                        {}});
            }
          } else if (*e.sub_sequence < agg.records.size()) {
            const KplUserRecord& u = agg.records[*e.sub_sequence];
            chunk->records.push_back({rec.sequence_number,
                                      rec.ordinal,
                                      rec.arrival_ms,
                                      e.sub_sequence,
                                      u.partition_key,
                                      u.data,
                                      {}});
          } else {
            missing_.insert(index);
          }
          break;
        case KplAggregate::Kind::kCorrupt:
          if (e.sub_sequence) {
            missing_.insert(index);
          } else {
            chunk->records.push_back({rec.sequence_number, rec.ordinal, rec.arrival_ms,
                                      std::nullopt, rec.partition_key, rec.data,
                                      std::move(agg.error)});
          }
          break;
      }
    }
    chunk->storage = std::move(storage);
    return true;
  }

  Status Rewind() override {
    std::lock_guard lock(mu_);
    pos_ = 0;
    missing_.clear();
    return Status::OK();
  }

  std::set<uint64_t> Missing() const override {
    std::lock_guard lock(mu_);
    return missing_;
  }

 private:
  static constexpr size_t kChunkEntries = 1000;
  ShardSource* source_;
  std::shared_ptr<const RedriveSpan> span_;
  std::vector<size_t> range_of_;  // entry → its range in the batch
  mutable std::mutex mu_;
  size_t pos_ = 0;
  std::set<uint64_t> missing_;
};

std::string RangesText(const DeliveryBatch& batch) {
  std::string out;
  for (const auto& r : batch.ranges) {
    out += fmt::format("{}{} ({} record(s) {} to {})", out.empty() ? "" : ", ", r.shard, r.records,
                       PositionText(r.after), r.last_sequence);
  }
  return out;
}

}  // namespace

ShardRunner::ShardRunner(ChannelConfig config, std::shared_ptr<ShardSource> source,
                         DeliveryStore* store, const Clock* clock, RunnerOptions options)
    : config_(std::move(config)),
      source_(std::move(source)),
      store_(store),
      clock_(clock),
      options_(options),
      rng_state_(crypto::RandomU64() | 1) {}

ShardRunner::~ShardRunner() { Stop(); }

Result<std::unique_ptr<ShardRunner>> ShardRunner::Make(const ChannelConfig& config,
                                                       Destination* destination,
                                                       std::shared_ptr<ShardSource> source,
                                                       DeliveryStore* store, const Clock* clock,
                                                       RunnerOptions options, SinkEnv env) {
  std::unique_ptr<ShardRunner> r(new ShardRunner(config, std::move(source), store, clock, options));
  ShardRunner* raw = r.get();
  std::string id = config.id;
  env.clock = clock;
  r->buckets_ = env.buckets;
  r->local_buckets_ = env.local_buckets;
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
  ASSIGN_OR_RETURN(auto finished, store_->FinishedShards(config_.id));
  {
    std::lock_guard lock(mu_);
    for (const auto& [shard, p] : cps) {
      shards_[shard].checkpoint = p;
      shards_[shard].known = true;
    }
    plans_ = std::move(plans);
    finished_ = std::move(finished);
    // The destination's own record of what it holds is read before the first batch.
    recovered_ = false;
  }
  return LoadRedrives();  // takes mu_ itself
}

Status ShardRunner::LoadRedrives() {
  ASSIGN_OR_RETURN(auto docs, store_->LoadRedrives(config_.id));
  std::vector<RedriveState> all;
  for (const auto& d : docs) {
    ASSIGN_OR_RETURN(RedriveState r, RedriveStateFromJson(d));
    all.push_back(std::move(r));
  }
  std::lock_guard lock(mu_);
  redrives_ = std::move(all);
  return Status::OK();
}

Result<std::map<std::string, Position>> ShardRunner::PrepareActivation(
    const StartingPosition& start) {
  RETURN_IF_ERROR(sink_->Check());
  ASSIGN_OR_RETURN(auto held, sink_->Checkpoints());
  auto from_source = [](const Status& st) { return WithSubcode(st, RunnerError::kSource); };
  auto shards = source_->Shards();
  if (!shards.ok()) return from_source(shards.status());
  std::map<std::string, Position> cps;
  for (const auto& s : *shards) {
    auto at_or = source_->StartPosition(s.id, start);
    if (!at_or.ok()) return from_source(at_or.status());
    Position at = *at_or;
    auto h = held.find(s.id);
    if (h != held.end() && at < h->second) at = h->second;
    cps[s.id] = at;
  }
  return cps;
}

void ShardRunner::Activated(const std::map<std::string, Position>& checkpoints) {
  std::lock_guard lock(mu_);
  for (const auto& [shard, p] : checkpoints) {
    auto& s = shards_[shard];
    s.checkpoint = p;
    s.known = true;
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
  std::lock_guard lock(log_mu_);
  log_ = std::move(log);
}

// May be called with mu_ held: it takes only log_mu_.
void ShardRunner::LogEvent(nlohmann::json event) {
  std::shared_ptr<DeliveryLog> log;
  {
    std::lock_guard lock(log_mu_);
    log = log_;
  }
  if (!log) return;
  if (!event.contains("channelARN")) event["channelARN"] = config_.arn;
  log->Write(std::move(event), clock_->NowMillis());
}

int64_t ShardRunner::Backoff(int failures) {
  // xorshift: jitter spreads the retries of channels that failed together.
  rng_state_ ^= rng_state_ << 13;
  rng_state_ ^= rng_state_ >> 7;
  rng_state_ ^= rng_state_ << 17;
  return RetryDelayMs(failures, options_.min_retry_delay_ms, options_.max_retry_delay_ms,
                      rng_state_);
}

void ShardRunner::NoteFailure(const Status& st, int attempts) {
  int64_t now = clock_->NowMillis();
  last_error_ = st.message();
  last_error_ms_ = now;
  last_error_attempts_ = attempts;
  metrics_.retryable_failures.fetch_add(1);
  ++stretch_failures_;
  const bool first = metrics_.failing_since_ms.load() == 0;
  if (first) metrics_.failing_since_ms.store(now);
  // One warning per channel per interval (the first failure of a stretch at once): a
  // destination that is down for an hour must not fill the log, but it must be said.
  if (first || last_warning_ms_ < 0 || now - last_warning_ms_ >= options_.warning_interval_ms) {
    last_warning_ms_ = now;
    std::string grace;
    if (ClassifyFailure(st) == FailureKind::kGrace) {
      grace = fmt::format("; the channel goes FAILED if this lasts {} s",
                          options_.destination_grace_ms / 1000);
    }
    spdlog::warn(
        "channel {}: delivery failed ({} attempt(s) failed since {} s ago): {} (retrying{})",
        config_.name, stretch_failures_, (now - metrics_.failing_since_ms.load()) / 1000,
        st.ToString(), grace);
  }
}

std::string ShardRunner::UnitOf(const std::string& shard) const {
  return sink_->spans_shards() ? std::string(kChannelUnit) : ShardUnit(shard);
}

std::string ShardRunner::ControlUnit() const {
  return sink_->spans_shards() ? kChannelUnit : kControlUnit;
}

std::set<std::string> ShardRunner::HeldShards(const std::vector<SourceShard>& shards) {
  std::set<std::string> held;
  if (coordinator_ == nullptr) {
    for (const auto& s : shards) held.insert(s.id);
    std::lock_guard lock(mu_);
    control_held_ = true;
    return held;
  }
  std::vector<std::string> units = {ControlUnit()};
  for (const auto& s : shards) {
    std::string u = UnitOf(s.id);
    if (u != units.front() && std::find(units.begin(), units.end(), u) == units.end())
      units.push_back(u);
  }
  coordinator_->Offer(config_.id, units);
  std::set<std::string> taken, lost;
  std::map<std::string, uint64_t> epochs;
  for (const auto& u : units) epochs[u] = coordinator_->HeldEpoch(config_.id, u);
  {
    std::lock_guard lock(mu_);
    for (const auto& [u, e] : epochs) {
      uint64_t& seen = unit_epochs_[u];
      if (e != seen) (e == 0 ? lost : taken).insert(u);
      seen = e;
    }
  }
  bool reload = !taken.empty();
  std::map<std::string, Position> cps;
  std::map<std::string, BatchPlan> plans;
  std::set<std::string> finished;
  // The redrives run where the control unit is held: taking it reads them again (another
  // process may have started or moved one).
  if (taken.count(ControlUnit()) && !LoadRedrives().ok()) {
    std::lock_guard lock(mu_);
    unit_epochs_[ControlUnit()] = 0;
    taken.erase(ControlUnit());
  }
  if (reload) {
    auto c = store_->Checkpoints(config_.id);
    auto p = store_->Plans(config_.id);
    auto f = store_->FinishedShards(config_.id);
    if (!c.ok() || !p.ok() || !f.ok()) {
      // Cannot read the state yet: take the units again next pass.
      std::lock_guard lock(mu_);
      for (const auto& u : taken) unit_epochs_[u] = 0;
      taken.clear();
    } else {
      cps = std::move(*c);
      plans = std::move(*p);
      finished = std::move(*f);
    }
  }
  std::lock_guard lock(mu_);
  for (const auto& s : shards) {
    std::string u = UnitOf(s.id);
    if (taken.count(u)) {
      auto& st = shards_[s.id];
      auto cp = cps.find(s.id);
      st.checkpoint = cp == cps.end() ? Position{} : cp->second;
      st.known = cp != cps.end();
      st.failures = 0;
      st.retry_after_ms = 0;
      st.grace_since_ms = 0;
      auto plan = plans.find(s.id);
      if (plan == plans.end()) {
        plans_.erase(s.id);
      } else {
        plans_[s.id] = plan->second;
      }
      if (finished.count(s.id)) finished_.insert(s.id);
    }
    if (lost.count(u) && !shards_[s.id].in_flight) {
      // Another process delivers it now: what is known here is stale.
      shards_[s.id].known = false;
      plans_.erase(s.id);
    }
    // A unit being handed over starts no new batch here (its running one ends first).
    if (coordinator_->HeldEpoch(config_.id, u) != 0 && unit_epochs_[u] != 0 &&
        (shards_[s.id].in_flight || !coordinator_->Draining(config_.id, u))) {
      held.insert(s.id);
    }
  }
  control_held_ =
      coordinator_->HeldEpoch(config_.id, ControlUnit()) != 0 && unit_epochs_[ControlUnit()] != 0;
  // Shards finished elsewhere are finished here too (parents before children).
  for (const auto& f : finished) finished_.insert(f);
  if (!taken.empty()) {
    // Failures before the unit was lost are not this holder's: a fresh grace period.
    spanning_grace_since_ms_ = 0;
    recover_grace_since_ms_ = 0;
    redrive_grace_since_ms_ = 0;
    commit_grace_since_ms_ = 0;
  }
  if ((sink_->spans_shards() && taken.count(kChannelUnit)) || (sink_->staged() && !taken.empty())) {
    // The destination's own record is read again before the first batch.
    recovered_ = false;
  }
  return held;
}

void ShardRunner::NoteSuccess() {
  // The channel is failing while any of its units is (a shard of a per-shard sink, the
  // spanning batch, or reading what the destination holds).
  if (recover_failures_ > 0 || spanning_failures_ > 0 || source_failures_ > 0 ||
      redrive_failures_ > 0 || commit_failures_ > 0) {
    return;
  }
  for (const auto& [id, s] : shards_) {
    if (s.failures > 0) return;
  }
  int64_t since = metrics_.failing_since_ms.exchange(0);
  if (since > 0) {
    spdlog::info("channel {}: delivering again after {:.1f} s ({} failed attempt(s))", config_.name,
                 static_cast<double>(clock_->NowMillis() - since) / 1000.0, stretch_failures_);
  }
  stretch_failures_ = 0;
  last_error_.clear();
  last_error_attempts_ = 0;
}

bool ShardRunner::FailsChannel(const Status& st, int64_t* grace_since_ms, int64_t now) {
  switch (ClassifyFailure(st)) {
    case FailureKind::kPermanent:
      SetFatal(st.message());
      return true;
    case FailureKind::kGrace:
      if (*grace_since_ms == 0) *grace_since_ms = now;
      if (now - *grace_since_ms >= options_.destination_grace_ms) {
        SetFatal(fmt::format("{} (still so after {} s of retries: the grace period is over)",
                             st.message(), (now - *grace_since_ms) / 1000));
        return true;
      }
      return false;
    case FailureKind::kRetry:
      return false;
  }
  return false;
}

void ShardRunner::NoteRejects(uint64_t records_in, const RejectSummary& rejects, int64_t now) {
  rejects_.Merge(rejects);
  rejects_unlogged_.Merge(rejects);
  records_unlogged_ += records_in;
  FlushRejectLog(now, false);
}

void ShardRunner::FlushRejectLog(int64_t now, bool force) {
  const bool due =
      last_reject_log_ms_ < 0 || now - last_reject_log_ms_ >= options_.reject_log_interval_ms;
  if (rejects_unlogged_.empty()) {
    // Nothing to say: the next line counts the records from the next interval on.
    if (due) records_unlogged_ = 0;
    return;
  }
  if (!due && !force) return;
  spdlog::info("channel {}: {} of {} records to the DLQ ({})", config_.name,
               rejects_unlogged_.records, std::max(records_unlogged_, rejects_unlogged_.records),
               rejects_unlogged_.ReasonsText());
  last_reject_log_ms_ = now;
  rejects_unlogged_ = RejectSummary{};
  records_unlogged_ = 0;
}

std::map<std::string, uint64_t> ShardRunner::RejectedByCode() const {
  std::lock_guard lock(mu_);
  return rejects_.by_code;
}

RedriveState* ShardRunner::ActiveRedrive() {
  for (auto& r : redrives_) {
    if (r.active()) return &r;
  }
  return nullptr;
}

Result<RedriveState> ShardRunner::StartRedrive(RedriveFilter filter) {
  std::lock_guard lock(mu_);
  if (RedriveState* a = ActiveRedrive()) {
    return FailedPrecondition(fmt::format(
        "Channel {} is redriving its DLQ already (redrive {}, {}); one redrive runs at a time.",
        config_.arn, a->id, RedriveStatusName(a->status)));
  }
  RedriveState r;
  r.id = crypto::RandomUuid();
  r.filter = std::move(filter);
  r.created_ms = clock_->NowMillis();
  r.progress.id = r.id;
  RETURN_IF_ERROR(store_->SaveRedrive(config_.id, r.id, r.created_ms, RedriveStateToJson(r)));
  redrives_.push_back(r);
  redrive_failures_ = 0;
  redrive_retry_after_ms_ = 0;
  redrive_grace_since_ms_ = 0;
  spdlog::info("channel {}: redrive {} of the DLQ started", config_.name, r.id);
  LogEvent({{"eventType", "RedriveStarted"}, {"redriveId", r.id}});
  return r;
}

std::vector<RedriveState> ShardRunner::Redrives() const {
  std::lock_guard lock(mu_);
  return redrives_;
}

void ShardRunner::RunRedrive() {
  RedriveState r;
  std::vector<RedriveState> earlier;
  {
    std::lock_guard lock(mu_);
    RedriveState* a = ActiveRedrive();
    if (a == nullptr || stopping_) {
      redrive_in_flight_ = false;
      --in_flight_;
      return;
    }
    r = *a;
    earlier = redrives_;
  }
  bool fault = false;
  DeliveryCounts counts;
  const bool preparing = r.status == RedriveStatus::kPreparing;
  Status st = preparing ? PrepareStep(&r, earlier, &fault) : RedriveBatchStep(&r, &counts, &fault);

  std::lock_guard lock(mu_);
  redrive_in_flight_ = false;
  --in_flight_;
  RedriveState* a = ActiveRedrive();
  if (a == nullptr || a->id != r.id) return;
  const int64_t now = clock_->NowMillis();
  if (st.ok()) {
    *a = r;
    redrive_failures_ = 0;
    redrive_grace_since_ms_ = 0;
    if (!preparing) {
      metrics_.Add(counts);
      NoteRejects(counts.records_in, counts.rejects, now);
    }
    NoteSuccess();
    return;
  }
  if (st.code() == StatusCode::kShuttingDown || stopping_) return;
  if (fault) {
    // The redrive cannot go on (its worklist is gone, the DLQ cannot be read); the
    // channel delivers on.
    RedriveState failed = *a;
    failed.status = RedriveStatus::kFailed;
    failed.status_reason = st.message().substr(0, 2048);
    failed.completed_ms = now;
    failed.plan.reset();
    if (Status save = store_->SaveRedrive(config_.id, failed.id, failed.created_ms,
                                          RedriveStateToJson(failed));
        !save.ok()) {
      NoteFailure(save, ++redrive_failures_);
      redrive_retry_after_ms_ = now + Backoff(redrive_failures_);
      return;
    }
    *a = std::move(failed);
    spdlog::warn("channel {}: redrive {} FAILED: {}", config_.name, a->id, a->status_reason);
    LogEvent(
        {{"eventType", "RedriveFailed"}, {"redriveId", a->id}, {"errorMessage", a->status_reason}});
    return;
  }
  // The batch's plan (saved before the attempt) is what the next attempt replays.
  if (r.plan) a->plan = r.plan;
  if (FailsChannel(st, &redrive_grace_since_ms_, now)) return;
  ++redrive_failures_;
  redrive_retry_after_ms_ = now + Backoff(redrive_failures_);
  NoteFailure(st.WithContext("redrive " + r.id), redrive_failures_);
  LogEvent({{"eventType", "DeliveryAttemptFailed"},
            {"attempt", redrive_failures_},
            {"errorMessage", st.message()},
            {"redriveId", r.id}});
}

Status ShardRunner::PrepareStep(RedriveState* r, const std::vector<RedriveState>& earlier,
                                bool* redrive_fault) {
  auto dlq = DlqBucketOf(config_, buckets_, local_buckets_);
  if (!dlq.ok()) {
    *redrive_fault = true;
    return dlq.status();
  }
  Status st = PrepareRedrive(*dlq, config_, earlier, r);
  if (!st.ok()) {
    // What a retry cannot mend ends the redrive: the DLQ bucket is gone or refused, an
    // earlier redrive's worklist is gone or damaged.
    *redrive_fault =
        ClassifyFailure(st) != FailureKind::kRetry || st.code() == StatusCode::kCorruption;
    return st.WithContext("preparing the redrive");
  }
  const int64_t now = clock_->NowMillis();
  r->progress = RedriveProgress{r->id, 0, 0, 0, 0};
  r->plan.reset();
  if (r->total == 0) {
    r->status = RedriveStatus::kCompleted;
    r->completed_ms = now;
  } else {
    r->status = RedriveStatus::kInProgress;
  }
  RETURN_IF_ERROR(store_->SaveRedrive(config_.id, r->id, r->created_ms, RedriveStateToJson(*r)));
  spdlog::info(
      "channel {}: redrive {}: {} DLQ line(s) to redrive from {} object(s) ({} skipped: "
      "redriven before or a second line of a record; {} unreadable)",
      config_.name, r->id, r->total, r->objects, r->lines_skipped, r->lines_unreadable);
  LogEvent({{"eventType", "RedrivePrepared"},
            {"redriveId", r->id},
            {"lines", r->total},
            {"skipped", r->lines_skipped}});
  return Status::OK();
}

Status ShardRunner::RedriveBatchStep(RedriveState* r, DeliveryCounts* counts, bool* redrive_fault) {
  auto dlq = DlqBucketOf(config_, buckets_, local_buckets_);
  if (!dlq.ok()) {
    *redrive_fault = true;
    return dlq.status();
  }
  const bool replay = r->plan.has_value();
  const uint64_t from = r->progress.next;
  if (replay && r->plan->from != from) {
    *redrive_fault = true;
    return Internal(
        fmt::format("the redrive's planned batch starts at entry {} but its progress is {}",
                    r->plan->from, from));
  }
  const uint64_t want_to =
      replay ? r->plan->to : std::min<uint64_t>(r->total, from + options_.redrive_batch_records);
  auto entries = ReadWorklist(*dlq, config_, *r, from, want_to);
  if (!entries.ok()) {
    *redrive_fault = entries.status().code() == StatusCode::kNotFound ||
                     entries.status().code() == StatusCode::kCorruption;
    return entries.status().WithContext("reading the redrive's worklist");
  }
  if (entries->empty()) {
    *redrive_fault = true;
    return Corruption("the redrive's worklist has no entry " + std::to_string(from));
  }
  if (!replay) {
    // An S3 batch holds one shard: it ends where the shard changes (the worklist is sorted
    // by shard).
    if (!sink_->spans_shards()) {
      size_t n = 1;
      while (n < entries->size() && (*entries)[n].shard_id == (*entries)[0].shard_id) ++n;
      entries->resize(n);
    }
    r->plan = RedrivePlan{from, from + entries->size(), clock_->NowMillis()};
    RETURN_IF_ERROR(store_->SaveRedrive(config_.id, r->id, r->created_ms, RedriveStateToJson(*r)));
  }
  auto span = std::make_shared<RedriveSpan>();
  span->id = r->id;
  span->from = from;
  span->to = r->plan->to;
  span->entries = std::move(*entries);
  span->before = r->progress;
  if (span->entries.size() != span->to - span->from) {
    *redrive_fault = true;
    return Corruption("the redrive's worklist is shorter than its plan");
  }
  DeliveryBatch batch;
  batch.attempt_ms = r->plan->attempt_ms;
  batch.replay = replay;
  std::vector<size_t> range_of;
  for (const auto& e : span->entries) {
    if (batch.ranges.empty() || batch.ranges.back().shard != e.shard_id) {
      batch.ranges.push_back({e.shard_id, Position{}, std::string(), 0});
    }
    ++batch.ranges.back().records;
    range_of.push_back(batch.ranges.size() - 1);
  }
  batch.redrive = span;
  RedriveRecordSource source(source_.get(), span, std::move(range_of));
  ASSIGN_OR_RETURN(DeliveryCounts delivered, sink_->Deliver(batch, &source));
  if (!delivered.redrive) return Internal("the sink did not report the redrive's progress");
  r->progress = *delivered.redrive;
  r->plan.reset();
  if (r->progress.next >= r->total) {
    r->status = RedriveStatus::kCompleted;
    r->completed_ms = clock_->NowMillis();
  }
  RETURN_IF_ERROR(store_->SaveRedrive(config_.id, r->id, r->created_ms, RedriveStateToJson(*r)));
  spdlog::info(
      "channel {}: redrive {}: entries {} to {} of {}: {} delivered, {} failed again, {} "
      "expired in all so far{}",
      config_.name, r->id, span->from, span->to, r->total, r->progress.delivered,
      r->progress.failed_again, r->progress.expired,
      r->status == RedriveStatus::kCompleted ? " (COMPLETED)" : "");
  LogEvent({{"eventType", "RedriveBatch"},
            {"redriveId", r->id},
            {"from", span->from},
            {"to", span->to},
            {"delivered", r->progress.delivered},
            {"failedAgain", r->progress.failed_again},
            {"expired", r->progress.expired}});
  *counts = std::move(delivered);
  return Status::OK();
}

std::optional<Position> ShardRunner::NeededPosition(const std::string& shard) const {
  std::lock_guard lock(mu_);
  if (finished_.count(shard)) return std::nullopt;
  auto it = shards_.find(shard);
  // A shard the channel has not reached yet is needed from its beginning.
  Position need = it == shards_.end() ? Position{} : it->second.checkpoint;
  auto p = plans_.find(shard);
  if (p != plans_.end() && p->second.after < need) need = p->second.after;
  return need;
}

std::vector<ShardRunner::Job> ShardRunner::Schedule(int64_t now, int64_t freshness_ms,
                                                    int max_jobs) {
  std::vector<Job> jobs;
  if (stopping_) return jobs;
  {
    std::lock_guard lock(mu_);
    if (fatal_) return jobs;
    // (With a coordinator, recovery waits until the units are known to be held.)
    if (!recovered_ && coordinator_ == nullptr) {
      if (!recovering_ && now >= recover_after_ms_ && max_jobs > in_flight_) {
        recovering_ = true;
        ++in_flight_;
        jobs.push_back(RecoverJob());
      }
      return jobs;
    }
  }
  // The source is asked outside mu_ (lock order: a source's locks are never taken while
  // a runner lock is held); what it says about a shard is used only if the checkpoint
  // did not move meanwhile.
  auto shards = source_->Shards();
  if (!shards.ok()) {
    std::lock_guard lock(mu_);
    if (shards.status().code() == StatusCode::kNotFound) {
      SetFatal("The source stream no longer exists.");
    } else {
      source_failures_ = std::max(1, source_failures_ + 1);
      NoteFailure(shards.status().WithContext("listing the source's shards"), source_failures_);
      // In a pool, a process that cannot read the source for long (wrong credentials, cut
      // off from the endpoint) hands the channel's units to the processes that can; it
      // offers them again once it reads the source (HeldShards).
      if (source_failing_since_ms_ == 0) source_failing_since_ms_ = now;
      if (coordinator_ != nullptr && !source_handed_over_ &&
          now - source_failing_since_ms_ >= options_.source_handover_ms) {
        source_handed_over_ = true;
        coordinator_->Forget(config_.id);
        spdlog::warn(
            "channel {}: the source could not be read for {} s ({}): its units are handed to "
            "the pool's other processes until it can be read again",
            config_.name, (now - source_failing_since_ms_) / 1000, shards.status().ToString());
      }
    }
    return jobs;
  }
  const std::set<std::string> held = HeldShards(*shards);
  if (coordinator_ != nullptr) {
    std::lock_guard lock(mu_);
    // Nothing at all unless some of it is ours (for a table delivered as one unit: the
    // whole of it); the destination's checkpoints are read first where it records them.
    if (held.empty() && !shards->empty() && !control_held_) return jobs;
    if (!recovered_) {
      if (!recovering_ && now >= recover_after_ms_ && max_jobs > in_flight_ && in_flight_ == 0) {
        recovering_ = true;
        ++in_flight_;
        jobs.push_back(RecoverJob());
      }
      return jobs;
    }
  }
  std::map<std::string, Position> positions;
  {
    std::lock_guard lock(mu_);
    if (source_failures_ > 0) {
      source_failures_ = 0;
      NoteSuccess();
    }
    source_failing_since_ms_ = 0;
    source_handed_over_ = false;
    known_shards_ = *shards;
    for (const auto& s : *shards) {
      if (finished_.count(s.id) || !held.count(s.id)) continue;
      auto& st = shards_[s.id];
      if (!st.known) st.known = true;  // created after activation: from its beginning
      positions[s.id] = st.checkpoint;
    }
  }
  std::map<std::string, ShardBacklog> backlogs;
  for (const auto& [shard, pos] : positions) {
    auto b = source_->Backlog(shard, pos);
    if (b.ok()) {
      backlogs[shard] = std::move(*b);
    } else {
      LogReadFailure(now, "reading the backlog of " + shard, b.status());
    }
  }

  std::lock_guard lock(mu_);
  if (fatal_ || stopping_) return jobs;
  FlushRejectLog(now, false);
  const bool spanning = sink_->spans_shards();
  // A staged table's batch (one shard's, in a pool) is cut at a table commit's limits, as
  // a spanning one is: its records stream through the converters, so its memory does not
  // grow with it, while each batch costs its own files, ramp, drain and staging. At the
  // per-shard limit of 32 MiB, a 100 MB backlog per shard was four batches, the last of
  // 3 MB (bench/scaleout, table, 4 shards, `serve --pg`: 1.6-2.6 s against 1.0-2.1 s).
  // Never past what the source can plan at once (a remote source's read-ahead): a batch
  // would wait for its freshness deadline for bytes the reader never holds.
  const bool table_sized = spanning || sink_->staged();
  const uint64_t batch_bytes =
      std::min<uint64_t>(table_sized ? options_.max_spanning_batch_bytes : options_.max_batch_bytes,
                         std::max<uint64_t>(1, source_->MaxPlannedBytes()));
  const size_t batch_records =
      table_sized ? options_.max_spanning_batch_records : options_.max_batch_records;
  // Flush a little before the oldest record reaches the freshness interval, so that it is
  // visible within it.
  const int64_t lead = std::min<int64_t>(500, freshness_ms / 10);
  int64_t oldest_pending = -1;
  struct Pending {
    std::string shard;
    Position after;
    uint64_t records;
    uint64_t bytes;
    bool ripe;
  };
  std::vector<Pending> pending;
  std::set<std::string> present;
  for (const auto& s : *shards) present.insert(s.id);
  std::set<std::string> newly_finished;
  for (const auto& s : *shards) {
    if (finished_.count(s.id) || !held.count(s.id)) continue;
    auto bit = backlogs.find(s.id);
    if (bit == backlogs.end()) continue;
    auto& st = shards_[s.id];
    if (!(st.checkpoint == positions[s.id])) continue;  // moved meanwhile: next tick
    ShardBacklog& b = bit->second;
    const bool planned = plans_.count(s.id) > 0;
    if (b.trimmed_to && !st.in_flight && !planned) {
      // Records expired before delivery (retention was forced past the channel).
      spdlog::warn(
          "channel {}: {} record(s) of {} expired before delivery and cannot be delivered "
          "(the checkpoint moves {})",
          config_.name, b.trimmed_records ? std::to_string(b.trimmed_records) : "some", s.id,
          PositionText(*b.trimmed_to));
      LogEvent(
          {{"eventType", "RecordsExpired"}, {"shardId", s.id}, {"records", b.trimmed_records}});
      st.checkpoint = *b.trimmed_to;
      metrics_.records_expired.fetch_add(b.trimmed_records);
      continue;  // the backlog is re-read from the new position next tick
    }
    st.lag_records = b.records;
    st.oldest_pending_ms = b.oldest_arrival_ms;
    if (b.finished && !planned && !st.in_flight) {
      newly_finished.insert(s.id);
      continue;
    }
    if (b.records == 0 && !planned) continue;
    if (b.oldest_arrival_ms >= 0 && (oldest_pending < 0 || b.oldest_arrival_ms < oldest_pending)) {
      oldest_pending = b.oldest_arrival_ms;
    }
    // Parents first: a child waits until every parent is delivered to its end (a parent
    // no longer listed has expired: nothing of it is left to deliver).
    bool parents_done = true;
    for (const auto& p : s.parents) {
      if (present.count(p) && !finished_.count(p)) parents_done = false;
    }
    if (!parents_done || st.in_flight) continue;
    bool ripe = (b.oldest_arrival_ms >= 0 && now >= b.oldest_arrival_ms + freshness_ms - lead) ||
                b.records >= batch_records || b.bytes >= batch_bytes;
    pending.push_back({s.id, st.checkpoint, b.records, b.bytes, ripe});
  }
  metrics_.data_freshness_ms.store(oldest_pending < 0 ? 0
                                                      : std::max<int64_t>(0, now - oldest_pending));
  if (!newly_finished.empty()) {
    if (Status st = store_->Commit(config_.id, {}, newly_finished); st.ok()) {
      for (const auto& s : newly_finished) {
        finished_.insert(s);
        spdlog::debug("channel {}: {} delivered to its end", config_.name, s);
      }
    } else {
      spdlog::warn("channel {}: marking finished shards: {}", config_.name, st.ToString());
    }
  }

  // A plan must start where its shard's checkpoint is: anything else would skip records
  // (or deliver some twice).
  for (const auto& [shard, plan] : plans_) {
    if (!held.count(shard)) continue;
    auto it = shards_.find(shard);
    Position cp = it == shards_.end() ? Position{} : it->second.checkpoint;
    if (!(plan.after == cp)) {
      SetFatal(fmt::format(
          "The persisted delivery plan of shard {} starts {} but the shard's checkpoint is {}; "
          "delivering it would skip or repeat records.",
          shard, PositionText(plan.after), PositionText(cp)));
      spdlog::error("channel {}: {}", config_.name, *fatal_);
      return jobs;
    }
  }

  auto launch = [&](std::vector<ShardRange> ranges, int64_t attempt_ms, bool replay) {
    DeliveryBatch batch{std::move(ranges), attempt_ms, replay};
    for (const auto& r : batch.ranges) {
      shards_[r.shard].in_flight = true;
      if (coordinator_ != nullptr) coordinator_->SetBusy(config_.id, UnitOf(r.shard), true);
    }
    ++in_flight_;
    jobs.push_back(BatchJob(std::move(batch)));
  };
  auto room = [&] { return in_flight_ + static_cast<int>(jobs.size()) < std::max(1, max_jobs); };

  // Upkeep of a quiet destination, between batches (never beside one).
  auto upkeep_due = [&] {
    return control_held_ && in_flight_ == 0 && jobs.empty() && room() &&
           now >= sink_->NextUpkeepMs();
  };
  auto launch_upkeep = [&] {
    ++in_flight_;
    jobs.push_back([this] {
      sink_->Upkeep();
      std::lock_guard l(mu_);
      --in_flight_;
    });
  };
  // The active redrive's next step, as a job of its own.
  auto redrive_due = [&] {
    return control_held_ && !redrive_in_flight_ && room() && now >= redrive_retry_after_ms_ &&
           ActiveRedrive() != nullptr;
  };
  auto launch_redrive = [&] {
    redrive_in_flight_ = true;
    ++in_flight_;
    jobs.push_back([this] { RunRedrive(); });
  };

  if (spanning) {
    if (in_flight_ > 0 || !room()) return jobs;
    if (now < spanning_retry_after_ms_) {
      if (upkeep_due()) launch_upkeep();
      return jobs;
    }
    if (!plans_.empty()) {
      // Replay the planned batch as it was (before anything else, a redrive too).
      std::vector<ShardRange> ranges;
      int64_t attempt_ms = 0;
      for (const auto& [shard, plan] : plans_) {
        if (!held.count(shard)) continue;
        ranges.push_back({shard, plan.after, plan.last_sequence, plan.records});
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
      total_records += p.records;
    }
    bool ripe =
        std::any_of(pending.begin(), pending.end(), [](const Pending& p) { return p.ripe; }) ||
        total_bytes >= options_.max_spanning_batch_bytes ||
        total_records >= options_.max_spanning_batch_records;
    // A redrive takes every other slot while the stream's batches are ripe, and any slot
    // while they are not.
    if (redrive_due() && (redrive_turn_ || !ripe || pending.empty())) {
      redrive_turn_ = false;
      launch_redrive();
      return jobs;
    }
    if (!ripe || pending.empty()) {
      // A quiet table still gets its upkeep (cold partitions merged, snapshots expired,
      // orphans removed): between batches, never beside one.
      if (upkeep_due()) launch_upkeep();
      return jobs;
    }
    redrive_turn_ = true;
    const uint64_t share_bytes =
        std::max<uint64_t>(1 << 20, options_.max_spanning_batch_bytes / pending.size());
    const size_t share_records =
        std::max<size_t>(1000, options_.max_spanning_batch_records / pending.size());
    std::vector<ShardRange> ranges;
    std::map<std::string, BatchPlan> plans;
    const int64_t attempt_ms = clock_->NowMillis();
    for (const auto& p : pending) {
      auto planned = source_->PlanRange(p.shard, p.after, share_bytes, share_records);
      if (!planned.ok()) {
        LogReadFailure(now, "planning the next range of " + p.shard, planned.status());
        continue;
      }
      ranges.push_back({p.shard, planned->after, planned->last_sequence, planned->records});
      plans[p.shard] = {planned->after, planned->last_sequence, planned->records, attempt_ms};
    }
    if (ranges.empty()) return jobs;
    if (Status st = store_->SavePlans(config_.id, plans); !st.ok()) {
      spdlog::warn("channel {}: saving a delivery plan: {}", config_.name, st.ToString());
      return jobs;
    }
    for (auto& [shard, plan] : plans) plans_[shard] = plan;
    launch(std::move(ranges), attempt_ms, false);
    return jobs;
  }

  for (const auto& p : pending) {
    if (!room()) break;
    auto& st = shards_[p.shard];
    if (now < st.retry_after_ms) continue;
    auto planned = plans_.find(p.shard);
    if (planned != plans_.end()) {
      const BatchPlan& plan = planned->second;
      launch({{p.shard, plan.after, plan.last_sequence, plan.records}}, plan.attempt_ms, true);
      continue;
    }
    if (!p.ripe) continue;
    auto range = source_->PlanRange(p.shard, p.after, batch_bytes, batch_records);
    if (!range.ok()) {
      LogReadFailure(now, "planning the next range of " + p.shard, range.status());
      continue;
    }
    BatchPlan plan{range->after, range->last_sequence, range->records, clock_->NowMillis()};
    if (Status s = store_->SavePlans(config_.id, {{p.shard, plan}}); !s.ok()) {
      spdlog::warn("channel {}: saving a delivery plan: {}", config_.name, s.ToString());
      continue;
    }
    plans_[p.shard] = plan;
    launch({{p.shard, plan.after, plan.last_sequence, plan.records}}, plan.attempt_ms, false);
  }
  // A staged sink's commit: where the control unit is held, beside the shards' batches
  // (it takes no batch's slot: a busy worker's batches must not hold back the commit
  // that makes every worker's batches visible).
  if (sink_->staged() && control_held_ && !commit_in_flight_ && now >= commit_retry_after_ms_ &&
      now >= sink_->NextCommitMs()) {
    commit_in_flight_ = true;
    ++in_flight_;
    jobs.push_back([this] { RunCommit(); });
  }
  if (redrive_due()) launch_redrive();
  if (upkeep_due()) launch_upkeep();
  return jobs;
}

void ShardRunner::LogReadFailure(int64_t now, const std::string& what, const Status& st) {
  int64_t due = read_warn_after_ms_.load();
  if (now >= due && read_warn_after_ms_.compare_exchange_strong(due, now + 30000)) {
    spdlog::warn("channel {}: {}: {} (passed over until the next pass; logged at most every 30 s)",
                 config_.name, what, st.ToString());
  } else {
    spdlog::debug("channel {}: {}: {}", config_.name, what, st.ToString());
  }
}

void ShardRunner::RunCommit() {
  auto result = sink_->CommitStaged();
  std::lock_guard lock(mu_);
  commit_in_flight_ = false;
  --in_flight_;
  const int64_t now = clock_->NowMillis();
  if (result.ok()) {
    if (result->deliveries > 0) metrics_.Add(*result);
    commit_failures_ = 0;
    commit_retry_after_ms_ = 0;
    commit_grace_since_ms_ = 0;
    NoteSuccess();
    return;
  }
  const Status& st = result.status();
  if (st.code() == StatusCode::kShuttingDown || stopping_) return;
  if (FailsChannel(st, &commit_grace_since_ms_, now)) {
    LogEvent({{"eventType", "CommitFailed"}, {"errorMessage", st.message()}, {"fatal", true}});
    return;
  }
  ++commit_failures_;
  commit_retry_after_ms_ = now + Backoff(commit_failures_);
  NoteFailure(st.WithContext("committing the staged batches"), commit_failures_);
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
  auto held = check.ok() ? sink_->Checkpoints() : Result<std::map<std::string, Position>>(check);
  Result<std::optional<RedriveProgress>> held_redrive =
      held.ok() ? sink_->HeldRedrive() : Result<std::optional<RedriveProgress>>(held.status());
  if (!held_redrive.ok()) held = held_redrive.status();
  std::lock_guard lock(mu_);
  if (!held.ok()) {
    const Status& st = held.status();
    if (FailsChannel(st, &recover_grace_since_ms_, clock_->NowMillis())) return;
    NoteFailure(st.WithContext("reading what the destination holds"), ++recover_failures_);
    recover_after_ms_ = clock_->NowMillis() + Backoff(recover_failures_);
    return;
  }
  // The destination is ahead of the store when the server stopped between a commit and
  // the checkpoint update; a plan it already holds is done.
  std::map<std::string, Position> moved;
  for (const auto& [shard, next] : *held) {
    // With a coordinator, only the shards this process holds (another's are its own).
    if (coordinator_ != nullptr && (coordinator_->HeldEpoch(config_.id, UnitOf(shard)) == 0 ||
                                    unit_epochs_[UnitOf(shard)] == 0)) {
      continue;
    }
    auto& s = shards_[shard];
    if (s.known && !(s.checkpoint < next)) continue;
    auto plan = plans_.find(shard);
    if (plan != plans_.end()) {
      Position end{plan->second.last_sequence, std::nullopt};
      if (plan->second.after < next && next < end) {
        SetFatal(fmt::format(
            "The destination holds shard {} up to {}, inside the planned batch {} to {}.", shard,
            next.sequence, PositionText(plan->second.after), plan->second.last_sequence));
        return;
      }
    }
    moved[shard] = next;
  }
  if (!moved.empty()) {
    // The shards move here only once the store has them: moved before a failed commit,
    // the next pass would find them at the destination's position, skip them, and keep
    // their plans, which start behind it (a channel failed on a plan that starts before
    // its checkpoint, with a worker cut off from PostgreSQL: chaos.scaleout_pool).
    if (Status st = store_->Commit(config_.id, moved); !st.ok()) {
      NoteFailure(st, ++recover_failures_);
      recover_after_ms_ = clock_->NowMillis() + Backoff(recover_failures_);
      return;
    }
    for (const auto& [shard, next] : moved) {
      auto& s = shards_[shard];
      s.checkpoint = next;
      s.known = true;
      plans_.erase(shard);  // Commit() dropped its row
    }
    spdlog::info("channel {}: resumed {} shard(s) from the destination's checkpoints", config_.name,
                 moved.size());
  }
  // Likewise a redrive whose batch committed before its document moved.
  RedriveState* active = ActiveRedrive();
  if (active && *held_redrive && (*held_redrive)->id == active->id &&
      (*held_redrive)->next > active->progress.next) {
    RedriveState next = *active;
    next.progress = **held_redrive;
    next.plan.reset();
    if (next.progress.next >= next.total) {
      next.status = RedriveStatus::kCompleted;
      next.completed_ms = clock_->NowMillis();
    }
    if (Status st =
            store_->SaveRedrive(config_.id, next.id, next.created_ms, RedriveStateToJson(next));
        !st.ok()) {
      NoteFailure(st, ++recover_failures_);
      recover_after_ms_ = clock_->NowMillis() + Backoff(recover_failures_);
      return;
    }
    *active = std::move(next);
    spdlog::info("channel {}: redrive {} resumed from the destination's record (entry {} of {})",
                 config_.name, active->id, active->progress.next, active->total);
  }
  recover_failures_ = 0;
  recover_grace_since_ms_ = 0;
  NoteSuccess();
  recovered_ = true;
}

ShardRunner::Job ShardRunner::BatchJob(DeliveryBatch batch) {
  return [this, batch = std::move(batch)] { RunBatch(batch); };
}

void ShardRunner::RunBatch(const DeliveryBatch& batch) {
  const int64_t started = clock_->NowMillis();
  BatchRecordSource source(source_.get(), batch, options_);
  auto result = sink_->Deliver(batch, &source);
  std::map<std::string, Position> next;
  for (const auto& r : batch.ranges) next[r.shard] = r.end();
  Status st = result.ok() ? store_->Commit(config_.id, next) : result.status();

  std::lock_guard lock(mu_);
  --in_flight_;
  for (const auto& r : batch.ranges) {
    shards_[r.shard].in_flight = false;
    if (coordinator_ != nullptr) coordinator_->SetBusy(config_.id, UnitOf(r.shard), false);
  }
  if (st.ok()) {
    const int64_t now = clock_->NowMillis();
    metrics_.Add(*result);
    if (result->records_in > 0) {
      // Compact at info; the ranges at debug.
      spdlog::info(
          "channel {}: delivered {} of {} record(s) of {} shard(s){}, {} {}, {} bytes out, {} ms",
          config_.name, result->delivered, result->records_in, batch.ranges.size(),
          result->failed > 0 ? fmt::format(" ({} to the DLQ)", result->failed) : "",
          result->deliveries,
          sink_->staged()         ? "commit(s) (staged for the table's commit)"
          : sink_->spans_shards() ? "commit(s)"
                                  : "object(s)",
          result->bytes_out, now - started);
    }
    spdlog::debug(
        "channel {}: delivered {} record(s) ({} bytes in, {} bytes out, {} to the DLQ) of {}",
        config_.name, result->records_in, result->bytes_in, result->bytes_out, result->failed,
        RangesText(batch));
    NoteRejects(result->records_in, result->rejects, now);
    for (const auto& r : batch.ranges) {
      auto& s = shards_[r.shard];
      s.checkpoint = r.end();
      s.known = true;
      s.failures = 0;
      s.retry_after_ms = 0;
      s.grace_since_ms = 0;
      plans_.erase(r.shard);
    }
    spanning_failures_ = 0;
    spanning_retry_after_ms_ = 0;
    spanning_grace_since_ms_ = 0;
    NoteSuccess();
    return;
  }
  if (st.code() == StatusCode::kShuttingDown || stopping_) return;  // replayed after a restart
  int64_t now = clock_->NowMillis();
  {
    // The grace of a batch of one shard is that shard's; of a spanning batch, the channel's.
    int64_t* since = sink_->spans_shards() || batch.ranges.empty()
                         ? &spanning_grace_since_ms_
                         : &shards_[batch.ranges[0].shard].grace_since_ms;
    if (FailsChannel(st, since, now)) {
      LogEvent({{"eventType", "DeliveryAttemptFailed"},
                {"errorMessage", st.message()},
                {"ranges", RangesText(batch)},
                {"fatal", true}});
      return;
    }
  }
  int attempts = 0;
  if (sink_->spans_shards()) {
    attempts = ++spanning_failures_;
    spanning_retry_after_ms_ = now + Backoff(attempts);
  } else {
    for (const auto& r : batch.ranges) {
      auto& s = shards_[r.shard];
      attempts = std::max(attempts, ++s.failures);
      s.retry_after_ms = now + Backoff(s.failures);
    }
  }
  NoteFailure(st, attempts);
  LogEvent({{"eventType", "DeliveryAttemptFailed"},
            {"attempt", attempts},
            {"errorMessage", st.message()},
            {"ranges", RangesText(batch)}});
}

nlohmann::json ShardRunner::StatusJson(int64_t now) const {
  nlohmann::json out;
  {
    std::lock_guard lock(mu_);
    nlohmann::json shards = nlohmann::json::array();
    for (const auto& s : known_shards_) {
      nlohmann::json j = {{"ShardId", s.id}};
      auto it = shards_.find(s.id);
      if (it != shards_.end() && !it->second.checkpoint.at_start()) {
        j["LastCommittedSequenceNumber"] = it->second.checkpoint.sequence;
      }
      bool done = finished_.count(s.id) > 0;
      uint64_t lag = it == shards_.end() || done ? 0 : it->second.lag_records;
      j["LagRecords"] = lag;
      double lag_s = 0;
      if (lag > 0 && it->second.oldest_pending_ms >= 0) {
        lag_s =
            static_cast<double>(std::max<int64_t>(0, now - it->second.oldest_pending_ms)) / 1000.0;
      }
      j["LagSeconds"] = lag_s;
      j["Delivered"] = done;
      shards.push_back(std::move(j));
    }
    out["Shards"] = std::move(shards);
    out["DLQRecordCount"] = metrics_.dlq_delivery_success.load();
    out["DeliveredRecordCount"] = metrics_.successful_record_count.load();
    if (!last_error_.empty()) {
      out["LastError"] = last_error_;
      out["LastErrorTimestamp"] = static_cast<double>(last_error_ms_) / 1000.0;
      out["LastErrorAttempts"] = last_error_attempts_;
    }
    out["RejectedRecordCounts"] = rejects_.by_code;
    if (rejects_.last) {
      const RejectNote& r = *rejects_.last;
      nlohmann::json j = {{"ErrorCode", r.error_code},
                          {"ErrorMessage", r.error_message},
                          {"ShardId", r.shard_id},
                          {"SequenceNumber", r.sequence_number}};
      if (r.sub_sequence) j["SubSequenceNumber"] = *r.sub_sequence;
      j["ApproximateArrivalTimestamp"] = static_cast<double>(r.arrival_ms) / 1000.0;
      j["Timestamp"] = static_cast<double>(r.rejected_ms) / 1000.0;
      out["LastRejected"] = std::move(j);
    }
    if (!redrives_.empty()) out["Redrive"] = RedriveDescription(redrives_.back(), config_);
  }
  if (coordinator_ != nullptr) {
    // A process that has not scheduled the channel (an observer: `icestream channels
    // describe --pg`) learns the shards from the source.
    if (out["Shards"].empty()) {
      if (auto shards = source_->Shards(); shards.ok()) {
        for (const auto& s : *shards) {
          out["Shards"].push_back({{"ShardId", s.id}, {"Delivered", false}});
        }
      }
    }
    AddPoolStatus(&out);
  }
  nlohmann::json sink_status = sink_->StatusJson();
  for (const auto& [k, v] : sink_status.items()) out[k] = v;
  return out;
}

// In a pool, a shard this process does not deliver is described from the pool's rows:
// who holds it under which epoch, its checkpoint in the store, and its backlog from there.
void ShardRunner::AddPoolStatus(nlohmann::json* out) const {
  auto owners = coordinator_->Owners(config_.id);
  auto checkpoints = store_->Checkpoints(config_.id);
  if (!owners.ok() || !checkpoints.ok()) {
    (*out)["PoolStatusError"] = (!owners.ok() ? owners.status() : checkpoints.status()).message();
    return;
  }
  auto unit_owner = owners->find(kChannelUnit);
  for (auto& j : (*out)["Shards"]) {
    const std::string shard = j["ShardId"].get<std::string>();
    auto it = unit_owner != owners->end() ? unit_owner : owners->find(ShardUnit(shard));
    if (it != owners->end()) {
      if (!it->second.owner.empty()) j["Owner"] = it->second.owner;
      j["Epoch"] = it->second.epoch;
    }
    if (it != owners->end() && it->second.owner == coordinator_->owner()) continue;  // ours
    auto cp = checkpoints->find(shard);
    if (cp == checkpoints->end()) continue;
    if (!cp->second.at_start()) j["LastCommittedSequenceNumber"] = cp->second.sequence;
    if (j.value("Delivered", false)) continue;
    if (auto b = source_->Behind(shard, cp->second); b.ok()) {
      if (b->records_exact) {
        j["LagRecords"] = b->records;
      } else {
        j.erase("LagRecords");  // one read cannot count them
      }
      if (b->millis_behind) j["MillisBehindLatest"] = *b->millis_behind;
      j["LagSeconds"] = b->records > 0 && b->oldest_arrival_ms >= 0
                            ? static_cast<double>(std::max<int64_t>(
                                  0, clock_->NowMillis() - b->oldest_arrival_ms)) /
                                  1000.0
                            : 0.0;
      if (b->finished) j["Delivered"] = true;
    }
  }
}

}  // namespace icestream::delivery
