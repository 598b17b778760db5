// The streaming-table sink: one channel's table, composed of its parts —
//   TableOwner      the table in the catalog (create, load, ownership checks, notes)
//   SchemaFollower  the immutable WriteTarget each batch is written with, and evolution
//   BatchWriter     records → Parquet files and DLQ rejects (converter threads, uploader)
//   TableCommitter  one fenced append per batch, checkpoints in the snapshot summary
//   TableUpkeep     compaction, snapshot expiry, orphan removal, on their own schedule
// This file only orders them: a batch's target is fixed before conversion starts (the
// uploader thread may create the table when the first file is cut, but it never touches
// the target or the writer the converters use), the DLQ is written before the commit
// that moves past the rejected records, and upkeep runs after a commit or when due.
// With staging (a scale-out pool, staging.h) a batch holds one shard and ends staged
// instead of committed; the owner's part (evolve, commit, upkeep) runs in CommitStaged
// where the control unit is held, and a shard writer asks it for a schema through a
// request and retries (the first writer with a valid row creates the table itself).
#include "delivery/table/table_sink.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>

#include "common/crypto.h"
#include "delivery/dlq.h"
#include "delivery/table/batch_writer.h"
#include "delivery/table/gsr_frame.h"
#include "delivery/table/schema_follower.h"
#include "delivery/table/schema_versions.h"
#include "delivery/table/table_committer.h"
#include "delivery/table/table_layout.h"
#include "delivery/table/table_owner.h"
#include "delivery/table/table_upkeep.h"
#include "format/parquet/file_writer.h"
#include "iceberg/parquet/data_file.h"
#include "iceberg/table.h"

namespace icestream::delivery::table {

namespace {

namespace pq = format::parquet;

pq::Codec CodecOf(TableCompression c) {
  switch (c) {
    case TableCompression::kNone:
      return pq::Codec::kUncompressed;
    case TableCompression::kZstd:
      return pq::Codec::kZstd;
    case TableCompression::kSnappy:
      return pq::Codec::kSnappy;
  }
  return pq::Codec::kZstd;
}

// Deletes the files named when dropped, unless dismissed. Thread-safe (the uploader
// thread adds, the batch thread deletes).
class Cleanup {
 public:
  explicit Cleanup(const iceberg::FileIO* io) : io_(io) {}
  ~Cleanup() { DeleteNow(); }
  void Add(std::string path) {
    std::lock_guard lock(mu_);
    paths_.push_back(std::move(path));
  }
  void Dismiss() {
    std::lock_guard lock(mu_);
    paths_.clear();
  }
  void DeleteNow() {
    std::lock_guard lock(mu_);
    for (const auto& p : paths_) (void)io_->Delete(p);
    paths_.clear();
  }

 private:
  const iceberg::FileIO* io_;
  std::mutex mu_;
  std::vector<std::string> paths_;
};

// What the decoder of one batch pass shares across converter threads: the version a
// GSR_JSON record needs the table to evolve to first (the first one found wins).
class EvolveRequest {
 public:
  void Set(std::shared_ptr<const SchemaVersion> v) {
    std::lock_guard lock(mu_);
    if (!v_) v_ = std::move(v);
  }
  std::shared_ptr<const SchemaVersion> Get() const {
    std::lock_guard lock(mu_);
    return v_;
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const SchemaVersion> v_;
};

}  // namespace

class TableSink final : public Sink {
 public:
  TableSink(const ChannelConfig& config, TableServices services, TableSinkOptions options,
            SinkEnv env)
      : config_(config),
        options_(options),
        env_(env),
        lookup_(services.versions ? services.versions
                                  : std::make_shared<RegistryVersions>(services.registry)),
        versions_(lookup_.get(), config_.gsr_schema_arn, config_.table().partition_fields.at(0)),
        owner_(config_, services, options, env),
        follower_(config_, &versions_, env),
        committer_(config_, env),
        upkeep_(config_, options, env),
        staging_(services.staging) {
    if (staging_) {
      // A batch staged anywhere brings the commit forward (not past its next look), after a
      // tenth of the freshness interval (at least staged_commit_gather_ms), in which the
      // other shards' batches of the same tick are staged too.
      const int64_t gather =
          std::min<int64_t>(options_.staged_commit_interval_ms,
                            std::max<int64_t>(options_.staged_commit_gather_ms,
                                              int64_t{config_.data_freshness_seconds} * 100));
      staged_watch_ = staging_->Watch(config_.id, [this, gather] {
        const int64_t due = env_.clock->NowMillis() + gather;
        int64_t cur = next_commit_ms_.load();
        while (due < cur && !next_commit_ms_.compare_exchange_weak(cur, due)) {
        }
      });
      owner_.SetShared(true);
      upkeep_.SetKept([this]() -> Result<std::set<std::string>> {
        ASSIGN_OR_RETURN(auto staged, staging_->Staged(config_.id));
        std::set<std::string> paths;
        for (const auto& b : staged) {
          for (const auto& f : b.files) paths.insert(f.file_path);
        }
        return paths;
      });
    }
    writer_options_.codec = CodecOf(config_.table().compression);
    writer_options_.compression_level = env_.compression_level;
    writer_options_.threads = 1;
    writer_options_.row_group_size = options_.row_group_bytes;
  }

  Status Init(std::shared_ptr<const SchemaVersion> pinned) {
    pinned_ = pinned;
    ASSIGN_OR_RETURN(target_, follower_.Initial(std::move(pinned)));
    return Status::OK();
  }

  // A scale-out worker's lease: every write to the table (appends, schema changes,
  // compaction, expiry) carries it.
  void SetFence(const iceberg::CommitFence* fence) {
    std::lock_guard lock(mu_);
    fence_ = fence;
    committer_.SetFence(fence);
    follower_.SetFence(fence);
    if (iceberg::Table* t = owner_.table()) t->SetFence(fence);
  }

  bool spans_shards() const override { return staging_ == nullptr; }
  bool staged() const override { return staging_ != nullptr; }
  int64_t NextCommitMs() const override { return staging_ ? next_commit_ms_.load() : INT64_MAX; }
  Result<DeliveryCounts> CommitStaged() override;

  Status Check() override {
    std::lock_guard lock(mu_);
    RETURN_IF_ERROR(owner_.CheckWarehouse());
    ASSIGN_OR_RETURN(std::string dlq_bucket, objectstore::BucketFromArn(config_.dlq.bucket_arn));
    objectstore::ReadOptions ro;
    if (!env_.local_buckets) ro.expected_bucket_owner = config_.dlq.expected_bucket_owner;
    if (Status st = env_.buckets->CheckBucket(dlq_bucket, ro); !st.ok()) {
      return st.WithContext("dead-letter queue bucket " + dlq_bucket);
    }
    return LoadTable();
  }

  Result<std::map<std::string, Position>> Checkpoints() override {
    std::lock_guard lock(mu_);
    RETURN_IF_ERROR(LoadTable());
    iceberg::Table* table = owner_.table();
    if (table == nullptr) return std::map<std::string, Position>{};
    RETURN_IF_ERROR(owner_.Refresh());
    return owner_.Checkpoints(table->metadata());
  }

  Result<std::optional<RedriveProgress>> HeldRedrive() override {
    std::lock_guard lock(mu_);
    RETURN_IF_ERROR(LoadTable());
    iceberg::Table* table = owner_.table();
    if (table == nullptr) return std::optional<RedriveProgress>();
    RETURN_IF_ERROR(owner_.Refresh());
    return owner_.HeldRedrive(table->metadata());
  }

  Result<DeliveryCounts> Deliver(const DeliveryBatch& batch, RecordSource* source) override;

  int64_t NextUpkeepMs() const override {
    const int64_t kept = workspace_used_ms_.load();
    const int64_t release = kept > 0 ? kept + kWorkspaceIdleMs : INT64_MAX;
    std::lock_guard lock(mu_);
    return std::min(release, owner_.exists() ? upkeep_.NextDueMs() : INT64_MAX);
  }

  void Upkeep() override {
    const int64_t now = env_.clock->NowMillis();
    const int64_t kept = workspace_used_ms_.load();
    if (kept > 0 && now >= kept + kWorkspaceIdleMs) ReleaseWorkspace();
    std::lock_guard lock(mu_);
    if (!owner_.exists() || now < upkeep_.NextDueMs()) return;  // only the workspace was due
    if (!LoadTable().ok() || !owner_.exists()) return;
    if (!owner_.Refresh().ok()) return;
    upkeep_.Run(&owner_, *target_, writer_options_);
    owner_.NoteMetadata(owner_.table()->metadata());
  }

  std::vector<SinkMetric> Metrics() const override {
    const CompactionStats& c = upkeep_.compaction();
    TableOwner::Facts f = owner_.facts();
    return {
        {"table_live_data_files", "gauge", "Data files of the table's current snapshot.",
         static_cast<double>(c.live_files.load() > 0 ? c.live_files.load() : f.live_files)},
        {"table_live_data_bytes", "gauge",
         "Bytes of the data files of the table's current snapshot.",
         static_cast<double>(c.live_files.load() > 0 ? c.live_bytes.load() : f.live_bytes)},
        {"table_compaction_files_merged_total", "counter", "Data files replaced by compaction.",
         static_cast<double>(c.files_merged.load())},
        {"table_compaction_files_copied_as_is_total", "counter",
         "Data files compaction merged by copying their row groups as they are (no decoding).",
         static_cast<double>(c.files_copied_as_is.load())},
        {"table_compaction_files_written_total", "counter", "Data files compaction wrote.",
         static_cast<double>(c.files_written.load())},
        {"table_compaction_bytes_rewritten_total", "counter",
         "Bytes of the data files compaction wrote.",
         static_cast<double>(c.bytes_rewritten.load())},
        {"table_compaction_commits_total", "counter", "Compaction (replace) commits.",
         static_cast<double>(c.commits.load())},
        {"table_write_amplification", "gauge",
         "Data file bytes written (appends and compaction) per byte the appends wrote.",
         c.write_amplification()},
        {"table_snapshots_expired_total", "counter", "Snapshots removed by expiry.",
         static_cast<double>(upkeep_.snapshots_expired())},
        {"table_orphan_files_removed_total", "counter",
         "Unreferenced files deleted by the orphan cleanup.",
         static_cast<double>(upkeep_.orphans_removed())},
    };
  }

  nlohmann::json StatusJson() const override {
    TableOwner::Facts f = owner_.facts();
    nlohmann::json j = {{"Table", owner_.Label()},
                        {"TableCreated", f.created},
                        {"LiveDataFiles", f.live_files},
                        {"CommitCount", commits_.load()},
                        {"SchemaVersion", version_number_.load()}};
    int64_t last = last_commit_ms_.load();
    if (last > 0) j["LastCommitTimestamp"] = static_cast<double>(last) / 1000.0;
    if (!f.location.empty()) j["TableLocation"] = f.location;
    std::string ignored = follower_.ignored_version();
    if (!ignored.empty()) j["IgnoredSchemaVersion"] = ignored;
    j["SnapshotsExpired"] = upkeep_.snapshots_expired();
    j["OrphanFilesRemoved"] = upkeep_.orphans_removed();
    j["UpkeepRuns"] = upkeep_.runs();
    const CompactionStats& c = upkeep_.compaction();
    // The compactor's index when it has one, else the current snapshot's summary totals
    // (compaction off, or before the index is built).
    if (c.live_files.load() > 0) {
      j["LiveDataFiles"] = c.live_files.load();
      j["MeanDataFileBytes"] = c.live_bytes.load() / c.live_files.load();
    } else if (f.live_files > 0) {
      j["MeanDataFileBytes"] = f.live_bytes / f.live_files;
    }
    j["Compaction"] = {{"FilesMerged", c.files_merged.load()},
                       {"FilesCopiedAsIs", c.files_copied_as_is.load()},
                       {"FilesWritten", c.files_written.load()},
                       {"BytesRewritten", c.bytes_rewritten.load()},
                       {"Commits", c.commits.load()},
                       {"WriteAmplification", c.write_amplification()}};
    return j;
  }

 private:
  void Log(nlohmann::json event) {
    if (env_.log_event) env_.log_event(std::move(event));
  }

  // Loads the table if it exists and adopts the target it implies (mu_ held).
  Status LoadTable() {
    bool had = owner_.exists();
    ASSIGN_OR_RETURN(auto followed, owner_.Load());
    if (!followed) return Status::OK();
    if (!had) upkeep_.Invalidate();
    ASSIGN_OR_RETURN(auto t, follower_.ForTable(&owner_, *followed, target_));
    SetTarget(std::move(t));
    return Status::OK();
  }

  void SetTarget(std::shared_ptr<const WriteTarget> t) {
    target_ = std::move(t);
    version_number_.store(target_->version().number);
  }

  // The table as it is now, and the target it implies (mu_ held).
  Status RefreshTable() {
    RETURN_IF_ERROR(LoadTable());
    if (!owner_.exists()) return Status::OK();
    RETURN_IF_ERROR(owner_.Refresh());
    return LoadTable();
  }

  // After an append of the channel (mu_ held): the compactor learns the files, the status
  // and the delivery log the commit (`detail` adds to the CommitSucceeded event), and
  // upkeep runs within its budget. `staged` (a pool's staged commit: the lock on mu_) is
  // let go while compaction merges files, so the shards' writers, which take mu_ before
  // and after they convert, do not wait for a merge.
  void Committed(const iceberg::CommitResult& r, const std::vector<iceberg::DataFile>& files,
                 nlohmann::json detail, std::unique_lock<std::mutex>* staged = nullptr) {
    const iceberg::TableMetadata& m = owner_.table()->metadata();
    upkeep_.Appended(m, r.snapshot_id, files);
    commits_.fetch_add(1);
    last_commit_ms_.store(env_.clock->NowMillis());
    nlohmann::json event = {
        {"eventType", "CommitSucceeded"}, {"destination", owner_.table()->metadata_location()},
        {"snapshotId", r.snapshot_id},    {"sequenceNumber", r.sequence_number},
        {"files", files.size()},          {"attempts", r.attempts}};
    event.update(detail);
    Log(std::move(event));
    // Its own reference: a writer may replace target_ while mu_ is let go.
    const std::shared_ptr<const WriteTarget> target = target_;
    upkeep_.Run(&owner_, *target, writer_options_, staged);
    owner_.NoteMetadata(owner_.table()->metadata());
  }

  // A staged batch: one shard's records written and staged. `lock` holds mu_ on entry; it
  // is let go while the records are converted into a table that exists, and for the DLQ
  // and the staging, so the shards' batches of one process convert side by side (only the
  // first batch of a new table writes under the lock: it creates the table).
  Result<DeliveryCounts> DeliverStaged(const DeliveryBatch& batch, RecordSource* source,
                                       std::unique_lock<std::mutex>* lock);
  // The records of `batch` into files (uploaded, named for `attempt`) and rejects (mu_
  // held). `staged` (a shard writer's lock on mu_; null on one server): a table that does
  // not exist yet, or a schema it must evolve to, is asked of the owner (kUnavailable: the
  // batch is retried once the owner made it), and a pass into a table that exists
  // converts with mu_ let go: its threads touch nothing of the sink but the pass's target
  // and file locator.
  Status WriteRecords(const DeliveryBatch& batch, RecordSource* source, const iceberg::FileIO* io,
                      Cleanup* cleanup, BatchOutput* out,
                      std::unique_lock<std::mutex>* staged = nullptr);
  // The batch's rejects to the DLQ, and a redrive batch's report (before any commit).
  Status WriteDlq(const DeliveryBatch& batch, const BatchOutput& out, RecordSource* source,
                  DeliveryCounts* counts, std::optional<RedriveProgress>* redrive_after);
  // The owner's side of a shard writer's request: the table created from the version,
  // or evolved to it (mu_ held).
  Status ServeRequests();
  // A shard writer's first file of a table that did not exist when its pass began: the
  // table is created here from the target (a creation races only other writers of the
  // channel, and the catalog lets one win), and the file is placed if the table has
  // exactly the target's schema (the same version's canonical ids: what was converted
  // fits); a table another writer made from another version first: kUnavailable, and the
  // batch is retried with the table's schema. Uploader thread.
  Status CreateForStaged(const WriteTarget& target) {
    RETURN_IF_ERROR(owner_.CreateIfMissing(target.layout(), target.version()));
    iceberg::Table* t = owner_.table();
    const iceberg::Schema* schema = t ? t->metadata().CurrentSchema() : nullptr;
    if (schema != nullptr && schema->fields == target.layout().schema.schema.fields) {
      return Status::OK();
    }
    return Unavailable(fmt::format(
        "table {} was created by another shard's writer with another schema; the batch is "
        "written again with the table's",
        owner_.Label()));
  }
  // A shard writer's deferral: ask the owner for `version` and retry.
  Status AskOwner(const SchemaVersion& version, const char* what) {
    RETURN_IF_ERROR(staging_->Request(config_.id, version.id));
    return Unavailable(fmt::format(
        "waiting for the holder of the channel's control unit to {} table {} (schema version "
        "{}); the batch is retried",
        what, owner_.Label(), version.number));
  }

  // Decodes one record into the block (or a rejection) for the batch pass writing with
  // `target`. A GSR_JSON record of a version the table must evolve to first stops the
  // batch (`evolve` says which). Runs on converter threads: reads only `target` (whose
  // fit cache is thread-safe), the versions cache and constants.
  Status Decode(const WriteTarget& target, EvolveRequest* evolve, const SourceRecord& rec,
                size_t range, BlockOwner* owner, schema::ConvertBlock* block) {
    owner->records_in++;
    owner->bytes_in += rec.data.size();
    auto reject = [&](const char* code, std::string message) {
      Reject r{range,
               std::string(rec.sequence_number),
               rec.ordinal,
               rec.sub_sequence,
               rec.arrival_ms,
               code,
               std::move(message)};
      if (config_.dlq.include_record_data) {
        r.partition_key = rec.partition_key;
        r.data = rec.data;
      }
      owner->rejects.push_back(std::move(r));
    };
    if (!rec.error.empty()) {
      reject("DESERIALIZATION_ERROR", rec.error);
      return Status::OK();
    }
    std::string_view text = rec.data;
    if (config_.record_format == RecordFormat::kGsrJson) {
      auto frame = ParseGsrFrame(rec.data, options_.max_payload_bytes);
      if (!frame.ok()) {
        const bool framed = !rec.data.empty() && static_cast<unsigned char>(rec.data[0]) == 0x03;
        reject(framed ? "DESERIALIZATION_ERROR" : "INVALID_SCHEMA",
               "The channel's RecordFormatType is GSR_JSON: " + frame.status().message() + ".");
        return Status::OK();
      }
      ASSIGN_OR_RETURN(auto version, versions_.ById(frame->schema_version_id));
      FitResult fit = target.Fit(*version, config_.gsr_schema_arn, owner_.Label());
      if (fit.fit == Fit::kIncompatible) {
        std::string reason = fit.reason;
        if (!reason.empty()) {
          reason[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(reason[0])));
        }
        reject("INVALID_SCHEMA", reason + ".");
        return Status::OK();
      }
      if (fit.fit == Fit::kNeedsEvolution) {
        evolve->Set(version);
        return Conflict("the table's schema must evolve before this batch");
      }
      if (frame->compressed) {
        owner->made.push_back(std::move(frame->inflated));
        text = owner->made.back();
      } else {
        text = frame->raw;
      }
    } else if (LooksGsrFramed(rec.data)) {
      reject("DESERIALIZATION_ERROR",
             "The record carries a Glue Schema Registry header; the channel's RecordFormatType is "
             "JSON (use GSR_JSON for records written by the GSR serializer).");
      return Status::OK();
    }
    block->records.push_back(text);
    owner->origins.push_back({range, rec.sequence_number, rec.ordinal, rec.arrival_ms,
                              rec.sub_sequence, rec.data.size(), rec.partition_key, rec.data});
    return Status::OK();
  }

  const ChannelConfig config_;
  const TableSinkOptions options_;
  const SinkEnv env_;
  std::shared_ptr<VersionLookup> lookup_;
  SchemaVersions versions_;
  pq::WriterOptions writer_options_;

  mutable std::mutex mu_;  // one delivery, upkeep, check or checkpoint read at a time
  TableOwner owner_;
  SchemaFollower follower_;
  TableCommitter committer_;
  TableUpkeep upkeep_;
  std::shared_ptr<const WriteTarget> target_;    // replaced between passes, never during one
  std::shared_ptr<const SchemaVersion> pinned_;  // the version the channel was created with
  const iceberg::CommitFence* fence_ = nullptr;  // the control unit's (null: unfenced)
  const std::shared_ptr<StagingStore> staging_;
  std::atomic<int64_t> next_commit_ms_{0};
  // A shard writer's evolutions (staged mode): asked of the control unit's holder, whose
  // ServeRequests makes them.
  const SchemaFollower::Defer ask_owner_ = [this](const SchemaVersion& v) {
    return AskOwner(v, "evolve");
  };

  // An emptied file buffer kept from one batch of a backlog for the next (BatchWorkspace):
  // only after a batch of at least kWorkspaceBatchBytes (a small batch frees it: a trickle
  // keeps nothing), and freed by Upkeep once no batch used it for kWorkspaceIdleMs (where
  // upkeep runs: the holder of the channel's control unit; elsewhere at the next batch).
  static constexpr uint64_t kWorkspaceBatchBytes = 16u << 20;
  static constexpr int64_t kWorkspaceIdleMs = 10000;
  void ReleaseWorkspace() {
    workspace_used_ms_.store(0);
    workspace_.Release();
  }
  BatchWorkspace workspace_;
  std::atomic<int64_t> workspace_used_ms_{0};  // 0: nothing kept

  std::atomic<int64_t> commits_{0};
  std::atomic<int64_t> last_commit_ms_{0};
  std::atomic<int64_t> version_number_{0};
  // Last: released first, so the watcher (which uses the members above) never outlives them.
  std::shared_ptr<void> staged_watch_;
};

Status TableSink::WriteRecords(const DeliveryBatch& batch, RecordSource* source,
                               const iceberg::FileIO* io, Cleanup* cleanup, BatchOutput* out,
                               std::unique_lock<std::mutex>* staged) {
  const std::string attempt = crypto::RandomUuid().substr(0, 8);
  std::atomic<int> file_no{0};
  for (int pass = 1;; ++pass) {
    // The target of this pass: fixed now, for every thread of the pass.
    const std::shared_ptr<const WriteTarget> target = target_;
    const bool table_existed = owner_.exists();
    // Into a table that exists, files are named from a copy of its locations: the pass
    // may run without mu_ while the handle is refreshed by a commit.
    std::optional<iceberg::DataFileLocator> locator;
    if (table_existed) locator = owner_.table()->Locator();
    EvolveRequest evolve;
    // Uploader thread: the first file of a new table creates the table from this pass's
    // target (canonical ids: a catalog assigns the same), and never changes the target.
    // A shard writer checks that the table it finds has the target's schema.
    auto place_file = [&](int64_t hour, const std::string& bytes,
                          const pq::FileMetrics& m) -> Result<iceberg::DataFile> {
      if (!locator) {
        if (staged) RETURN_IF_ERROR(CreateForStaged(*target));
        RETURN_IF_ERROR(owner_.CreateIfMissing(target->layout(), target->version()));
        locator = owner_.table()->Locator();
      }
      iceberg::PartitionTuple part = {iceberg::Literal::Int(static_cast<int32_t>(hour))};
      std::string path = locator->Location(
          part, fmt::format("{}-{}-{:05d}.parquet", config_.id, attempt, file_no.fetch_add(1)));
      cleanup->Add(path);
      RETURN_IF_ERROR(io->Write(path, bytes));
      return iceberg::ParquetDataFile(m, path, part, locator->spec.spec_id);
    };
    auto decode = [&](const SourceRecord& rec, size_t range, BlockOwner* owner,
                      schema::ConvertBlock* block) {
      return Decode(*target, &evolve, rec, range, owner, block);
    };
    BatchWriterOptions wo;
    wo.target_file_size_bytes = options_.target_file_size_bytes;
    wo.max_buffered_bytes = options_.max_buffered_bytes;
    wo.convert_threads = options_.convert_threads;
    wo.block_bytes = options_.block_bytes;
    wo.block_records = options_.block_records;
    wo.writer = writer_options_;
    wo.keep_rejected_data = config_.dlq.include_record_data;
    for (const auto& r : batch.ranges) wo.expected_records += r.records;
    wo.workspace = &workspace_;
    BatchWriter writer(&target->layout(), &target->parquet(), wo);
    const bool unlocked = staged != nullptr && table_existed;
    if (unlocked) staged->unlock();
    Status st = writer.Run(source, decode, place_file, out);
    if (unlocked) staged->lock();
    if (st.ok() && out->counts.bytes_in >= kWorkspaceBatchBytes) {
      workspace_used_ms_.store(env_.clock->NowMillis());
    } else {
      ReleaseWorkspace();
    }
    if (st.ok()) return Status::OK();
    auto wanted = evolve.Get();
    if (!wanted || st.code() != StatusCode::kConflict || pass > 8) return st;
    // A record of a newer compatible version: the table evolves, then the batch starts over.
    cleanup->DeleteNow();
    if (owner_.exists()) RETURN_IF_ERROR(LoadTable());  // the first pass may have made it
    ASSIGN_OR_RETURN(auto evolved, follower_.Evolve(&owner_, target_, wanted,
                                                    staged ? ask_owner_ : SchemaFollower::Defer{}));
    SetTarget(std::move(evolved));
    RETURN_IF_ERROR(source->Rewind());
  }
}

Status TableSink::WriteDlq(const DeliveryBatch& batch, const BatchOutput& out, RecordSource* source,
                           DeliveryCounts* counts, std::optional<RedriveProgress>* redrive_after) {
  const RedriveSpan* redrive = batch.redrive.get();
  ASSIGN_OR_RETURN(std::string dlq_bucket, objectstore::BucketFromArn(config_.dlq.bucket_arn));
  objectstore::PutOptions dlq_opts;
  dlq_opts.content_type = "application/x-ndjson";
  if (!env_.local_buckets) dlq_opts.expected_bucket_owner = config_.dlq.expected_bucket_owner;
  DlqBatch dlq(&config_, batch.attempt_ms, redrive);
  if (!out.rejects.empty()) {
    for (const auto& r : out.rejects) {
      DlqRecord d;
      d.shard_id = batch.ranges[r.range].shard;
      d.sequence_number = r.sequence_number;
      d.ordinal = r.ordinal;
      d.arrival_ms = r.arrival_ms;
      if (r.sub_sequence) d.sub_sequence = *r.sub_sequence;
      d.error_code = r.code;
      d.error_message = r.message;
      d.path = r.path;
      d.partition_key = r.partition_key;
      d.data = r.data;
      dlq.Add(d);
    }
    counts->rejects = dlq.summary();
    auto obj = dlq.Finish();
    if (Status st = env_.buckets->Put(dlq_bucket, obj->key, obj->body, dlq_opts); !st.ok()) {
      Log({{"eventType", "DLQWriteFailed"}, {"errorMessage", st.message()}});
      return st.WithContext("Writing to the dead-letter queue failed");
    }
    counts->dlq_records = obj->records;
    Log({{"eventType", "DLQWrite"},
         {"destination", "s3://" + dlq_bucket + "/" + obj->key},
         {"records", obj->records}});
  }
  if (redrive) {
    RedriveBatchOutcome outcome = RedriveReport(*redrive, source->Missing(), dlq.redrive_rejects());
    std::string report_key = ReportKey(config_, redrive->id, redrive->from);
    if (Status st = env_.buckets->Put(dlq_bucket, report_key, outcome.report, dlq_opts); !st.ok()) {
      return st.WithContext("Writing the redrive's report failed");
    }
    *redrive_after = outcome.after;
    counts->redrive = outcome.after;
  }
  return Status::OK();
}

Result<DeliveryCounts> TableSink::Deliver(const DeliveryBatch& batch, RecordSource* source) {
  std::unique_lock lock(mu_);
  if (staging_ && !batch.redrive) return DeliverStaged(batch, source, &lock);
  RETURN_IF_ERROR(owner_.CheckWarehouse());
  RETURN_IF_ERROR(LoadTable());
  const RedriveSpan* redrive = batch.redrive.get();
  if (iceberg::Table* table = owner_.table()) {
    RETURN_IF_ERROR(owner_.Refresh());
    if (staging_) RETURN_IF_ERROR(LoadTable());  // the target of what another shard made
    // A replay of a batch whose commit landed (its outcome was unknown): nothing to do.
    if (redrive) {
      auto held = owner_.HeldRedrive(table->metadata());
      if (held && held->id == redrive->id && held->next >= redrive->to) {
        DeliveryCounts done;
        done.redrive = *held;
        return done;
      }
    } else {
      auto held = owner_.Checkpoints(table->metadata());
      bool all_in = std::all_of(batch.ranges.begin(), batch.ranges.end(), [&](const ShardRange& r) {
        auto it = held.find(r.shard);
        return it != held.end() && !(it->second < r.end());
      });
      if (all_in && !batch.ranges.empty()) return DeliveryCounts{};
    }
  }
  if (config_.record_format == RecordFormat::kJson) {
    ASSIGN_OR_RETURN(auto t, follower_.FollowLatest(&owner_, target_));
    SetTarget(std::move(t));
  }
  ASSIGN_OR_RETURN(const iceberg::FileIO* io, owner_.io());
  Cleanup cleanup(io);
  BatchOutput out;
  RETURN_IF_ERROR(WriteRecords(batch, source, io, &cleanup, &out));
  DeliveryCounts counts = out.counts;

  // The dead-letter queue (and a redrive's report) before the commit that moves past the
  // rejected records.
  std::optional<RedriveProgress> redrive_after;
  RETURN_IF_ERROR(WriteDlq(batch, out, source, &counts, &redrive_after));
  if (out.files.empty()) return counts;  // nothing valid: the checkpoint moves in the store only

  // A table made by this batch: its target is the one the files were written with.
  RETURN_IF_ERROR(LoadTable());
  bool keep_files = false;
  auto committed = committer_.Commit(&owner_, batch, out.files, redrive_after, &keep_files);
  if (!committed.ok()) {
    if (keep_files) cleanup.Dismiss();  // the commit may reference them
    return committed.status();
  }
  if (committed->already_in) {  // our files are unreferenced: deleted
    DeliveryCounts done;
    done.redrive = committed->held_redrive;
    return done;
  }
  cleanup.Dismiss();
  counts.deliveries = 1;
  Committed(committed->result, out.files,
            {{"records", counts.delivered}, {"bytes", counts.bytes_out}});
  return counts;
}

Result<DeliveryCounts> TableSink::DeliverStaged(const DeliveryBatch& batch, RecordSource* source,
                                                std::unique_lock<std::mutex>* lock) {
  if (batch.ranges.size() != 1) return Internal("a staged table batch holds one shard");
  const ShardRange& range = batch.ranges[0];
  RETURN_IF_ERROR(owner_.CheckWarehouse());
  RETURN_IF_ERROR(RefreshTable());
  if (iceberg::Table* table = owner_.table()) {
    // Committed already (a replay after its commit landed): nothing to do.
    auto held = owner_.Checkpoints(table->metadata());
    auto it = held.find(range.shard);
    if (it != held.end() && !(it->second < range.end())) return DeliveryCounts{};
  }
  // The owner evolves the table; this process only asks.
  if (config_.record_format == RecordFormat::kJson) {
    ASSIGN_OR_RETURN(auto t, follower_.FollowLatest(&owner_, target_, ask_owner_));
    SetTarget(std::move(t));
  }
  ASSIGN_OR_RETURN(const iceberg::FileIO* io, owner_.io());
  Cleanup cleanup(io);
  BatchOutput out;
  RETURN_IF_ERROR(WriteRecords(batch, source, io, &cleanup, &out, lock));
  DeliveryCounts counts = out.counts;
  // The rest touches nothing of the sink's (the DLQ, the staging store, the delivery log).
  lock->unlock();
  RETURN_IF_ERROR(WriteDlq(batch, out, source, &counts, nullptr));
  if (out.files.empty()) return counts;  // nothing valid: the checkpoint moves in the store only

  StagedBatch staged{range.shard, range.after, range.last_sequence, counts.delivered, out.files};
  auto fresh = staging_->Stage(config_.id, staged);
  if (!fresh.ok()) {
    if (fresh.status().code() == StatusCode::kUnknownOutcome) {
      cleanup.Dismiss();  // the row may name them; if not, the orphan cleanup takes them
      return Unavailable("staging the batch's files: " + fresh.status().message());
    }
    return fresh.status().WithContext("staging the batch's files");
  }
  if (!*fresh) return DeliveryCounts{};  // staged by an earlier attempt; these files go
  cleanup.Dismiss();
  Log({{"eventType", "BatchStaged"},
       {"shardId", range.shard},
       {"files", out.files.size()},
       {"records", counts.delivered},
       {"bytes", counts.bytes_out}});
  return counts;
}

Status TableSink::ServeRequests() {
  ASSIGN_OR_RETURN(auto ids, staging_->Requests(config_.id));
  for (const auto& id : ids) {
    auto v = versions_.ById(id);
    if (!v.ok() && v.status().code() != StatusCode::kNotFound) return v.status();
    if (v.ok() && (*v)->usable) {
      RETURN_IF_ERROR(RefreshTable());
      if (!owner_.exists()) {
        // As the writer's target was: the pinned version, evolved to the one asked for.
        ASSIGN_OR_RETURN(auto t, follower_.Initial(pinned_));
        if ((*v)->id != t->version().id) {
          ASSIGN_OR_RETURN(t, follower_.Evolve(&owner_, t, *v));
        }
        RETURN_IF_ERROR(owner_.CreateIfMissing(t->layout(), t->version()));
        RETURN_IF_ERROR(LoadTable());
      } else if (target_->Fit(**v, config_.gsr_schema_arn, owner_.Label()).fit ==
                 Fit::kNeedsEvolution) {
        ASSIGN_OR_RETURN(auto evolved, follower_.Evolve(&owner_, target_, *v));
        SetTarget(std::move(evolved));
      }
    }
    RETURN_IF_ERROR(staging_->DoneRequest(config_.id, id));
  }
  return Status::OK();
}

Result<DeliveryCounts> TableSink::CommitStaged() {
  if (!staging_) return DeliveryCounts{};
  std::unique_lock lock(mu_);
  next_commit_ms_.store(env_.clock->NowMillis() + options_.staged_commit_interval_ms);
  RETURN_IF_ERROR(owner_.CheckWarehouse());
  RETURN_IF_ERROR(ServeRequests());
  ASSIGN_OR_RETURN(std::vector<StagedBatch> staged, staging_->Staged(config_.id));
  if (staged.empty()) return DeliveryCounts{};
  RETURN_IF_ERROR(RefreshTable());
  iceberg::Table* table = owner_.table();
  if (table == nullptr) return Internal("files are staged for a table that does not exist");
  // Each shard's batches in order from what the table holds: one already held is a
  // replay staged after its commit (dropped); one that starts inside what the table holds
  // would repeat records.
  std::sort(staged.begin(), staged.end(), [](const StagedBatch& a, const StagedBatch& b) {
    return a.shard != b.shard ? a.shard < b.shard : a.after < b.after;
  });
  std::map<std::string, Position> reach = owner_.Checkpoints(table->metadata());
  std::vector<StagedBatch> commit, stale;
  for (auto& b : staged) {
    Position& h = reach[b.shard];
    if (!(h < b.end())) {
      stale.push_back(std::move(b));
      continue;
    }
    if (b.after < h) {
      return InvalidArgument(fmt::format(
          "A staged batch of shard {} starts at {}, inside what table {} holds (up to {}); "
          "another writer delivers as this channel.",
          b.shard, PositionText(b.after), owner_.Label(), h.sequence));
    }
    h = b.end();
    commit.push_back(std::move(b));
  }
  ASSIGN_OR_RETURN(const iceberg::FileIO* io, owner_.io());
  if (!stale.empty()) {
    RETURN_IF_ERROR(staging_->Drop(config_.id, stale));
    for (const auto& b : stale) {
      for (const auto& f : b.files) (void)io->Delete(f.file_path);
    }
  }
  if (commit.empty()) return DeliveryCounts{};
  DeliveryBatch db;
  std::vector<iceberg::DataFile> files;
  uint64_t rows = 0;
  for (const auto& b : commit) {
    if (db.ranges.empty() || db.ranges.back().shard != b.shard) {
      db.ranges.push_back({b.shard, b.after, b.last_sequence, 0});
    }
    db.ranges.back().last_sequence = b.last_sequence;
    db.ranges.back().records += b.rows;
    rows += b.rows;
    files.insert(files.end(), b.files.begin(), b.files.end());
  }
  std::unique_ptr<iceberg::CommitFence> fence = staging_->CommitFence(config_.id, commit);
  committer_.SetFence(fence.get());
  bool keep_files = false;
  auto committed = committer_.Commit(&owner_, db, files, std::nullopt, &keep_files);
  committer_.SetFence(fence_);
  table->SetFence(fence_);
  if (!committed.ok()) return committed.status();  // the rows stay: the next run retries
  if (committed->already_in) return DeliveryCounts{};
  Committed(committed->result, files, {{"records", rows}, {"stagedBatches", commit.size()}}, &lock);
  DeliveryCounts counts;
  counts.deliveries = 1;
  return counts;
}

TableDestination::TableDestination(TableServices services, TableSinkOptions options)
    : services_(std::move(services)), options_(options) {}

Status TableDestination::Prepare(ChannelConfig* config) {
  auto& t = config->table();
  RETURN_IF_ERROR(services_.bucket_name(t.table_bucket_arn).status());
  // kds-delivery-spec.md §1.3 / §2.4: the schema ARN's parts.
  auto arn = registry::ParseSchemaArn(config->gsr_schema_arn);
  if (!arn) {
    return InvalidArgument("GSRSchemaARN " + config->gsr_schema_arn + " is not a schema ARN.");
  }
  if (arn->region != services_.region || arn->account != services_.account) {
    return InvalidArgument(fmt::format(
        "GSRSchemaARN {} names a schema in region {} and account {}; the schema must be in the "
        "channel's region "
        "{} and account {}.",
        config->gsr_schema_arn, arn->region, arn->account, services_.region, services_.account));
  }
  ASSIGN_OR_RETURN(registry::VersionInfo version, LatestVersion(config->gsr_schema_arn, *arn));
  if (version.data_format != registry::DataFormat::kJson) {
    return InvalidArgument(fmt::format(
        "Schema {} has DataFormat {}; streaming tables need a JSON Schema (DataFormat JSON).",
        config->gsr_schema_arn, registry::DataFormatName(version.data_format)));
  }
  auto layout = MakeTableLayout(version.definition, t.partition_fields.at(0));
  if (!layout.ok()) return layout.status();
  RETURN_IF_ERROR(SchemaFollower::CanonicalLayout(*layout).status());
  t.schema_version_id = version.id;
  t.schema_version_number = version.number;
  return Status::OK();
}

Result<registry::VersionInfo> TableDestination::LatestVersion(const std::string& schema_arn,
                                                              const registry::SchemaArnParts& arn) {
  if (services_.registry == nullptr) {
    // A pool's worker or channel command: the Glue API of the configured registry, whose
    // GetSchemaVersion answers the schema's data format with its latest version.
    if (services_.versions == nullptr) {
      return Internal("the channel's process has no schema registry to check the schema in");
    }
    auto v = services_.versions->GetVersion(arn.registry, arn.schema,
                                            registry::VersionSelector{true, 0});
    if (!v.ok() && v.status().code() == StatusCode::kNotFound) {
      return NotFound(fmt::format(
          "Schema {} does not exist in the schema registry or has no available version ({}).",
          schema_arn, v.status().message()));
    }
    return v;
  }
  auto schema = services_.registry->GetSchema(arn.registry, arn.schema);
  if (!schema.ok()) {
    if (schema.status().code() == StatusCode::kNotFound) {
      return NotFound(fmt::format("Schema {} does not exist in the schema registry.", schema_arn));
    }
    return schema.status();
  }
  auto version =
      services_.registry->GetVersion(arn.registry, arn.schema, registry::VersionSelector{true, 0});
  if (!version.ok() && version.status().code() == StatusCode::kNotFound) {
    return NotFound(fmt::format("Schema {} has no available version.", schema_arn));
  }
  return version;
}

Result<std::unique_ptr<Sink>> TableDestination::MakeSink(const ChannelConfig& config, SinkEnv env) {
  const auto& t = config.table();
  if (t.partition_fields.size() != 1)
    return InvalidArgument("a streaming table has exactly one partition field");
  std::shared_ptr<VersionLookup> lookup =
      services_.versions ? services_.versions
                         : std::make_shared<RegistryVersions>(services_.registry);
  SchemaVersions versions(lookup.get(), config.gsr_schema_arn, t.partition_fields[0]);
  ASSIGN_OR_RETURN(auto pinned, versions.ById(t.schema_version_id));
  if (!pinned->usable) {
    return InvalidArgument(fmt::format(
        "The schema version {} (version {} of {}) the table is made from: {}", t.schema_version_id,
        t.schema_version_number, config.gsr_schema_arn, pinned->reason));
  }
  auto sink = std::make_unique<TableSink>(config, services_, options_, std::move(env));
  RETURN_IF_ERROR(sink->Init(std::move(pinned)));
  if (services_.fence_for) sink->SetFence(services_.fence_for(config));
  return std::unique_ptr<Sink>(std::move(sink));
}

}  // namespace icestream::delivery::table
