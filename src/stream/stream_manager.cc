// StreamManager: metadata, routing, resharding, reads, retention.
#include "stream/stream_manager.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <set>

#include "common/crypto.h"
#include "common/fs.h"
#include "stream/reshard.h"
#include "stream/sequence_number.h"

namespace icestream::stream {

namespace {
constexpr int64_t kHourMs = 3600 * 1000LL;
// CreateStream answers once its shards exist or after this long (then CREATING).
constexpr int64_t kCreateWaitMs = 500;
// Descriptors kept free beside one per open shard (SQLite, sockets, directories).
constexpr uint64_t kDescriptorSlack = 64;

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
    std::lock_guard lock(create_mu_);
    create_stopping_ = true;
  }
  create_cv_.notify_all();
  if (create_thread_.joinable()) create_thread_.join();
  // Creations still queued were not started: they stay CREATING until the next start.
  for (auto& job : create_queue_) job();
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
  return ShardNotFoundError(ShardIdString(shard), name, options_.account);
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

Status StreamManager::DescriptorHeadroom(uint32_t additional) const {
  // Every open shard holds its active segment open: shards beyond what the process may
  // open would fail later, in the middle of the creation (or of a reshard).
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return Status::OK();
  auto fds = fs::ListDir("/proc/self/fd");
  if (!fds.ok()) return Status::OK();
  uint64_t need = fds->size() + additional + kDescriptorSlack;
  if (need <= rl.rlim_cur) return Status::OK();
  return ResourceExhausted(fmt::format(
      "This request would exceed the shard limit for the account {} in {}: the server may open "
      "{} files (ulimit -n), {} are open, and {} more shards need {} more. Raise the limit or "
      "delete streams.",
      options_.account, options_.region, rl.rlim_cur, fds->size(), additional, additional));
}

Result<StreamInfo> StreamManager::CreateStream(const CreateStreamRequest& req) {
  uint32_t count =
      req.mode == StreamMode::kOnDemand ? options_.on_demand_shard_count : req.shard_count;
  if (count == 0) return InvalidArgument("ShardCount must be at least 1.");
  if (count > options_.max_shards_per_stream) {
    return ResourceExhausted(
        fmt::format("A stream can have at most {} shards.", options_.max_shards_per_stream));
  }
  std::shared_ptr<Stream> s;
  StreamInfo info;
  {
    std::lock_guard lock(mu_);
    if (streams_.count(req.name)) {
      return AlreadyExists(
          fmt::format("Stream {} under account {} already exists.", req.name, options_.account));
    }
    uint32_t open = 0, on_demand = 0;
    for (const auto& [n, st] : streams_) {
      std::shared_lock slock(st->mu);
      open += static_cast<uint32_t>(st->info.OpenShardCount());
      on_demand += st->info.mode == StreamMode::kOnDemand ? 1 : 0;
    }
    RETURN_IF_ERROR(ShardQuotaError(open, count));
    if (req.mode == StreamMode::kOnDemand && on_demand >= options_.on_demand_stream_limit) {
      return ResourceExhausted(fmt::format(
          "This request would exceed the on-demand stream count limit for the account {} in {}. "
          "Current on-demand stream count: {}. Limit: {}.",
          options_.account, options_.region, on_demand, options_.on_demand_stream_limit));
    }
    RETURN_IF_ERROR(DescriptorHeadroom(count));
    info.name = req.name;
    for (;;) {
      info.uid = kMinStreamUid + crypto::RandomU64() % (kMaxStreamUid - kMinStreamUid + 1);
      bool clash = false;
      for (const auto& [n, st] : streams_) clash |= st->info.uid == info.uid;
      if (!clash && !fs::Exists(StreamDir(info.uid))) break;
    }
    info.arn = ArnFor(req.name);
    // CREATING until every shard's log exists; a restart in between finishes the job
    // (Load opens, and so creates, the logs of every shard listed).
    info.status = StreamStatus::kCreating;
    info.mode = req.mode;
    info.created_ms = clock_->NowMillis();
    info.max_record_kib = req.max_record_kib;
    info.tags = req.tags;
    info.warm_throughput_mibps = req.warm_throughput_mibps;
    info.shards = InitialShards(count, info.created_ms);
    info.next_shard_index = count;
    RETURN_IF_ERROR(Persist(info));
    s = std::make_shared<Stream>();
    s->info = info;
    streams_[info.name] = s;
  }
  // The shard logs are made outside the manager's lock (thousands of shards take
  // seconds, during which every other stream is served) by the creator thread; the call
  // waits a little, so small streams come back ACTIVE, big ones CREATING (as AWS answers).
  auto done = std::make_shared<std::promise<Status>>();
  auto finished = done->get_future();
  {
    std::lock_guard lock(create_mu_);
    if (create_stopping_) return ShuttingDown("the server is stopping");
    create_queue_.push_back([this, s, done] { done->set_value(FinishCreate(s)); });
    if (!create_thread_.joinable()) create_thread_ = std::thread([this] { CreatorLoop(); });
  }
  create_cv_.notify_one();
  if (finished.wait_for(std::chrono::milliseconds(kCreateWaitMs)) == std::future_status::ready) {
    RETURN_IF_ERROR(finished.get());
  }
  std::shared_lock lock(s->mu);
  return s->info;
}

Status StreamManager::FinishCreate(const std::shared_ptr<Stream>& s) {
  StreamInfo info;
  {
    std::shared_lock lock(s->mu);
    info = s->info;
  }
  std::map<uint32_t, std::shared_ptr<log::ShardLog>> logs;
  Status st;
  for (const auto& shard : info.shards) {
    {
      std::lock_guard lock(create_mu_);
      if (create_stopping_) {
        // Left CREATING: the next start finishes it.
        for (auto& [idx, log] : logs) log->Close();
        return ShuttingDown("the server stopped while stream " + info.name + " was created");
      }
    }
    auto opened =
        log::ShardLog::Open(ShardDir(info.uid, shard.index), options_.log, clock_, &committer_);
    if (!opened.ok()) {
      st = opened.status();
      break;
    }
    logs[shard.index] = std::move(opened).value();
  }
  if (st.ok()) {
    std::unique_lock lock(s->mu);
    StreamInfo next = s->info;
    next.status = StreamStatus::kActive;
    st = Persist(next);
    if (st.ok()) {
      s->logs = std::move(logs);
      s->info = std::move(next);
      s->RebuildRoutes();
      spdlog::info("stream {} created ({}, {} shards, uid {})", info.name,
                   StreamModeName(info.mode), info.shards.size(), info.uid);
      return Status::OK();
    }
  }
  // The stream never became ACTIVE: it goes away whole.
  spdlog::error("stream {} could not be created: {}", info.name, st.ToString());
  for (auto& [idx, log] : logs) log->Close();
  {
    std::lock_guard lock(mu_);
    auto it = streams_.find(info.name);
    if (it != streams_.end() && it->second == s) streams_.erase(it);
    (void)db_->Query("DELETE FROM streams WHERE uid = ?1", {static_cast<int64_t>(info.uid)});
  }
  (void)fs::RemoveAll(StreamDir(info.uid));
  return st;
}

void StreamManager::CreatorLoop() {
  std::unique_lock lock(create_mu_);
  for (;;) {
    create_cv_.wait(lock, [&] { return create_stopping_ || !create_queue_.empty(); });
    if (create_queue_.empty()) return;  // stopping and nothing left
    auto job = std::move(create_queue_.front());
    create_queue_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

Status StreamManager::DeleteStream(const std::string& name) {
  std::shared_ptr<Stream> s;
  {
    std::lock_guard lock(mu_);
    auto it = streams_.find(name);
    if (it == streams_.end()) return NotFoundError(name);
    s = it->second;
    {
      std::shared_lock slock(s->mu);
      if (s->info.status == StreamStatus::kCreating) return NotActiveError(s->info);
    }
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
  NotifyStream(uid);  // tip readers of the stream learn it is gone
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
  RETURN_IF_ERROR(DescriptorHeadroom(2));
  std::unique_lock lock(s->mu);
  if (s->info.status != StreamStatus::kActive) return NotActiveError(s->info);
  ASSIGN_OR_RETURN(Reshard r, Split(s->info, shard, k, clock_->NowMillis(), options_.account));
  auto created = r.created;
  RETURN_IF_ERROR(CommitTopology(*s, std::move(r.next), created));
  spdlog::info("stream {}: split {} into {} and {}", name, ShardIdString(shard),
               ShardIdString(created[0]), ShardIdString(created[1]));
  return Status::OK();
}

Status StreamManager::MergeShards(const std::string& name, uint32_t a, uint32_t b) {
  ASSIGN_OR_RETURN(auto s, Find(name));
  RETURN_IF_ERROR(DescriptorHeadroom(1));
  std::unique_lock lock(s->mu);
  if (s->info.status != StreamStatus::kActive) return NotActiveError(s->info);
  ASSIGN_OR_RETURN(Reshard r, Merge(s->info, a, b, clock_->NowMillis(), options_.account));
  auto created = r.created;
  RETURN_IF_ERROR(CommitTopology(*s, std::move(r.next), created));
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
  // Up to one new shard per target shard at any step (splits, then merges).
  RETURN_IF_ERROR(DescriptorHeadroom(target));
  std::unique_lock lock(s->mu);
  if (s->info.status != StreamStatus::kActive) return NotActiveError(s->info);
  current = static_cast<uint32_t>(s->info.OpenShardCount());
  ScaleLimits limits;
  limits.max_shards_per_stream = options_.max_shards_per_stream;
  ASSIGN_OR_RETURN(Reshard r,
                   ScaleUniformly(s->info, target, clock_->NowMillis(), options_.account, limits));
  size_t created = r.created.size();
  RETURN_IF_ERROR(CommitTopology(*s, std::move(r.next), r.created));
  spdlog::info("stream {}: open shard count {} -> {} ({} shards created)", name, current, target,
               created);
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

void StreamManager::WhenAppended(uint64_t uid, uint32_t shard, const log::ShardLog& log,
                                 uint64_t known_end, std::function<void()> fn) {
  uint64_t id;
  {
    std::lock_guard lock(watch_mu_);
    id = next_watch_id_++;
    watchers_[{uid, shard}].emplace_back(id, std::move(fn));
    watcher_count_.fetch_add(1);
  }
  // Registered first, checked second; NotifyShard runs after the commit moved the end.
  // With a full fence on both sides, one of the two sees the other: no wake-up is lost.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (log.committed_end() <= known_end) return;
  std::function<void()> mine;
  {
    std::lock_guard lock(watch_mu_);
    auto it = watchers_.find({uid, shard});
    if (it == watchers_.end()) return;  // NotifyShard took it: it calls it
    auto& list = it->second;
    for (auto w = list.begin(); w != list.end(); ++w) {
      if (w->first != id) continue;
      mine = std::move(w->second);
      list.erase(w);
      watcher_count_.fetch_sub(1);
      break;
    }
    if (list.empty()) watchers_.erase(it);
  }
  if (mine) mine();
}

void StreamManager::NotifyShard(uint64_t uid, uint32_t shard) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (watcher_count_.load() == 0) return;
  std::vector<std::pair<uint64_t, std::function<void()>>> wake;
  {
    std::lock_guard lock(watch_mu_);
    auto it = watchers_.find({uid, shard});
    if (it == watchers_.end()) return;
    wake = std::move(it->second);
    watchers_.erase(it);
    watcher_count_.fetch_sub(wake.size());
  }
  for (auto& [id, fn] : wake) fn();
}

void StreamManager::NotifyStream(uint64_t uid) {
  std::vector<std::pair<uint64_t, std::function<void()>>> wake;
  {
    std::lock_guard lock(watch_mu_);
    auto it = watchers_.lower_bound({uid, 0});
    while (it != watchers_.end() && it->first.first == uid) {
      for (auto& w : it->second) wake.push_back(std::move(w));
      watcher_count_.fetch_sub(it->second.size());
      it = watchers_.erase(it);
    }
  }
  for (auto& [id, fn] : wake) fn();
}

Status StreamManager::Put(const std::string& name, const std::vector<PutItem>& items,
                          PutDone done) {
  ASSIGN_OR_RETURN(auto s, Find(name));
  struct State {
    PutResult result;
    std::vector<Status> group_status;
    std::vector<std::vector<size_t>> groups;
    std::vector<uint32_t> group_shard;
    std::atomic<int> remaining{1};
    PutDone done;
    StreamManager* manager = nullptr;
    void Finish() {
      for (size_t g = 0; g < groups.size(); ++g) {
        if (group_status[g].ok()) continue;
        for (size_t i : groups[g]) result.items[i].error = group_status[g];
      }
      // Tip readers of these shards wake as soon as the records are readable, before the
      // answer goes out; readers of other shards and streams are not disturbed.
      for (size_t g = 0; g < groups.size(); ++g) {
        if (group_status[g].ok() && !groups[g].empty()) {
          manager->NotifyShard(result.stream_uid, group_shard[g]);
        }
      }
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
  for (size_t r : route_of_group) state->group_shard.push_back(routes[r].second);
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
  ASSIGN_OR_RETURN(auto r, log->ReadViews(from, max_records, max_bytes, stop));
  out.records = std::move(r.records);
  out.buffers = std::move(r.buffers);
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
