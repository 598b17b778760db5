// Leases on PostgreSQL rows: renew, take, hand back.
#include "scaleout/lease_manager.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>

#include "common/crypto.h"

namespace icestream::scaleout {

namespace {

std::string Hostname() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

std::string Interval(int64_t ms) { return std::to_string(ms) + " milliseconds"; }

// A PostgreSQL text[] literal of `items` ({"a","b"}; quotes and backslashes escaped).
std::string TextArray(const std::vector<std::string>& items) {
  std::string out = "{";
  for (const auto& item : items) {
    if (out.size() > 1) out += ',';
    out += '"';
    for (char c : item) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

}  // namespace

LeaseManager::LeaseManager(pg::PgPool* pool, LeaseOptions options, std::string owner)
    : pool_(pool), options_(std::move(options)), owner_(std::move(owner)) {}

Result<std::unique_ptr<LeaseManager>> LeaseManager::Start(pg::PgPool* pool, LeaseOptions options) {
  std::string owner =
      fmt::format("{}:{}:{}", Hostname(), ::getpid(), crypto::RandomUuid().substr(0, 8));
  std::unique_ptr<LeaseManager> m(new LeaseManager(pool, std::move(options), owner));
  RETURN_IF_ERROR(pool->Exec("INSERT INTO icestream_worker (worker_id, host, pid, listen) VALUES "
                             "($1, $2, $3, $4)",
                             {owner, Hostname(), std::to_string(::getpid()), m->options_.listen})
                      .status());
  spdlog::info("scale-out: worker {} joined the pool (lease {} ms)", owner, m->options_.lease_ms);
  LeaseManager* raw = m.get();
  m->thread_ = std::thread([raw] { raw->Loop(); });
  return m;
}

std::unique_ptr<LeaseManager> LeaseManager::Observe(pg::PgPool* pool) {
  std::string owner =
      fmt::format("{}:{}:{}:observer", Hostname(), ::getpid(), crypto::RandomUuid().substr(0, 8));
  return std::unique_ptr<LeaseManager>(new LeaseManager(pool, LeaseOptions{}, owner));
}

LeaseManager::~LeaseManager() { Stop(false); }

Result<std::map<std::string, delivery::Coordinator::UnitOwner>> LeaseManager::Owners(
    const std::string& channel_id) const {
  ASSIGN_OR_RETURN(pg::PgResult r,
                   pool_->Exec("SELECT unit, CASE WHEN expires_at > clock_timestamp() THEN owner "
                               "ELSE '' END, epoch FROM icestream_lease WHERE channel_id = $1",
                               {channel_id}));
  std::map<std::string, UnitOwner> out;
  for (size_t i = 0; i < r.rows(); ++i) {
    out[r.text(i, 0)] = UnitOwner{r.text(i, 1), static_cast<uint64_t>(r.integer(i, 2))};
  }
  return out;
}

void LeaseManager::Stop(bool handoff) {
  if (stopping_.exchange(true)) return;
  loop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (handoff) {
    auto r = pool_->Exec(
        "WITH g AS (UPDATE icestream_lease SET owner = NULL, expires_at = NULL WHERE owner = $1 "
        "RETURNING channel_id, unit, epoch), h AS (INSERT INTO icestream_lease_history "
        "(channel_id, unit, owner, epoch, released) SELECT channel_id, unit, $1, epoch, true FROM "
        "g) SELECT count(*) FROM g",
        {owner_});
    if (r.ok()) {
      spdlog::info("scale-out: worker {} handed {} lease(s) over", owner_, r->integer(0, 0));
    } else {
      spdlog::warn("scale-out: handing the leases over: {}", r.status().ToString());
    }
  }
  (void)pool_->Exec("DELETE FROM icestream_interest WHERE worker_id = $1", {owner_});
  (void)pool_->Exec("DELETE FROM icestream_worker WHERE worker_id = $1", {owner_});
  std::lock_guard lock(mu_);
  held_.clear();
}

uint64_t LeaseManager::HeldEpoch(const std::string& channel_id, const std::string& unit) const {
  std::lock_guard lock(mu_);
  if (std::chrono::steady_clock::now() >= valid_until_) return 0;
  auto it = held_.find({channel_id, unit});
  return it == held_.end() ? 0 : it->second.epoch;
}

void LeaseManager::Offer(const std::string& channel_id, const std::vector<std::string>& units) {
  bool fresh = false;
  {
    std::lock_guard lock(mu_);
    auto& set = offered_[channel_id];
    for (const auto& u : units) fresh |= set.insert(u).second;
  }
  if (fresh) {
    // A new channel or new shards: their rows are made and taken now, not at the next
    // take interval (a new channel's delivery would otherwise wait for it).
    offered_new_.store(true);
    loop_cv_.notify_one();
  }
}

void LeaseManager::Forget(const std::string& channel_id) {
  std::lock_guard lock(mu_);
  offered_.erase(channel_id);
  interested_.erase(channel_id);
  for (auto it = held_.begin(); it != held_.end();) {
    it = it->first.first == channel_id ? held_.erase(it) : std::next(it);
  }
  for (auto it = inserted_.begin(); it != inserted_.end();) {
    it = it->first == channel_id ? inserted_.erase(it) : std::next(it);
  }
  for (auto* units : {&busy_, &draining_}) {
    for (auto it = units->begin(); it != units->end();) {
      it = it->first == channel_id ? units->erase(it) : std::next(it);
    }
  }
}

void LeaseManager::SetBusy(const std::string& channel_id, const std::string& unit, bool busy) {
  std::lock_guard lock(mu_);
  if (busy) {
    busy_.insert({channel_id, unit});
  } else {
    busy_.erase({channel_id, unit});
  }
}

bool LeaseManager::Draining(const std::string& channel_id, const std::string& unit) const {
  std::lock_guard lock(mu_);
  return draining_.count({channel_id, unit}) > 0;
}

std::string LeaseManager::UnitFor(const std::string& channel_id, const std::string& shard) const {
  std::lock_guard lock(mu_);
  auto it = offered_.find(channel_id);
  if (it != offered_.end() && it->second.count(delivery::kChannelUnit))
    return delivery::kChannelUnit;
  return delivery::ShardUnit(shard);
}

std::string LeaseManager::ControlUnitFor(const std::string& channel_id) const {
  return UnitFor(channel_id, "") == delivery::kChannelUnit ? delivery::kChannelUnit
                                                           : delivery::kControlUnit;
}

std::map<std::string, std::map<std::string, uint64_t>> LeaseManager::Held() const {
  std::map<std::string, std::map<std::string, uint64_t>> out;
  std::lock_guard lock(mu_);
  if (std::chrono::steady_clock::now() >= valid_until_) return out;
  for (const auto& [k, u] : held_) out[k.first][k.second] = u.epoch;
  return out;
}

void LeaseManager::Loop() {
  auto next_take = std::chrono::steady_clock::now();
  while (!stopping_) {
    bool take = std::chrono::steady_clock::now() >= next_take;
    if (offered_new_.exchange(false)) take = true;
    if (take)
      next_take = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.take_ms);
    Cycle(take);
    std::unique_lock lock(loop_mu_);
    loop_cv_.wait_for(lock, std::chrono::milliseconds(options_.renew_ms),
                      [&] { return stopping_.load() || offered_new_.load(); });
  }
}

void LeaseManager::CycleForTest() { Cycle(true); }

void LeaseManager::Cycle(bool take) {
  // One cycle at a time (the loop's and CycleForTest's): a renewal whose read began before
  // another cycle's take committed would count the units just taken as lost.
  std::lock_guard cycle(cycle_mu_);
  for (auto step : {&LeaseManager::Renew, &LeaseManager::InsertOffered}) {
    Status st = (this->*step)();
    if (!st.ok()) {
      spdlog::warn("scale-out: {}", st.ToString());
      return;
    }
  }
  if (!take) return;
  if (Status st = Take(); !st.ok()) spdlog::warn("scale-out: taking leases: {}", st.ToString());
}

std::vector<std::string> LeaseManager::OfferedChannels() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [ch, units] : offered_) out.push_back(ch);
  return out;
}

Status LeaseManager::Renew() {
  auto started = std::chrono::steady_clock::now();
  const std::string offered = TextArray(OfferedChannels());
  // The heartbeat and the renewal of every unit held, in one statement (one round trip and
  // one transaction per renew interval, whatever the number of units). Units of channels
  // this process no longer offers (it forgot them) are given back in the same statement,
  // and so is its interest in those channels.
  ASSIGN_OR_RETURN(
      auto r,
      pool_->Exec("WITH hb AS (UPDATE icestream_worker SET heartbeat_at = clock_timestamp() "
                  "WHERE worker_id = $1 RETURNING 1), r AS (UPDATE icestream_lease SET "
                  "expires_at = clock_timestamp() + $2::interval WHERE owner = $1 AND channel_id "
                  "= ANY($3::text[]) RETURNING channel_id, unit, epoch), g AS (UPDATE "
                  "icestream_lease SET owner = NULL, expires_at = NULL WHERE owner = $1 AND "
                  "channel_id <> ALL($3::text[]) RETURNING channel_id, unit, epoch), gh AS (INSERT "
                  "INTO icestream_lease_history (channel_id, unit, owner, epoch, released) SELECT "
                  "channel_id, unit, $1, epoch, true FROM g), i AS (DELETE FROM "
                  "icestream_interest WHERE worker_id = $1 AND channel_id <> ALL($3::text[])) "
                  "SELECT (SELECT count(*) FROM hb), (SELECT count(*) FROM g), r.channel_id, "
                  "r.unit, r.epoch FROM (SELECT 1) one LEFT JOIN r ON true",
                  {owner_, Interval(options_.lease_ms), offered}));
  if (r.rows() > 0 && r.integer(0, 1) > 0) {
    spdlog::info("scale-out: handed {} unit(s) of channels this process no longer delivers over",
                 r.integer(0, 1));
  }
  if (r.rows() > 0 && r.integer(0, 0) == 0) {
    // Removed by an operator or a database restored from a backup: join again.
    RETURN_IF_ERROR(pool_
                        ->Exec("INSERT INTO icestream_worker (worker_id, host, pid, listen) VALUES "
                               "($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                               {owner_, Hostname(), std::to_string(::getpid()), options_.listen})
                        .status());
  }
  std::map<std::pair<std::string, std::string>, Unit> now;
  for (size_t i = 0; i < r.rows(); ++i) {
    if (r.is_null(i, 2)) continue;  // no unit held
    now[{r.text(i, 2), r.text(i, 3)}] = Unit{static_cast<uint64_t>(r.integer(i, 4))};
  }
  std::lock_guard lock(mu_);
  for (const auto& [k, u] : held_) {
    auto it = now.find(k);
    if (it == now.end() || it->second.epoch != u.epoch) {
      spdlog::warn("scale-out: lost the lease of {} {} (epoch {}); another worker holds it now",
                   k.first, k.second, u.epoch);
    }
  }
  held_ = std::move(now);
  valid_until_ = started + std::chrono::milliseconds(options_.lease_ms - options_.renew_ms);
  return Status::OK();
}

Status LeaseManager::InsertOffered() {
  std::vector<std::pair<std::string, std::string>> missing;
  std::vector<std::string> interest;
  {
    std::lock_guard lock(mu_);
    for (const auto& [ch, units] : offered_) {
      if (!interested_.count(ch)) interest.push_back(ch);
      for (const auto& u : units) {
        if (!inserted_.count({ch, u})) missing.emplace_back(ch, u);
      }
    }
  }
  // This process can deliver these channels: it counts in their shares from now on.
  for (const auto& ch : interest) {
    RETURN_IF_ERROR(pool_
                        ->Exec("INSERT INTO icestream_interest (worker_id, channel_id) VALUES "
                               "($1, $2) ON CONFLICT DO NOTHING",
                               {owner_, ch})
                        .status());
    std::lock_guard lock(mu_);
    if (offered_.count(ch)) interested_.insert(ch);
  }
  for (const auto& [ch, u] : missing) {
    RETURN_IF_ERROR(pool_
                        ->Exec("INSERT INTO icestream_lease (channel_id, unit) VALUES ($1, $2) ON "
                               "CONFLICT DO NOTHING",
                               {ch, u})
                        .status());
    std::lock_guard lock(mu_);
    inserted_.insert({ch, u});
  }
  return Status::OK();
}

Status LeaseManager::Take() {
  const std::vector<std::string> channels = OfferedChannels();
  if (channels.empty()) return Status::OK();
  const std::string offered = TextArray(channels);
  // The fair share, per channel: its units over the live workers that deliver it (those
  // that offered it and whose heartbeat is within a lease), rounded up. Per channel rather
  // than over all units, so that one channel's shards spread over the pool; and a free
  // unit always fits some such worker's share (the shares of a channel add up to at least
  // its units), so none stays free. Only channels this process offered: a process that
  // cannot deliver a channel (another endpoint's stream) never takes its units, and does
  // not count in its share.
  ASSIGN_OR_RETURN(
      auto counts,
      pool_->Exec("SELECT l.channel_id, count(*), (SELECT count(*) FROM icestream_interest i "
                  "JOIN icestream_worker w ON w.worker_id = i.worker_id WHERE i.channel_id = "
                  "l.channel_id AND w.heartbeat_at > clock_timestamp() - $1::interval) FROM "
                  "icestream_lease l WHERE l.channel_id = ANY($2::text[]) GROUP BY l.channel_id",
                  {Interval(options_.lease_ms), offered}));
  std::map<std::string, int64_t> share;
  for (size_t i = 0; i < counts.rows(); ++i) {
    int64_t workers = std::max<int64_t>(1, counts.integer(i, 2));
    share[counts.text(i, 0)] = (counts.integer(i, 1) + workers - 1) / workers;
  }
  // Over the share of a channel: hand back what is over it (shards before the control
  // unit), and take nothing this pass; a worker that joined takes them at its next pass
  // (at once: its offer woke it). All at once, so that a pool converges in one pass after
  // a worker joins (a backlog's channel is first taken whole by the process that offered it
  // first) — but a unit with a batch running drains first: it is marked, the engine starts
  // no batch of it, and it goes at the first pass after its batch is done.
  std::map<std::string, std::vector<std::pair<std::string, uint64_t>>> give;
  {
    std::lock_guard lock(mu_);
    std::map<std::string, int64_t> mine;
    for (const auto& [k, u] : held_) mine[k.first]++;
    for (auto it = draining_.begin(); it != draining_.end();) {
      // Back under the share (another process left), or no longer held: no hand-over.
      auto sh = share.find(it->first);
      const bool over = sh != share.end() && mine[it->first] > sh->second;
      it = over && held_.count(*it) ? std::next(it) : draining_.erase(it);
    }
    for (const auto& [channel, n] : mine) {
      auto it = share.find(channel);
      if (it == share.end() || n <= it->second) continue;
      // Idle draining units first, then idle shards, the control unit, and busy shards
      // last (those are only marked).
      std::vector<std::pair<int, std::pair<std::string, uint64_t>>> ranked;
      for (auto h = held_.lower_bound({channel, ""}); h != held_.end() && h->first.first == channel;
           ++h) {
        const bool busy = busy_.count(h->first) > 0;
        const bool shard = h->first.second.starts_with("shard:");
        const int rank = busy ? 3 : draining_.count(h->first) ? 0 : shard ? 1 : 2;
        ranked.push_back({rank, {h->first.second, h->second.epoch}});
      }
      std::stable_sort(ranked.begin(), ranked.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      ranked.resize(static_cast<size_t>(n - it->second));
      std::vector<std::pair<std::string, uint64_t>> units;
      for (const auto& [rank, u] : ranked) {
        if (rank == 3) {
          draining_.insert({channel, u.first});
          continue;
        }
        held_.erase({channel, u.first});
        draining_.erase({channel, u.first});
        units.push_back(u);
      }
      if (!units.empty()) give[channel] = std::move(units);
    }
  }
  for (const auto& [channel, units] : give) {
    std::vector<std::string> names, epochs;
    for (const auto& [u, e] : units) {
      names.push_back(u);
      epochs.push_back(std::to_string(e));
    }
    RETURN_IF_ERROR(
        pool_
            ->Exec(
                "WITH x AS (SELECT * FROM unnest($2::text[], $3::bigint[]) AS x(unit, epoch)), g "
                "AS (UPDATE icestream_lease l SET owner = NULL, expires_at = NULL FROM x WHERE "
                "l.channel_id = $1 AND l.unit = x.unit AND l.owner = $4 AND l.epoch = x.epoch "
                "RETURNING l.unit, l.epoch) INSERT INTO icestream_lease_history (channel_id, "
                "unit, owner, epoch, released) SELECT $1, unit, $4, epoch, true FROM g",
                {channel, TextArray(names), "{" + fmt::format("{}", fmt::join(epochs, ",")) + "}",
                 owner_})
            .status());
    spdlog::info(
        "scale-out: handed {} unit(s) of {} over (holding more than the channel's share of {})",
        units.size(), channel, share[channel]);
  }
  {
    std::lock_guard lock(mu_);
    if (!give.empty() || !draining_.empty()) return Status::OK();
  }
  // Free units, a channel's in the order of a hash of their names, up to the room this
  // process has in that channel's share; the rows are locked after ranking (FOR UPDATE
  // does not go with window functions).
  ASSIGN_OR_RETURN(
      auto taken,
      pool_->Exec(
          "WITH w AS (SELECT i.channel_id, count(*) AS n FROM icestream_interest i JOIN "
          "icestream_worker v ON v.worker_id = i.worker_id WHERE v.heartbeat_at > "
          "clock_timestamp() - $2::interval AND i.channel_id = ANY($3::text[]) GROUP BY "
          "i.channel_id), per AS (SELECT channel_id, count(*) AS units, count(*) FILTER (WHERE "
          "owner = $1 AND expires_at >= clock_timestamp()) AS mine FROM icestream_lease WHERE "
          "channel_id = ANY($3::text[]) GROUP BY channel_id), free AS (SELECT l.channel_id, "
          "l.unit, row_number() OVER (PARTITION BY l.channel_id ORDER BY md5(l.channel_id || '/' "
          "|| l.unit)) AS k, (p.units + greatest(1, coalesce(w.n, 0)) - 1) / greatest(1, "
          "coalesce(w.n, 0)) - p.mine AS room FROM icestream_lease l JOIN per p ON p.channel_id = "
          "l.channel_id LEFT JOIN w ON w.channel_id = l.channel_id WHERE l.owner IS NULL OR "
          "l.expires_at < clock_timestamp()), c AS (SELECT l.channel_id, l.unit FROM "
          "icestream_lease l JOIN free f ON f.channel_id = l.channel_id AND f.unit = l.unit "
          "WHERE f.k <= f.room AND (l.owner IS NULL OR l.expires_at < clock_timestamp()) FOR "
          "UPDATE OF l SKIP LOCKED), t AS (UPDATE icestream_lease l SET owner = $1, epoch = "
          "l.epoch + 1, expires_at = clock_timestamp() + $2::interval FROM c WHERE l.channel_id "
          "= c.channel_id AND l.unit = c.unit RETURNING l.channel_id, l.unit, l.epoch), h AS "
          "(INSERT INTO icestream_lease_history (channel_id, unit, owner, epoch) SELECT "
          "channel_id, unit, $1, epoch FROM t) SELECT channel_id, unit, epoch FROM t",
          {owner_, Interval(options_.lease_ms), offered}));
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < taken.rows(); ++i) {
      held_[{taken.text(i, 0), taken.text(i, 1)}] =
          Unit{static_cast<uint64_t>(taken.integer(i, 2))};
      spdlog::info("scale-out: took {} {} (epoch {})", taken.text(i, 0), taken.text(i, 1),
                   taken.integer(i, 2));
    }
  }
  if (taken.rows() > 0) taken_watchers_.CallAll();
  return Status::OK();
}

}  // namespace icestream::scaleout
