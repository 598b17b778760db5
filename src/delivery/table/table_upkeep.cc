// Table upkeep: compaction, snapshot expiry, orphan removal, on their own schedule.
#include "delivery/table/table_upkeep.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace icestream::delivery::table {

TableUpkeep::TableUpkeep(const ChannelConfig& config, TableSinkOptions options, SinkEnv env)
    : config_(config), options_(options), env_(std::move(env)) {
  CompactionOptions co;
  co.target_size = options_.target_file_size_bytes;
  co.cold_after_ms = options_.compaction_cold_after_ms;
  co.max_task_bytes = options_.target_file_size_bytes + options_.target_file_size_bytes / 2;
  SinkEnv log_env = env_;
  compactor_ = std::make_unique<Compactor>(config_.id, config_.arn, co, env_.clock,
                                           [log_env](nlohmann::json e) {
                                             if (log_env.log_event) log_env.log_event(std::move(e));
                                           });
  // The first scans come one interval after the start (as they did after the first commit).
  int64_t now = env_.clock->NowMillis();
  last_expiry_ms_ = now;
  last_orphan_scan_ms_ = now;
  last_compaction_ms_ = now;
}

void TableUpkeep::Appended(const iceberg::TableMetadata& after, int64_t snapshot,
                           const std::vector<iceberg::DataFile>& files) {
  compactor_->Appended(after, snapshot, files);
}

int64_t TableUpkeep::NextDueMs() const {
  int64_t due = std::min(last_expiry_ms_ + options_.expire_interval_ms,
                         last_orphan_scan_ms_ + options_.orphan_interval_ms);
  if (options_.compaction) {
    // A quiet table's partitions turn cold: look again a few times per cold interval.
    int64_t every = std::clamp<int64_t>(options_.compaction_cold_after_ms / 4, 1000, 60000);
    due = std::min(due, last_compaction_ms_ + every);
  }
  return due;
}

void TableUpkeep::Run(TableOwner* owner, const WriteTarget& target,
                      const format::parquet::WriterOptions& writer,
                      std::unique_lock<std::mutex>* unlocked) {
  iceberg::Table* table = owner->table();
  if (table == nullptr || running_) return;
  running_ = true;
  struct Done {
    bool* running;
    ~Done() { *running = false; }
  } done{&running_};
  auto io = owner->io();
  if (!io.ok()) return;
  runs_.fetch_add(1);
  const int64_t now = env_.clock->NowMillis();
  if (options_.compaction) {
    last_compaction_ms_ = now;
    int64_t budget = options_.compaction_budget_ms > 0
                         ? options_.compaction_budget_ms
                         : std::max<int64_t>(500, int64_t{config_.data_freshness_seconds} * 500);
    auto check = [owner](const iceberg::TableMetadata& m) { return owner->CheckUnchanged(m); };
    Status st = compactor_->Run(table, *io, target.layout(), writer, check, budget, unlocked);
    if (!st.ok()) {
      spdlog::warn("channel {}: compacting {}: {}", config_.name, owner->Label(), st.ToString());
      // Anything but a passing failure: its view of the table's files may be stale.
      if (ClassifyFailure(st) != FailureKind::kRetry) compactor_->Invalidate();
    }
  }
  ExpireSnapshots(owner);
  RemoveOrphans(owner, *io);
}

void TableUpkeep::ExpireSnapshots(TableOwner* owner) {
  int64_t now = env_.clock->NowMillis();
  if (now - last_expiry_ms_ < options_.expire_interval_ms) return;
  last_expiry_ms_ = now;
  iceberg::Table* table = owner->table();
  const iceberg::TableMetadata& m = table->metadata();
  auto prop = [&](const char* key, int64_t fallback) {
    auto it = m.properties.find(key);
    if (it == m.properties.end()) return fallback;
    char* end = nullptr;
    long long v = std::strtoll(it->second.c_str(), &end, 10);
    return end != it->second.c_str() && *end == '\0' && v >= 0 ? static_cast<int64_t>(v) : fallback;
  };
  iceberg::ExpireOptions eo;
  eo.older_than_ms = now - prop("history.expire.max-snapshot-age-ms", options_.snapshot_max_age_ms);
  eo.retain_last = static_cast<int>(std::max<int64_t>(
      1, prop("history.expire.min-snapshots-to-keep", options_.min_snapshots_to_keep)));
  // The snapshot that holds the channel's checkpoints stays: a restart resumes from it.
  for (const iceberg::Snapshot* s = m.CurrentSnapshot(); s != nullptr;
       s = s->parent_snapshot_id ? m.SnapshotById(*s->parent_snapshot_id) : nullptr) {
    auto own = s->summary.find(std::string(kOwnerProperty));
    if (own != s->summary.end() && own->second == config_.arn) {
      eo.keep.insert(s->snapshot_id);
      break;
    }
  }
  auto r = table->ExpireSnapshots(eo);
  if (!r.ok()) {
    spdlog::warn("channel {}: expiring snapshots of {}: {}", config_.name, owner->Label(),
                 r.status().ToString());
    return;
  }
  if (r->expired_snapshot_ids.empty()) return;
  snapshots_expired_.fetch_add(static_cast<int64_t>(r->expired_snapshot_ids.size()));
  spdlog::debug("channel {}: expired {} snapshot(s) of {}, deleted {} data file(s)", config_.name,
                r->expired_snapshot_ids.size(), owner->Label(), r->deleted_content_files);
  if (env_.log_event) {
    env_.log_event({{"eventType", "SnapshotsExpired"},
                    {"snapshots", r->expired_snapshot_ids.size()},
                    {"deletedDataFiles", r->deleted_content_files},
                    {"deletedManifests", r->deleted_manifests + r->deleted_manifest_lists}});
  }
}

void TableUpkeep::RemoveOrphans(TableOwner* owner, const iceberg::FileIO* io) {
  int64_t now = env_.clock->NowMillis();
  if (now - last_orphan_scan_ms_ < options_.orphan_interval_ms) return;
  last_orphan_scan_ms_ = now;
  // The staged files are read before the table's files are listed: a staged file
  // committed in between is then kept as staged (read after, it could be missed both as
  // staged and as referenced).
  std::set<std::string> kept;
  if (kept_) {
    auto k = kept_();
    if (!k.ok()) {
      spdlog::warn("channel {}: listing the staged files of {} (orphan scan skipped): {}",
                   config_.name, owner->Label(), k.status().ToString());
      return;
    }
    kept = std::move(*k);
  }
  auto orphans = owner->table()->ListOrphanFiles(now - options_.orphan_age_ms);
  if (!orphans.ok()) {
    spdlog::warn("channel {}: listing orphan files of {}: {}", config_.name, owner->Label(),
                 orphans.status().ToString());
    return;
  }
  // Only the channel's own data files: files of other writers are theirs to clean.
  int removed = 0;
  for (const auto& f : *orphans) {
    if (kept.count(f.location)) continue;
    size_t slash = f.location.rfind('/');
    std::string_view name =
        std::string_view(f.location).substr(slash == std::string::npos ? 0 : slash + 1);
    bool ours =
        f.location.find("/data/") != std::string::npos && name.starts_with(config_.id + "-");
    // Manifests and manifest lists nothing references (an expiry cut short by a crash).
    bool manifest = f.location.find("/metadata/") != std::string::npos && name.ends_with(".avro");
    if (!ours && !manifest) continue;
    if (io->Delete(f.location).ok()) ++removed;
  }
  if (removed > 0) {
    orphans_removed_.fetch_add(removed);
    spdlog::info(
        "channel {}: removed {} unreferenced file(s) of {} (attempts that never committed)",
        config_.name, removed, owner->Label());
    if (env_.log_event) env_.log_event({{"eventType", "OrphansRemoved"}, {"files", removed}});
  }
}

}  // namespace icestream::delivery::table
