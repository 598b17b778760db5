// StreamManager: metadata, routing, resharding, reads, retention.
#include "stream/stream_manager.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <set>

#include "common/crypto.h"
#include "common/fs.h"
#include "stream/sequence_number.h"

namespace icestream::stream {

namespace {
constexpr int64_t kHourMs = 3600 * 1000LL;
constexpr int64_t kDayMs = 24 * kHourMs;

// The reason of an error message without the file it names ("pwrite /a/b: No space left
// on device" -> "No space left on device"): /health is open to anyone.
std::string ClientSafeReason(const std::string& message) {
  size_t colon = message.rfind(": ");
  return colon == std::string::npos ? message : message.substr(colon + 2);
}

StreamManagerOptions WithFileCache(StreamManagerOptions o) {
  if (!o.log.file_cache)
    o.log.file_cache = std::make_shared<log::SegmentFileCache>(o.max_open_segment_files);
  return o;
}
}  // namespace

void StreamManager::Stream::RebuildRoutes() {
  routes.clear();
  for (const auto& s : info.shards) {
    if (s.open()) routes.emplace_back(s.range, s.index);
  }
  std::sort(routes.begin(), routes.end(),
            [](const auto& a, const auto& b) { return a.first.start < b.first.start; });
}

StreamManager::StreamManager(StreamManagerOptions options, const Clock* clock, Database* db)
    : options_(WithFileCache(std::move(options))),
      clock_(clock),
      db_(db),
      committer_(options_.commit_threads) {
  if (options_.enforce_shard_limits) limiter_ = std::make_unique<ShardLimiter>(clock_);
}

Result<std::unique_ptr<StreamManager>> StreamManager::Open(StreamManagerOptions options,
                                                           const Clock* clock, Database* db) {
  std::unique_ptr<StreamManager> m(new StreamManager(std::move(options), clock, db));
  RETURN_IF_ERROR(m->Load());
  m->retention_thread_ = std::thread([raw = m.get()] { raw->RetentionLoop(); });
  return m;
}

StreamManager::~StreamManager() { Stop(); }

void StreamManager::Stop() {
  {
    std::lock_guard lock(stop_mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (retention_thread_.joinable()) retention_thread_.join();
  {
    std::lock_guard lock(mu_);
    for (auto& [name, s] : streams_) {
      std::unique_lock slock(s->mu);
      for (auto& [idx, log] : s->logs) log->Close();
    }
  }
  committer_.Stop();
}

std::string StreamManager::ArnFor(std::string_view name) const {
  return StreamArn(options_.region, options_.account, name);
}

std::string StreamManager::StreamDir(uint64_t uid) const {
  return fs::Join(fs::Join(options_.data_dir, "streams"), std::to_string(uid));
}

std::string StreamManager::ShardDir(uint64_t uid, uint32_t shard) const {
  return fs::Join(StreamDir(uid), fmt::format("{:012d}", shard));
}

Status StreamManager::Load() {
  RETURN_IF_ERROR(db_->Exec(
      "CREATE TABLE IF NOT EXISTS streams (uid INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, "
      "doc TEXT NOT NULL);"
      "CREATE TABLE IF NOT EXISTS stream_deletions (uid INTEGER PRIMARY KEY)"));
  RETURN_IF_ERROR(fs::MakeDirs(fs::Join(options_.data_dir, "streams")));
  ASSIGN_OR_RETURN(auto rows, db_->Query("SELECT doc FROM streams"));
  std::set<std::string> live_dirs;
  for (const auto& row : rows) {
    ASSIGN_OR_RETURN(StreamInfo info, StreamInfoFromJson(AsText(row[0])));
    auto s = std::make_shared<Stream>();
    bool fixed = false;
    for (auto& shard : info.shards) {
      auto opened =
          log::ShardLog::Open(ShardDir(info.uid, shard.index), options_.log, clock_, &committer_);
      if (!opened.ok()) {
        // One damaged shard does not keep the server (or the rest of its stream) down:
        // it stays listed, and calls that need it get a clear error.
        spdlog::error("stream {} {} is not opened: {}", info.name, ShardIdString(shard.index),
                      opened.status().ToString());
        s->broken[shard.index] = opened.status();
        continue;
      }
      auto log = std::move(opened).value();
      if (!shard.open()) {
        // A closed shard's end was fixed when it closed; appends that were queued then
        // but never became durable are gone after a crash.
        if (shard.end_offset && *shard.end_offset > log->committed_end()) {
          shard.end_offset = log->committed_end();
          fixed = true;
        }
        log->Close();
      }
      s->logs[shard.index] = std::move(log);
    }
    if (info.status != StreamStatus::kActive) {
      info.status = StreamStatus::kActive;  // transitions are instantaneous here
      fixed = true;
    }
    s->info = std::move(info);
    s->RebuildRoutes();
    if (fixed) RETURN_IF_ERROR(Persist(s->info));
    live_dirs.insert(std::to_string(s->info.uid));
    streams_[s->info.name] = std::move(s);
  }
  // A folder meta.db does not know is removed only when meta.db recorded its delete
  // (DeleteStream was interrupted before the folder went). Anything else is kept: with a
  // missing, empty or older meta.db, "unknown" folders hold acknowledged records.
  ASSIGN_OR_RETURN(auto deleted_rows, db_->Query("SELECT uid FROM stream_deletions"));
  std::set<std::string> deleted;
  for (const auto& r : deleted_rows) deleted.insert(std::to_string(AsInt(r[0])));
  std::string streams_dir = fs::Join(options_.data_dir, "streams");
  ASSIGN_OR_RETURN(auto dirs, fs::ListDir(streams_dir));
  std::vector<std::string> unknown;
  for (const auto& d : dirs) {
    if (live_dirs.count(d)) continue;
    if (deleted.count(d)) {
      spdlog::info("removing the folder of deleted stream uid {} (its delete was interrupted)", d);
      RETURN_IF_ERROR(fs::RemoveAll(fs::Join(streams_dir, d)));
      RETURN_IF_ERROR(db_->Query("DELETE FROM stream_deletions WHERE uid = ?1",
                                 {static_cast<int64_t>(std::stoull(d))})
                          .status());
    } else {
      unknown.push_back(d);
    }
  }
  if (!unknown.empty() && rows.empty()) {
    return FailedPrecondition(fmt::format(
        "meta.db knows no streams, but the data directory holds {} stream folder(s) under streams/ "
        "(uids {}); meta.db is missing, empty or from another data directory. Refusing to start so "
        "that "
        "no acknowledged record is lost: restore meta.db from a backup, or move streams/ aside to "
        "start "
        "with no streams.",
        unknown.size(), fmt::join(unknown, ", ")));
  }
  for (const auto& d : unknown) {
    spdlog::warn(
        "streams/{} is not a stream meta.db knows; it is left in place (nothing is deleted)", d);
  }
  return Status::OK();
}

Status StreamManager::Persist(const StreamInfo& info) {
  return db_
      ->Query("INSERT OR REPLACE INTO streams(uid, name, doc) VALUES (?1, ?2, ?3)",
              {static_cast<int64_t>(info.uid), info.name, StreamInfoToJson(info)})
      .status();
}

Status StreamManager::NotFoundError(const std::string& name) const {
  // A stream ARN of another region or account arrives whole (see StreamNameFromArn).
  if (auto arn = ParseStreamArn(name)) {
    return NotFound(fmt::format("Stream {} under account {} not found.", arn->name, arn->account));
  }
  return NotFound(fmt::format("Stream {} under account {} not found.", name, options_.account));
}

Status StreamManager::BrokenShardError(const Stream& s, uint32_t shard) const {
  return Corruption(
      fmt::format("Shard {} in stream {} under account {} is damaged on disk and was not opened at "
                  "start-up; an "
                  "operator must repair it (icestream fsck). Other shards are served.",
                  ShardIdString(shard), s.info.name, options_.account));
}

std::vector<ShardProblem> StreamManager::Problems() const {
  std::vector<ShardProblem> out;
  std::lock_guard lock(mu_);
  for (const auto& [name, s] : streams_) {
    std::shared_lock slock(s->mu);
    for (const auto& [idx, st] : s->broken) {
      out.push_back({name, ShardIdString(idx),
                     "not opened: damaged on disk (see the server log; icestream fsck)"});
    }
    for (const auto& [idx, log] : s->logs) {
      if (auto e = log->write_error()) {
        out.push_back({name, ShardIdString(idx), "last write failed: " + ClientSafeReason(*e)});
      }
    }
  }
  return out;
}

Status StreamManager::ShardNotFound(const std::string& name, uint32_t shard) const {
  return NotFound(fmt::format("Shard {} in stream {} under account {} does not exist",
                              ShardIdString(shard), name, options_.account));
}

Status StreamManager::NotActiveError(const StreamInfo& info) const {
  return FailedPrecondition(
      fmt::format("Stream {} under account {} not ACTIVE, instead in state {}", info.name,
                  options_.account, StreamStatusName(info.status)));
}

Result<std::shared_ptr<StreamManager::Stream>> StreamManager::Find(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = streams_.find(name);
  if (it == streams_.end()) return NotFoundError(name);
  return it->second;
}

Result<std::shared_ptr<StreamManager::Stream>> StreamManager::FindUid(const std::string& name,
                                                                      uint64_t uid) const {
  ASSIGN_OR_RETURN(auto s, Find(name));
  std::shared_lock lock(s->mu);
  if (s->info.uid != uid) return NotFoundError(name);
  return s;
}

AccountTotals StreamManager::Totals() const {
  AccountTotals t;
  std::lock_guard lock(mu_);
  for (const auto& [name, s] : streams_) {
    std::shared_lock slock(s->mu);
    t.open_shards += static_cast<uint32_t>(s->info.OpenShardCount());
    if (s->info.mode == StreamMode::kOnDemand) ++t.on_demand_streams;
  }
  return t;
}

Status StreamManager::ShardQuotaError(uint32_t open_shards, uint32_t additional) const {
  if (open_shards + additional <= options_.shard_limit) return Status::OK();
  return ResourceExhausted(fmt::format(
      "This request would exceed the shard limit for the account {} in {}. Current shard count "
      "for the account: {}. Limit: {}. Number of additional shards that would have resulted "
      "from this request: {}. Refer to the AWS Service Limits page "
      "(https://docs.aws.amazon.com/general/latest/gr/aws_service_limits.html) for current "
      "limits and how to request higher limits.",
      options_.account, options_.region, open_shards, options_.shard_limit, additional));
}

Status StreamManager::CheckShardQuota(uint32_t additional) const {
  return ShardQuotaError(Totals().open_shards, additional);
}

Result<StreamInfo> StreamManager::CreateStream(const CreateStreamRequest& req) {
  uint32_t count =
      req.mode == StreamMode::kOnDemand ? options_.on_demand_shard_count : req.shard_count;
  if (count == 0) return InvalidArgument("ShardCount must be at least 1.");
  if (count > options_.max_shards_per_stream) {
    return ResourceExhausted(
        fmt::format("A stream can have at most {} shards.", options_.max_shards_per_stream));
  }
  std::lock_guard lock(mu_);
  if (streams_.count(req.name)) {
    return AlreadyExists(
        fmt::format("Stream {} under account {} already exists.", req.name, options_.account));
  }
  uint32_t open = 0, on_demand = 0;
  for (const auto& [n, s] : streams_) {
    std::shared_lock slock(s->mu);
    open += static_cast<uint32_t>(s->info.OpenShardCount());
    on_demand += s->info.mode == StreamMode::kOnDemand ? 1 : 0;
  }
  RETURN_IF_ERROR(ShardQuotaError(open, count));
  if (req.mode == StreamMode::kOnDemand && on_demand >= options_.on_demand_stream_limit) {
    return ResourceExhausted(fmt::format(
        "This request would exceed the on-demand stream count limit for the account {} in {}. "
        "Current on-demand stream count: {}. Limit: {}.",
        options_.account, options_.region, on_demand, options_.on_demand_stream_limit));
  }
  StreamInfo info;
  info.name = req.name;
  for (;;) {
    info.uid = kMinStreamUid + crypto::RandomU64() % (kMaxStreamUid - kMinStreamUid + 1);
    bool clash = false;
    for (const auto& [n, s] : streams_) clash |= s->info.uid == info.uid;
    if (!clash && !fs::Exists(StreamDir(info.uid))) break;
  }
  info.arn = ArnFor(req.name);
  info.status = StreamStatus::kActive;
  info.mode = req.mode;
  info.created_ms = clock_->NowMillis();
  info.max_record_kib = req.max_record_kib;
  info.tags = req.tags;
  info.warm_throughput_mibps = req.warm_throughput_mibps;
  auto ranges = EvenSplit(count);
  auto s = std::make_shared<Stream>();
  for (uint32_t i = 0; i < count; ++i) {
    ShardInfo shard;
    shard.index = i;
    shard.range = ranges[i];
    shard.created_ms = info.created_ms;
    info.shards.push_back(shard);
    ASSIGN_OR_RETURN(auto log,
                     log::ShardLog::Open(ShardDir(info.uid, i), options_.log, clock_, &committer_));
    s->logs[i] = std::move(log);
  }
  info.next_shard_index = count;
  Status st = Persist(info);
  if (!st.ok()) {
    (void)fs::RemoveAll(StreamDir(info.uid));
    return st;
  }
  s->info = info;
  s->RebuildRoutes();
  streams_[info.name] = s;
  spdlog::info("stream {} created ({}, {} shards, uid {})", info.name, StreamModeName(info.mode),
               count, info.uid);
  return info;
}

Status StreamManager::DeleteStream(const std::string& name) {
  std::shared_ptr<Stream> s;
  {
    std::lock_guard lock(mu_);
    auto it = streams_.find(name);
    if (it == streams_.end()) return NotFoundError(name);
    s = it->second;
    // The delete is recorded with the row's removal, so a restart after a crash removes
    // the folder knowing it belonged to a deleted stream.
    int64_t uid = static_cast<int64_t>(s->info.uid);
    Status recorded = db_->Transaction([uid](Database::Tx& tx) -> Status {
      RETURN_IF_ERROR(tx.Exec("DELETE FROM streams WHERE uid = ?1", {uid}));
      return tx.Exec("INSERT OR REPLACE INTO stream_deletions(uid) VALUES (?1)", {uid});
    });
    RETURN_IF_ERROR(recorded);
    streams_.erase(it);
  }
  uint64_t uid;
  {
    std::unique_lock lock(s->mu);
    uid = s->info.uid;
    for (auto& [idx, log] : s->logs) {
      log->Close();
      log->ReleaseFiles();
    }
  }
  if (limiter_) limiter_->Forget(uid);
  // Folders are removed now; descriptors held by in-flight readers stay valid. If this
  // fails or the process dies, Load() removes the leftover folder.
  Status st = fs::RemoveAll(StreamDir(uid));
  if (st.ok()) {
    st = db_->Query("DELETE FROM stream_deletions WHERE uid = ?1", {static_cast<int64_t>(uid)})
             .status();
  }
  if (!st.ok()) spdlog::warn("deleting stream {}: {}", name, st.ToString());
  spdlog::info("stream {} deleted (uid {})", name, uid);
  return Status::OK();
}

Result<StreamInfo> StreamManager::Describe(const std::string& name) const {
  ASSIGN_OR_RETURN(auto s, Find(name));
  std::shared_lock lock(s->mu);
  return s->info;
}

Result<int> StreamManager::MaxRecordKib(const std::string& name) const {
  ASSIGN_OR_RETURN(auto s, Find(name));
  std::shared_lock lock(s->mu);
  return s->info.max_record_kib;
}

std::vector<StreamInfo> StreamManager::ListStreams() const {
  std::vector<StreamInfo> out;
  std::lock_guard lock(mu_);
  for (const auto& [name, s] : streams_) {
    std::shared_lock slock(s->mu);
    out.push_back(s->info);
  }
  return out;
}

// `fn` runs under the stream's exclusive lock: it must not call back into the manager.
Status StreamManager::Mutate(const std::string& name,
                             const std::function<Status(StreamInfo&)>& fn) {
  ASSIGN_OR_RETURN(auto s, Find(name));
  std::unique_lock lock(s->mu);
  StreamInfo next = s->info;
  RETURN_IF_ERROR(fn(next));
  RETURN_IF_ERROR(Persist(next));
  s->info = std::move(next);
  return Status::OK();
}

Status StreamManager::SplitInto(StreamInfo& info, uint32_t shard, uint128 k, int64_t now,
                                std::vector<uint32_t>* created) const {
  ShardInfo* parent = nullptr;
  for (auto& sh : info.shards) {
    if (sh.index == shard) parent = &sh;
  }
  if (!parent) {
    return NotFound(fmt::format("Shard {} in stream {} under account {} does not exist",
                                ShardIdString(shard), info.name, options_.account));
  }
  if (!parent->open()) {
    return FailedPrecondition(fmt::format(
        "Shard {} in stream {} under account {} has already been merged or split, and thus is "
        "not eligible for merging or splitting.",
        ShardIdString(shard), info.name, options_.account));
  }
  parent->closed_ms = now;
  ShardInfo left, right;
  left.index = info.next_shard_index++;
  right.index = info.next_shard_index++;
  left.parent = right.parent = shard;
  left.range = {parent->range.start, k - 1};
  right.range = {k, parent->range.end};
  left.created_ms = right.created_ms = now;
  info.shards.push_back(left);
  info.shards.push_back(right);
  created->push_back(left.index);
  created->push_back(right.index);
  return Status::OK();
}

Status StreamManager::MergeInto(StreamInfo& info, uint32_t a, uint32_t b, int64_t now,
                                std::vector<uint32_t>* created) const {
  ShardInfo* sa = nullptr;
  ShardInfo* sb = nullptr;
  for (auto& sh : info.shards) {
    if (sh.index == a) sa = &sh;
    if (sh.index == b) sb = &sh;
  }
  for (auto [p, idx] : {std::pair{sa, a}, std::pair{sb, b}}) {
    if (!p) {
      return NotFound(fmt::format("Shard {} in stream {} under account {} does not exist",
                                  ShardIdString(idx), info.name, options_.account));
    }
    if (!p->open()) {
      return FailedPrecondition(fmt::format(
          "Shard {} in stream {} under account {} has already been merged or split, and thus is "
          "not eligible for merging or splitting.",
          ShardIdString(idx), info.name, options_.account));
    }
  }
  // ShardToMerge must be the lower-range shard of the pair: AWS refuses the inverted
  // order with the same message (recorded by kinesalite's suite against AWS).
  bool adjacent = sa->range.end != kUint128Max && sa->range.end + 1 == sb->range.start;
  if (a == b || !adjacent) {
    return InvalidArgument(fmt::format(
        "Shards {} and {} in stream {} under account {} are not an adjacent pair of shards "
        "eligible for merging",
        ShardIdString(a), ShardIdString(b), info.name, options_.account));
  }
  sa->closed_ms = now;
  sb->closed_ms = now;
  ShardInfo child;
  child.index = info.next_shard_index++;
  child.parent = a;
  child.adjacent_parent = b;
  child.range = {std::min(sa->range.start, sb->range.start),
                 std::max(sa->range.end, sb->range.end)};
  child.created_ms = now;
  info.shards.push_back(child);
  created->push_back(child.index);
  return Status::OK();
}

Status StreamManager::CommitTopology(Stream& s, StreamInfo next,
                                     const std::vector<uint32_t>& created) {
  for (const auto& sh : next.shards) {
    if (!sh.open() && !sh.end_offset && s.broken.count(sh.index))
      return BrokenShardError(s, sh.index);
  }
  // Open the new shards' logs first: if that fails nothing changed.
  std::map<uint32_t, std::shared_ptr<log::ShardLog>> new_logs;
  for (uint32_t idx : created) {
    ASSIGN_OR_RETURN(
        auto log, log::ShardLog::Open(ShardDir(next.uid, idx), options_.log, clock_, &committer_));
    new_logs[idx] = std::move(log);
  }
  // A shard closed now ends after everything routed to it so far that reached the disk:
  // appends are routed under the shared lock (held exclusively here, so none comes in)
  // and Drain waits until the queued ones are written or failed. A failed write must not
  // count, or readers would wait forever for records that do not exist.
  for (auto& sh : next.shards) {
    if (!sh.open() && !sh.end_offset) {
      auto it = s.logs.find(sh.index);
      sh.end_offset = it != s.logs.end() ? it->second->Drain() : 0;
    }
  }
  Status st = Persist(next);
  if (!st.ok()) {
    for (auto& [idx, log] : new_logs) {
      log->Close();
      (void)fs::RemoveAll(log->dir());
    }
    return st;
  }
  for (auto& sh : next.shards) {
    auto it = s.logs.find(sh.index);
    if (!sh.open() && it != s.logs.end()) it->second->Close();
  }
  for (auto& [idx, log] : new_logs) s.logs[idx] = std::move(log);
  s.info = std::move(next);
  s.RebuildRoutes();
  return Status::OK();
}

Status StreamManager::SplitShard(const std::string& name, uint32_t shard, uint128 k) {
  ASSIGN_OR_RETURN(auto s, Find(name));
  RETURN_IF_ERROR(CheckShardQuota(1));
  std::unique_lock lock(s->mu);
  if (s->info.status != StreamStatus::kActive) return NotActiveError(s->info);
  const ShardInfo* p = s->info.FindShard(shard);
  if (p && p->open() && !(k > p->range.start + 1 && k < p->range.end)) {
    return InvalidArgument(fmt::format(
        "NewStartingHashKey {} used in SplitShard() on shard {} in stream {} under account {} is "
        "not both greater than one plus the shard's StartingHashKey {} and less than the shard's "
        "EndingHashKey {}.",
        ToDecimal(k), ShardIdString(shard), name, options_.account, ToDecimal(p->range.start),
        ToDecimal(p->range.end)));
  }
  StreamInfo next = s->info;
  std::vector<uint32_t> created;
  RETURN_IF_ERROR(SplitInto(next, shard, k, clock_->NowMillis(), &created));
  RETURN_IF_ERROR(CommitTopology(*s, std::move(next), created));
  spdlog::info("stream {}: split {} into {} and {}", name, ShardIdString(shard),
               ShardIdString(created[0]), ShardIdString(created[1]));
  return Status::OK();
}

Status StreamManager::MergeShards(const std::string& name, uint32_t a, uint32_t b) {
  ASSIGN_OR_RETURN(auto s, Find(name));
  std::unique_lock lock(s->mu);
  if (s->info.status != StreamStatus::kActive) return NotActiveError(s->info);
  StreamInfo next = s->info;
  std::vector<uint32_t> created;
  RETURN_IF_ERROR(MergeInto(next, a, b, clock_->NowMillis(), &created));
  RETURN_IF_ERROR(CommitTopology(*s, std::move(next), created));
  spdlog::info("stream {}: merged {} and {} into {}", name, ShardIdString(a), ShardIdString(b),
               ShardIdString(created[0]));
  return Status::OK();
}

Result<uint32_t> StreamManager::UpdateShardCount(const std::string& name, uint32_t target) {
  ASSIGN_OR_RETURN(auto s, Find(name));
  uint32_t current;
  {
    std::shared_lock lock(s->mu);
    current = static_cast<uint32_t>(s->info.OpenShardCount());
  }
  if (target > current) RETURN_IF_ERROR(CheckShardQuota(target - current));
  std::unique_lock lock(s->mu);
  if (s->info.status != StreamStatus::kActive) return NotActiveError(s->info);
  current = static_cast<uint32_t>(s->info.OpenShardCount());
  int64_t now = clock_->NowMillis();
  StreamInfo next = s->info;
  std::erase_if(next.scaling_events_ms, [&](int64_t t) { return t < now - kDayMs; });
  if (next.scaling_events_ms.size() >= 10) {
    return ResourceExhausted(fmt::format(
        "Stream {} under account {} has already been scaled 10 times in the last 24 hours; try "
        "again later.",
        name, options_.account));
  }
  if (target > 2 * current || 2 * target < current) {
    return InvalidArgument(fmt::format(
        "UpdateShardCount cannot scale stream {} under account {} from {} to {} shards: the "
        "target must be between half and double the current open shard count.",
        name, options_.account, current, target));
  }
  if (target > options_.max_shards_per_stream) {
    return ResourceExhausted(
        fmt::format("A stream can have at most {} shards.", options_.max_shards_per_stream));
  }
  next.scaling_events_ms.push_back(now);
  if (target == current) {
    // Nothing to reshape unless the layout is uneven; AWS still records the call.
  }
  std::vector<uint32_t> created;
  auto goal = EvenSplit(target);
  // Split phase: cut open shards at every goal boundary that falls inside them.
  for (size_t j = 1; j < goal.size(); ++j) {
    uint128 b = goal[j].start;
    for (const auto& sh : next.shards) {
      if (sh.open() && sh.range.start < b && b <= sh.range.end) {
        uint32_t idx = sh.index;
        RETURN_IF_ERROR(SplitInto(next, idx, b, now, &created));
        break;
      }
    }
  }
  // Merge phase: fold the open shards inside each goal range into one, pairwise.
  for (const auto& g : goal) {
    std::vector<std::pair<uint128, uint32_t>> inside;
    for (const auto& sh : next.shards) {
      if (sh.open() && sh.range.start >= g.start && sh.range.end <= g.end) {
        inside.emplace_back(sh.range.start, sh.index);
      }
    }
    std::sort(inside.begin(), inside.end());
    if (inside.empty()) continue;
    uint32_t acc = inside[0].second;
    for (size_t i = 1; i < inside.size(); ++i) {
      RETURN_IF_ERROR(MergeInto(next, acc, inside[i].second, now, &created));
      acc = created.back();
    }
  }
  // Shards created and closed in the same call (intermediate steps) hold no records.
  RETURN_IF_ERROR(CommitTopology(*s, std::move(next), created));
  spdlog::info("stream {}: open shard count {} -> {} ({} shards created)", name, current, target,
               created.size());
  return current;
}

Status StreamManager::UpdateStreamMode(const std::string& name, StreamMode mode) {
  // The on-demand quota is counted before the stream's lock is taken: mu_ is never taken
  // while a stream lock is held (every other path takes mu_ first).
  uint32_t other_on_demand = 0;
  if (mode == StreamMode::kOnDemand) {
    std::lock_guard lock(mu_);
    for (const auto& [n, s] : streams_) {
      if (n == name) continue;
      std::shared_lock slock(s->mu);
      other_on_demand += s->info.mode == StreamMode::kOnDemand ? 1 : 0;
    }
  }
  return Mutate(name, [&](StreamInfo& info) -> Status {
    if (info.status != StreamStatus::kActive) return NotActiveError(info);
    if (mode == StreamMode::kOnDemand && info.mode != StreamMode::kOnDemand &&
        other_on_demand >= options_.on_demand_stream_limit) {
      return ResourceExhausted(fmt::format(
          "This request would exceed the on-demand stream count limit for the account {} in {}.",
          options_.account, options_.region));
    }
    info.mode = mode;
    spdlog::info("stream {}: capacity mode {}", name, StreamModeName(mode));
    return Status::OK();
  });
}

uint64_t StreamManager::append_epoch() const { return append_epoch_.load(); }

uint64_t StreamManager::WaitForAppend(uint64_t seen, std::chrono::milliseconds timeout) const {
  append_waiters_.fetch_add(1);
  {
    std::unique_lock lock(append_mu_);
    append_cv_.wait_for(lock, timeout, [&] { return append_epoch_.load() != seen; });
  }
  append_waiters_.fetch_sub(1);
  return append_epoch_.load();
}

// The Put path takes no lock unless someone waits. Both sides are sequentially
// consistent: a waiter counted before this load is notified (under the lock, so not
// between its check and its wait); one counted after it sees the new epoch in its check.
void StreamManager::NotifyAppend() {
  append_epoch_.fetch_add(1);
  if (append_waiters_.load() == 0) return;
  { std::lock_guard lock(append_mu_); }
  append_cv_.notify_all();
}

Status StreamManager::Put(const std::string& name, const std::vector<PutItem>& items,
                          PutDone done) {
  ASSIGN_OR_RETURN(auto s, Find(name));
  struct State {
    PutResult result;
    std::vector<Status> group_status;
    std::vector<std::vector<size_t>> groups;
    std::atomic<int> remaining{1};
    PutDone done;
    StreamManager* manager = nullptr;
    void Finish() {
      for (size_t g = 0; g < groups.size(); ++g) {
        if (group_status[g].ok()) continue;
        for (size_t i : groups[g]) result.items[i].error = group_status[g];
      }
      // Tip readers wake as soon as the records are readable, before the answer goes out.
      manager->NotifyAppend();
      done(std::move(result));
    }
  };
  auto state = std::make_shared<State>();
  state->done = std::move(done);
  state->manager = this;
  state->result.items.resize(items.size());

  std::shared_lock lock(s->mu);
  if (s->info.status == StreamStatus::kCreating) return NotFoundError(name);
  state->result.stream_uid = s->info.uid;
  const auto& routes = s->routes;
  std::vector<int> group_of_route(routes.size(), -1);
  std::vector<size_t> route_of_group;
  for (size_t i = 0; i < items.size(); ++i) {
    uint128 h = items[i].hash;
    auto it = std::upper_bound(routes.begin(), routes.end(), h,
                               [](uint128 v, const auto& r) { return v < r.first.start; });
    size_t r = static_cast<size_t>(it - routes.begin()) - 1;  // ranges cover the whole space
    if (group_of_route[r] < 0) {
      group_of_route[r] = static_cast<int>(state->groups.size());
      state->groups.emplace_back();
      route_of_group.push_back(r);
    }
    state->groups[group_of_route[r]].push_back(i);
  }
  state->group_status.resize(state->groups.size());
  state->remaining.fetch_add(static_cast<int>(state->groups.size()));
  std::vector<log::AppendRecord> recs;
  for (size_t g = 0; g < state->groups.size(); ++g) {
    uint32_t shard = routes[route_of_group[g]].second;
    recs.clear();
    auto& group = state->groups[g];
    auto found = s->logs.find(shard);
    if (found == s->logs.end()) {
      state->group_status[g] = BrokenShardError(*s, shard);
      for (size_t i : group) state->result.items[i].shard_index = shard;
      if (state->remaining.fetch_sub(1) == 1) state->Finish();
      continue;
    }
    const auto& log = found->second;
    if (limiter_) {
      // Over the shard's rate: that record fails alone (PutRecords reports it per entry).
      size_t kept = 0;
      for (size_t i : group) {
        size_t bytes = items[i].partition_key.size() + items[i].data.size();
        if (limiter_->AdmitWrite(state->result.stream_uid, shard, bytes)) {
          group[kept++] = i;
        } else {
          state->result.items[i] = {shard, 0,
                                    Throttled("Rate exceeded for shard " + ShardIdString(shard))};
        }
      }
      group.resize(kept);
      if (group.empty()) {
        if (state->remaining.fetch_sub(1) == 1) state->Finish();
        continue;
      }
    }
    for (size_t i : group) recs.push_back({items[i].partition_key, items[i].data});
    auto info = log->Append(recs, [state, g](const Status& st) {
      if (!st.ok()) state->group_status[g] = st;
      if (state->remaining.fetch_sub(1) == 1) state->Finish();
    });
    if (!info.ok()) {
      state->group_status[g] = info.status();
      if (state->remaining.fetch_sub(1) == 1) state->Finish();
      continue;
    }
    state->result.arrival_ms = std::max(state->result.arrival_ms, info->arrival_ms);
    uint64_t off = info->first_offset;
    for (size_t i : state->groups[g]) state->result.items[i] = {shard, off++, Status::OK()};
  }
  lock.unlock();
  if (state->remaining.fetch_sub(1) == 1) state->Finish();
  return Status::OK();
}

Result<ShardBounds> StreamManager::Bounds(const std::string& name, uint64_t uid,
                                          uint32_t shard) const {
  ASSIGN_OR_RETURN(auto s, FindUid(name, uid));
  std::shared_lock lock(s->mu);
  const ShardInfo* info = s->info.FindShard(shard);
  auto it = s->logs.find(shard);
  if (info && it == s->logs.end() && s->broken.count(shard)) return BrokenShardError(*s, shard);
  if (!info || it == s->logs.end()) {
    return ShardNotFound(name, shard);
  }
  ShardBounds b;
  b.trim_horizon = it->second->start_offset();
  b.end = it->second->committed_end();
  if (info->end_offset) b.end = std::min(b.end, *info->end_offset);
  return b;
}

Result<uint64_t> StreamManager::OffsetAtTime(const std::string& name, uint64_t uid, uint32_t shard,
                                             int64_t t_ms) const {
  ASSIGN_OR_RETURN(auto log, ShardLogFor(uid, shard));
  (void)name;
  return log->OffsetAtTime(t_ms);
}

Result<ShardReadResult> StreamManager::Read(const std::string& name, uint64_t uid, uint32_t shard,
                                            uint64_t from, size_t max_records,
                                            size_t max_bytes) const {
  ASSIGN_OR_RETURN(auto s, FindUid(name, uid));
  std::shared_ptr<log::ShardLog> log;
  std::optional<uint64_t> end_offset;
  std::vector<ShardInfo> children;
  {
    std::shared_lock lock(s->mu);
    const ShardInfo* info = s->info.FindShard(shard);
    auto it = s->logs.find(shard);
    if (info && it == s->logs.end() && s->broken.count(shard)) return BrokenShardError(*s, shard);
    if (!info || it == s->logs.end()) {
      return ShardNotFound(name, shard);
    }
    log = it->second;
    end_offset = info->end_offset;
    if (end_offset) {
      for (const auto& c : s->info.shards) {
        if (c.parent == shard || c.adjacent_parent == shard) children.push_back(c);
      }
    }
  }
  ShardReadResult out;
  uint64_t stop = end_offset.value_or(UINT64_MAX);
  ASSIGN_OR_RETURN(auto r, log->Read(from, max_records, max_bytes, stop));
  out.records = std::move(r.records);
  out.next_offset = r.next_offset;
  uint64_t committed = log->committed_end();
  if (end_offset && out.next_offset >= *end_offset && out.records.empty()) {
    out.shard_end = true;
    out.children = std::move(children);
  }
  if (out.next_offset < std::min(committed, stop)) {
    int64_t tip = log->last_arrival_ms();
    int64_t at = out.records.empty() ? tip : out.records.back().arrival_ms;
    out.millis_behind_latest = std::max<int64_t>(0, tip - at);
  }
  return out;
}

Result<std::shared_ptr<log::ShardLog>> StreamManager::ShardLogFor(uint64_t uid,
                                                                  uint32_t shard) const {
  std::lock_guard lock(mu_);
  for (const auto& [name, s] : streams_) {
    std::shared_lock slock(s->mu);
    if (s->info.uid != uid) continue;
    auto it = s->logs.find(shard);
    if (it == s->logs.end()) {
      if (s->broken.count(shard)) return BrokenShardError(*s, shard);
      break;
    }
    return it->second;
  }
  return NotFound(fmt::format("shard {} of stream uid {} does not exist", shard, uid));
}

void StreamManager::SetRetentionFloor(RetentionFloor floor) {
  std::lock_guard lock(floor_mu_);
  floor_ = std::move(floor);
}

void StreamManager::RunRetention() {
  RetentionFloor floor;
  {
    std::lock_guard lock(floor_mu_);
    floor = floor_;
  }
  std::vector<std::shared_ptr<Stream>> all;
  {
    std::lock_guard lock(mu_);
    for (auto& [n, s] : streams_) all.push_back(s);
  }
  int64_t now = clock_->NowMillis();
  for (auto& s : all) {
    std::vector<std::pair<uint32_t, std::shared_ptr<log::ShardLog>>> logs;
    int64_t cutoff;
    {
      std::shared_lock lock(s->mu);
      cutoff = now - s->info.retention_hours * kHourMs;
      for (auto& [idx, log] : s->logs) logs.emplace_back(idx, log);
    }
    std::vector<uint32_t> expired;
    for (auto& [idx, log] : logs) {
      uint64_t keep = floor ? floor(s->info.uid, idx) : UINT64_MAX;
      auto r = log->ApplyRetention(cutoff, keep);
      if (!r.ok()) spdlog::warn("retention on {}: {}", log->dir(), r.status().ToString());
    }
    // A closed shard expires once it closed longer ago than the retention period and no
    // reader still needs it: it is then no longer listed. The readers' floors are asked
    // before the stream lock is taken (the floor function takes the readers' own locks).
    std::map<uint32_t, uint64_t> floors;
    {
      std::shared_lock lock(s->mu);
      for (const auto& sh : s->info.shards) {
        if (!sh.open()) floors[sh.index] = UINT64_MAX;
      }
    }
    if (floor) {
      for (auto& [idx, keep] : floors) keep = floor(s->info.uid, idx);
    }
    std::unique_lock lock(s->mu);
    StreamInfo next = s->info;
    for (const auto& sh : next.shards) {
      if (sh.open() || !sh.closed_ms || *sh.closed_ms >= cutoff) continue;
      auto f = floors.find(sh.index);
      uint64_t keep = f == floors.end() ? UINT64_MAX : f->second;
      if (sh.end_offset && keep < *sh.end_offset) continue;
      expired.push_back(sh.index);
    }
    if (expired.empty()) continue;
    std::erase_if(next.shards, [&](const ShardInfo& sh) {
      return std::find(expired.begin(), expired.end(), sh.index) != expired.end();
    });
    if (!Persist(next).ok()) continue;
    for (uint32_t idx : expired) {
      auto it = s->logs.find(idx);
      if (it != s->logs.end()) {
        it->second->ReleaseFiles();
        (void)fs::RemoveAll(it->second->dir());
        s->logs.erase(it);
      }
    }
    s->info = std::move(next);
  }
}

void StreamManager::RetentionLoop() {
  std::unique_lock lock(stop_mu_);
  while (!stopping_) {
    stop_cv_.wait_for(lock, std::chrono::milliseconds(options_.retention_check_interval_ms));
    if (stopping_) break;
    lock.unlock();
    RunRetention();
    lock.lock();
  }
}

}  // namespace icestream::stream
