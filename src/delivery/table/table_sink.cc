// The streaming-table sink: the table's lifecycle, schema versions, the commit.
#include "delivery/table/table_sink.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/crypto.h"
#include "delivery/dlq.h"
#include "delivery/table/batch_writer.h"
#include "delivery/table/compactor.h"
#include "delivery/table/gsr_frame.h"
#include "delivery/table/schema_versions.h"
#include "delivery/table/table_layout.h"
#include "format/parquet/file_writer.h"
#include "iceberg/parquet/data_file.h"
#include "iceberg/table.h"
#include "iceberg/table_update.h"

namespace icestream::delivery::table {

namespace {

namespace pq = format::parquet;

constexpr std::string_view kVersionIdProperty = "icestream.schema-version-id";
constexpr std::string_view kVersionProperty = "icestream.schema-version";

pq::Codec CodecOf(TableCompression c) {
  switch (c) {
    case TableCompression::kNone: return pq::Codec::kUncompressed;
    case TableCompression::kZstd: return pq::Codec::kZstd;
    case TableCompression::kSnappy: return pq::Codec::kSnappy;
  }
  return pq::Codec::kZstd;
}

// Iceberg's write.parquet.compression-codec values.
const char* CodecProperty(TableCompression c) {
  switch (c) {
    case TableCompression::kNone: return "uncompressed";
    case TableCompression::kZstd: return "zstd";
    case TableCompression::kSnappy: return "snappy";
  }
  return "zstd";
}

// The layout with canonical field ids: those a catalog assigns when it creates the table
// (fresh ids, Java's order), so files written before the table exists fit it.
Result<TableLayout> CanonicalLayout(const TableLayout& layout) {
  ASSIGN_OR_RETURN(iceberg::TableMetadata m,
                   iceberg::NewTableMetadata(layout.schema.schema, layout.spec, iceberg::SortOrder{}, "memory:/t", {},
                                             "00000000-0000-0000-0000-000000000000", 0, 2));
  return ConformLayout(layout, *m.CurrentSchema(), *m.DefaultSpec());
}

// Deletes the files named when dropped, unless dismissed.
class Cleanup {
 public:
  explicit Cleanup(const iceberg::FileIO* io) : io_(io) {}
  ~Cleanup() { DeleteNow(); }
  void Add(std::string path) { paths_.push_back(std::move(path)); }
  void Dismiss() { paths_.clear(); }
  void DeleteNow() {
    for (const auto& p : paths_) (void)io_->Delete(p);
    paths_.clear();
  }

 private:
  const iceberg::FileIO* io_;
  std::vector<std::string> paths_;
};

// Marks a batch that must stop so the table's schema can evolve first.
const std::string kEvolveFirst = "the table's schema must evolve before this batch";

class TableSink final : public Sink {
 public:
  TableSink(ChannelConfig config, std::shared_ptr<const SchemaVersion> pinned, TableLayout canonical,
            TableServices services, TableSinkOptions options, SinkEnv env)
      : config_(std::move(config)),
        services_(std::move(services)),
        options_(options),
        env_(std::move(env)),
        id_{{config_.table().ns}, config_.table().table_name},
        versions_(services_.registry, config_.gsr_schema_arn, config_.table().partition_fields.at(0)),
        version_(std::move(pinned)),
        layout_(std::move(canonical)) {
    writer_options_.codec = CodecOf(config_.table().compression);
    writer_options_.compression_level = env_.compression_level;
    writer_options_.threads = 1;
    writer_options_.row_group_size = options_.row_group_bytes;
    CompactionOptions co;
    co.target_size = options_.target_file_size_bytes;
    co.cold_after_ms = options_.compaction_cold_after_ms;
    co.max_task_bytes = options_.target_file_size_bytes + options_.target_file_size_bytes / 2;
    compactor_ = std::make_unique<Compactor>(config_.id, config_.arn, co, env_.clock,
                                             [this](nlohmann::json e) { Log(std::move(e)); });
  }

  bool spans_shards() const override { return true; }

  Status Check() override {
    std::lock_guard lock(mu_);
    RETURN_IF_ERROR(OpenWarehouse().status());
    ASSIGN_OR_RETURN(std::string dlq_bucket, objectstore::BucketFromArn(config_.dlq.bucket_arn));
    objectstore::ReadOptions ro;
    if (!env_.local_buckets) ro.expected_bucket_owner = config_.dlq.expected_bucket_owner;
    if (Status st = env_.buckets->CheckBucket(dlq_bucket, ro); !st.ok()) {
      return st.WithContext("dead-letter queue bucket " + dlq_bucket);
    }
    return EnsureTable(false);
  }

  Result<std::map<std::string, Position>> Checkpoints() override {
    std::lock_guard lock(mu_);
    RETURN_IF_ERROR(EnsureTable(false));
    if (!table_) return std::map<std::string, Position>{};
    RETURN_IF_ERROR(table_->Refresh());
    RETURN_IF_ERROR(CheckUnchanged(table_->metadata()));
    return TableCheckpoints(table_->metadata());
  }

  Result<DeliveryCounts> Deliver(const DeliveryBatch& batch, RecordSource* source) override;

  std::vector<SinkMetric> Metrics() const override {
    const CompactionStats& c = compactor_->stats();
    std::lock_guard lock(status_mu_);
    return {
        {"table_live_data_files", "gauge", "Data files of the table's current snapshot.",
         static_cast<double>(c.live_files.load() > 0 ? c.live_files.load() : live_files_)},
        {"table_live_data_bytes", "gauge", "Bytes of the data files of the table's current snapshot.",
         static_cast<double>(c.live_files.load() > 0 ? c.live_bytes.load() : live_bytes_)},
        {"table_compaction_files_merged_total", "counter", "Data files replaced by compaction.",
         static_cast<double>(c.files_merged.load())},
        {"table_compaction_files_written_total", "counter", "Data files compaction wrote.",
         static_cast<double>(c.files_written.load())},
        {"table_compaction_bytes_rewritten_total", "counter", "Bytes of the data files compaction wrote.",
         static_cast<double>(c.bytes_rewritten.load())},
        {"table_compaction_commits_total", "counter", "Compaction (replace) commits.",
         static_cast<double>(c.commits.load())},
        {"table_write_amplification", "gauge",
         "Data file bytes written (appends and compaction) per byte the appends wrote.", c.write_amplification()},
        {"table_snapshots_expired_total", "counter", "Snapshots removed by expiry.",
         static_cast<double>(snapshots_expired_)},
        {"table_orphan_files_removed_total", "counter", "Unreferenced files deleted by the orphan cleanup.",
         static_cast<double>(orphans_removed_)},
    };
  }

  nlohmann::json StatusJson() const override {
    std::lock_guard lock(status_mu_);
    nlohmann::json j = {{"Table", TableLabel()},
                        {"TableCreated", table_created_},
                        {"LiveDataFiles", live_files_},
                        {"CommitCount", commits_},
                        {"SchemaVersion", version_number_}};
    if (last_commit_ms_ > 0) j["LastCommitTimestamp"] = static_cast<double>(last_commit_ms_) / 1000.0;
    if (!table_location_.empty()) j["TableLocation"] = table_location_;
    if (!ignored_version_.empty()) j["IgnoredSchemaVersion"] = ignored_version_;
    j["SnapshotsExpired"] = snapshots_expired_;
    j["OrphanFilesRemoved"] = orphans_removed_;
    const CompactionStats& c = compactor_->stats();
    // The compactor's index when it has one, else the current snapshot's summary totals
    // (compaction off, or before the index is built).
    if (c.live_files.load() > 0) {
      j["LiveDataFiles"] = c.live_files.load();
      j["MeanDataFileBytes"] = c.live_bytes.load() / c.live_files.load();
    } else if (live_files_ > 0) {
      j["MeanDataFileBytes"] = live_bytes_ / live_files_;
    }
    j["Compaction"] = {{"FilesMerged", c.files_merged.load()},
                       {"FilesWritten", c.files_written.load()},
                       {"BytesRewritten", c.bytes_rewritten.load()},
                       {"Commits", c.commits.load()},
                       {"WriteAmplification", c.write_amplification()}};
    return j;
  }

 private:
  struct Warehouse {
    iceberg::Catalog* catalog = nullptr;
    const iceberg::FileIO* io = nullptr;
  };

  Result<Warehouse> OpenWarehouse() {
    ASSIGN_OR_RETURN(std::string bucket, services_.bucket_name(config_.table().table_bucket_arn));
    auto catalog = services_.catalog(bucket);
    if (!catalog.ok()) {
      if (catalog.status().code() == StatusCode::kNotFound) {
        return NotFound(fmt::format("The table bucket {} does not exist.", config_.table().table_bucket_arn));
      }
      return catalog.status();
    }
    ASSIGN_OR_RETURN(const iceberg::FileIO* io, services_.io(bucket));
    return Warehouse{*catalog, io};
  }

  std::string TableLabel() const { return fmt::format("{}.{}", config_.table().ns, config_.table().table_name); }

  void Log(nlohmann::json event) {
    if (env_.log_event) env_.log_event(std::move(event));
  }

  // The sink's notes in meta.db: whether it created the table, the table's uuid, and the
  // table schema id the channel last set (a schema it did not set fails the channel).
  Status LoadState() {
    if (state_loaded_) return Status::OK();
    ASSIGN_OR_RETURN(state_, env_.load_state());
    if (!state_.is_object()) state_ = nlohmann::json::object();
    state_loaded_ = true;
    return Status::OK();
  }

  void SetVersion(std::shared_ptr<const SchemaVersion> v, TableLayout layout) {
    version_ = std::move(v);
    layout_ = std::move(layout);
    writer_.reset();
    fits_.clear();
    std::lock_guard slock(status_mu_);
    version_number_ = version_->number;
  }

  // Loads the table when it exists (creating it first when `create`), checking that it
  // is the channel's own, unchanged table. table_ stays null when it does not exist.
  Status EnsureTable(bool create) {
    RETURN_IF_ERROR(LoadState());
    if (table_) return Status::OK();
    ASSIGN_OR_RETURN(Warehouse wh, OpenWarehouse());
    ASSIGN_OR_RETURN(bool exists, wh.catalog->TableExists(id_));
    if (!exists) {
      if (state_.value("created", false)) {
        return NotFound(fmt::format(
            "The table {} that the channel created was deleted; the channel cannot deliver to it any more (delete "
            "the channel and create a new one).",
            TableLabel()));
      }
      if (!create) return Status::OK();
      Status ns = wh.catalog->CreateNamespace({config_.table().ns}, {});
      if (!ns.ok() && ns.code() != StatusCode::kAlreadyExists) return ns;
      iceberg::CreateTableRequest req;
      req.name = config_.table().table_name;
      req.schema = layout_.schema.schema;
      req.spec = layout_.spec;
      req.properties = {{std::string(kOwnerProperty), config_.arn},
                        {"icestream.channel-name", config_.name},
                        {"icestream.stream-arn", config_.stream_arn},
                        {"icestream.schema-arn", config_.gsr_schema_arn},
                        {std::string(kVersionIdProperty), version_->id},
                        {std::string(kVersionProperty), std::to_string(version_->number)},
                        {"write.format.default", "parquet"},
                        {"write.parquet.compression-codec", CodecProperty(config_.table().compression)},
                        {"write.target-file-size-bytes", std::to_string(options_.target_file_size_bytes)},
                        {"history.expire.max-snapshot-age-ms", std::to_string(options_.snapshot_max_age_ms)},
                        {"history.expire.min-snapshots-to-keep", std::to_string(options_.min_snapshots_to_keep)}};
      auto created = wh.catalog->CreateTable({config_.table().ns}, req);
      if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) return created.status();
      if (created.ok()) {
        state_["created"] = true;
        state_["table_uuid"] = created->metadata.table_uuid;
        state_["schema_id"] = created->metadata.current_schema_id;
        RETURN_IF_ERROR(env_.save_state(state_));
        spdlog::info("channel {}: created table {} at {}", config_.name, TableLabel(), created->metadata.location);
        Log({{"eventType", "TableCreated"}, {"destination", created->metadata.location}});
      }
    }
    ASSIGN_OR_RETURN(auto table, iceberg::Table::Load(wh.catalog, wh.io, id_, env_.clock));
    const iceberg::TableMetadata& m = table->metadata();
    auto owner = m.properties.find(std::string(kOwnerProperty));
    if (owner == m.properties.end() || owner->second != config_.arn) {
      return AlreadyExists(fmt::format(
          "The table {} already exists and was not created by this channel; a channel only writes the table it "
          "creates (choose another table name, or delete the table).",
          TableLabel()));
    }
    if (state_.contains("table_uuid") && state_["table_uuid"] != m.table_uuid) {
      return NotFound(fmt::format(
          "The table {} was replaced by another table after the channel created it; the channel cannot deliver to "
          "it any more.",
          TableLabel()));
    }
    // The schema the table has must be one the channel set: the one it was created with
    // or evolved to (an evolution that landed just before a crash is still pending here).
    if (state_.contains("pending_schema_id") && state_["pending_schema_id"] == m.current_schema_id) {
      state_["schema_id"] = m.current_schema_id;
    }
    state_.erase("pending_schema_id");
    if (!state_.contains("schema_id")) state_["schema_id"] = m.current_schema_id;  // notes from before this field
    state_["created"] = true;
    state_["table_uuid"] = m.table_uuid;
    RETURN_IF_ERROR(env_.save_state(state_));
    RETURN_IF_ERROR(CheckUnchanged(m));
    // The version the table follows, with the table's ids.
    auto vid = m.properties.find(std::string(kVersionIdProperty));
    ASSIGN_OR_RETURN(auto v, versions_.ById(vid != m.properties.end() ? vid->second : version_->id));
    if (!v->usable) {
      return InvalidArgument(fmt::format("Table {} follows a schema version the channel cannot use: {}.", TableLabel(),
                                         v->reason));
    }
    auto layout = LayoutFor(v->layout, *m.CurrentSchema(), *m.DefaultSpec());
    if (!layout.ok()) {
      return InvalidArgument(fmt::format("Table {}: {} (the table was changed outside the channel).", TableLabel(),
                                         layout.status().message()));
    }
    SetVersion(v, std::move(*layout));
    table_ = std::move(table);
    compactor_->Invalidate();
    {
      std::lock_guard slock(status_mu_);
      table_created_ = true;
      table_location_ = m.location;
      UpdateLiveFiles(m);
    }
    return Status::OK();
  }

  // The table still has the schema the channel set and its hourly partitioning.
  Status CheckUnchanged(const iceberg::TableMetadata& m) const {
    if (state_.contains("schema_id") && state_["schema_id"] != m.current_schema_id) {
      return InvalidArgument(fmt::format(
          "The schema of table {} was changed outside the channel (current schema {}, the channel set {}); the "
          "channel cannot write it.",
          TableLabel(), m.current_schema_id, state_["schema_id"].get<int64_t>()));
    }
    const iceberg::PartitionSpec* spec = m.DefaultSpec();
    if (spec == nullptr || spec->fields.size() != 1 || spec->fields[0].transform != iceberg::Transform::Hour() ||
        (table_ && spec->fields[0].source_id != layout_.partition_source_id)) {
      return InvalidArgument(fmt::format(
          "The partition spec of table {} is no longer the channel's hourly partitioning (it was changed outside the "
          "channel); the channel cannot write it.",
          TableLabel()));
    }
    return Status::OK();
  }

  // shard id → position, from the newest snapshot of this channel on the main branch.
  std::map<std::string, Position> TableCheckpoints(const iceberg::TableMetadata& m) const {
    std::map<std::string, Position> out;
    const iceberg::Snapshot* s = m.CurrentSnapshot();
    while (s != nullptr) {
      auto owner = s->summary.find(std::string(kOwnerProperty));
      if (owner != s->summary.end() && owner->second == config_.arn) {
        for (const auto& [k, v] : s->summary) {
          if (!k.starts_with(kCheckpointPrefix) || !IsSequenceNumber(v)) continue;
          std::string shard = k.substr(kCheckpointPrefix.size());
          Position p{v, std::nullopt};
          auto sub = s->summary.find(std::string(kCheckpointSubPrefix) + shard);
          if (sub != s->summary.end()) {
            char* end = nullptr;
            unsigned long n = std::strtoul(sub->second.c_str(), &end, 10);
            if (end != sub->second.c_str() && *end == '\0') p.sub_sequence = static_cast<uint32_t>(n);
          }
          out[shard] = std::move(p);
        }
        return out;
      }
      s = s->parent_snapshot_id ? m.SnapshotById(*s->parent_snapshot_id) : nullptr;
    }
    return out;
  }

  void UpdateLiveFiles(const iceberg::TableMetadata& m) {
    const iceberg::Snapshot* cur = m.CurrentSnapshot();
    if (cur == nullptr) return;
    auto it = cur->summary.find("total-data-files");
    if (it != cur->summary.end()) live_files_ = std::strtoll(it->second.c_str(), nullptr, 10);
    it = cur->summary.find("total-files-size");
    if (it != cur->summary.end()) live_bytes_ = std::strtoll(it->second.c_str(), nullptr, 10);
  }

  // How a registry version relates to the table schema records are written with.
  enum class Fit { kFits, kNeedsEvolution, kIncompatible };
  struct FitResult {
    Fit fit = Fit::kIncompatible;
    std::string reason;
  };
  FitResult FitOf(const SchemaVersion& v) {
    std::lock_guard lock(fits_mu_);
    auto it = fits_.find(v.id);
    if (it != fits_.end()) return it->second;
    FitResult r;
    if (!v.usable) {
      r.reason = v.reason;
    } else {
      int32_t last = table_ ? table_->metadata().last_column_id : iceberg::HighestFieldId(layout_.schema.schema);
      auto evolved = EvolveSchema(layout_.schema.schema, v.layout.schema.schema, &last);
      if (!evolved.ok()) {
        r.reason = fmt::format("version {} of schema {} is not compatible with table {}: {}", v.number,
                               config_.gsr_schema_arn, TableLabel(), evolved.status().message());
      } else {
        r.fit = evolved->fields == layout_.schema.schema.fields ? Fit::kFits : Fit::kNeedsEvolution;
      }
    }
    fits_[v.id] = r;
    return r;
  }

  // Makes `v` (compatible, newer or wider) the table's schema: one catalog commit that
  // adds the evolved schema, makes it current and records the version in the table's
  // properties. Without a table yet, the table will be created from it.
  Status Evolve(const std::shared_ptr<const SchemaVersion>& v) {
    if (!table_) {
      int32_t last = iceberg::HighestFieldId(layout_.schema.schema);
      ASSIGN_OR_RETURN(iceberg::Schema evolved, EvolveSchema(layout_.schema.schema, v->layout.schema.schema, &last));
      TableLayout next = layout_;
      next.schema.schema = evolved;
      ASSIGN_OR_RETURN(TableLayout canonical, CanonicalLayout(next));
      ASSIGN_OR_RETURN(TableLayout layout, LayoutFor(v->number >= version_->number ? v->layout : version_->layout,
                                                    canonical.schema.schema, canonical.spec));
      SetVersion(v->number >= version_->number ? v : version_, std::move(layout));
      return Status::OK();
    }
    ASSIGN_OR_RETURN(Warehouse wh, OpenWarehouse());
    for (int attempt = 1;; ++attempt) {
      RETURN_IF_ERROR(table_->Refresh());
      const iceberg::TableMetadata& m = table_->metadata();
      RETURN_IF_ERROR(CheckUnchanged(m));
      int32_t last = m.last_column_id;
      ASSIGN_OR_RETURN(iceberg::Schema evolved, EvolveSchema(*m.CurrentSchema(), v->layout.schema.schema, &last));
      auto newest = v->number >= version_->number ? v : version_;
      int32_t next_id = 0;
      for (const auto& s : m.schemas) next_id = std::max(next_id, s.schema_id + 1);
      state_["pending_schema_id"] = next_id;
      RETURN_IF_ERROR(env_.save_state(state_));
      std::vector<iceberg::TableRequirement> req = {iceberg::requirement::AssertTableUuid{m.table_uuid},
                                                    iceberg::requirement::AssertCurrentSchemaId{m.current_schema_id}};
      std::vector<iceberg::TableUpdate> upd = {
          iceberg::update::AddSchema{evolved, last}, iceberg::update::SetCurrentSchema{-1},
          iceberg::update::SetProperties{{{std::string(kVersionIdProperty), newest->id},
                                          {std::string(kVersionProperty), std::to_string(newest->number)}}}};
      auto committed = wh.catalog->CommitTable(id_, req, upd);
      if (!committed.ok()) {
        if (committed.status().code() == StatusCode::kConflict && attempt < 5) continue;
        return committed.status().WithContext(fmt::format("Evolving the schema of table {}", TableLabel()));
      }
      state_["schema_id"] = committed->metadata.current_schema_id;
      state_.erase("pending_schema_id");
      RETURN_IF_ERROR(env_.save_state(state_));
      RETURN_IF_ERROR(table_->Refresh());
      const iceberg::TableMetadata& now = table_->metadata();
      ASSIGN_OR_RETURN(TableLayout layout, LayoutFor(newest->layout, *now.CurrentSchema(), *now.DefaultSpec()));
      SetVersion(newest, std::move(layout));
      spdlog::info("channel {}: table {} now follows version {} of {} (schema {})", config_.name, TableLabel(),
                   newest->number, config_.gsr_schema_arn, now.current_schema_id);
      Log({{"eventType", "SchemaEvolved"},
           {"schemaVersion", v->number},
           {"schemaVersionId", v->id},
           {"tableSchemaId", now.current_schema_id}});
      return Status::OK();
    }
  }

  // JSON channels follow their schema's newest version that is compatible with the table
  // (newer incompatible versions are reported, not followed).
  Status FollowLatest() {
    ASSIGN_OR_RETURN(auto latest, versions_.Latest());
    if (latest->number <= version_->number) return Status::OK();
    for (int64_t n = latest->number; n > version_->number; --n) {
      auto v = n == latest->number ? Result<std::shared_ptr<const SchemaVersion>>(latest) : versions_.ByNumber(n);
      if (!v.ok()) {
        if (v.status().code() == StatusCode::kNotFound) continue;  // a deleted version
        return v.status();
      }
      FitResult f = FitOf(**v);
      if (f.fit == Fit::kIncompatible) {
        if (n == latest->number && ignored_version_ != latest->id) {
          spdlog::warn("channel {}: not following schema version {}: {}", config_.name, latest->number, f.reason);
          Log({{"eventType", "SchemaVersionIgnored"}, {"schemaVersion", latest->number}, {"errorMessage", f.reason}});
          std::lock_guard slock(status_mu_);
          ignored_version_ = latest->id;
        }
        continue;
      }
      if (f.fit == Fit::kNeedsEvolution) return Evolve(*v);
      // Nothing to add to the table: only the version's value constraints change.
      ASSIGN_OR_RETURN(TableLayout layout, LayoutFor((*v)->layout, layout_.schema.schema, layout_.spec));
      SetVersion(*v, std::move(layout));
      return Status::OK();
    }
    return Status::OK();
  }

  // Decodes one record into the block (or a rejection). A GSR_JSON record of a version
  // the table must evolve to first stops the batch (evolve_to_ says which).
  Status Decode(const SourceRecord& rec, size_t range, BlockOwner* owner, schema::ConvertBlock* block) {
    owner->records_in++;
    owner->bytes_in += rec.data.size();
    auto reject = [&](const char* code, std::string message) {
      owner->rejects.push_back({range, std::string(rec.sequence_number), rec.ordinal,
                                rec.sub_sequence, rec.arrival_ms, code, std::move(message)});
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
      FitResult fit = FitOf(*version);
      if (fit.fit == Fit::kIncompatible) {
        std::string reason = fit.reason;
        if (!reason.empty()) reason[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(reason[0])));
        reject("INVALID_SCHEMA", reason + ".");
        return Status::OK();
      }
      if (fit.fit == Fit::kNeedsEvolution) {
        evolve_to_ = version;
        return Conflict(kEvolveFirst);
      }
      if (frame->compressed) {
        owner->made.push_back(std::move(frame->inflated));
        text = owner->made.back();
      } else {
        text = frame->raw;
      }
    } else if (LooksGsrFramed(rec.data)) {
      reject("DESERIALIZATION_ERROR",
             "The record carries a Glue Schema Registry header; the channel's RecordFormatType is JSON (use GSR_JSON "
             "for records written by the GSR serializer).");
      return Status::OK();
    }
    block->records.push_back(text);
    owner->origins.push_back({range, rec.sequence_number, rec.ordinal, rec.arrival_ms,
                              rec.sub_sequence, rec.data.size()});
    return Status::OK();
  }

  // Table upkeep after a commit: snapshot expiry and orphan removal, each at its pace.
  void Maintain(const iceberg::FileIO* io);
  void ExpireSnapshots();
  void RemoveOrphans(const iceberg::FileIO* io);

  const ChannelConfig config_;
  const TableServices services_;
  const TableSinkOptions options_;
  const SinkEnv env_;
  const iceberg::TableIdentifier id_;
  SchemaVersions versions_;

  std::mutex mu_;  // one delivery, check or checkpoint read at a time
  nlohmann::json state_;
  bool state_loaded_ = false;
  std::unique_ptr<iceberg::Table> table_;
  // The version records are checked against and the table schema they are written with.
  std::shared_ptr<const SchemaVersion> version_;
  TableLayout layout_;
  std::unique_ptr<BatchWriter> writer_;  // made from layout_
  pq::WriterOptions writer_options_;
  std::unique_ptr<Compactor> compactor_;
  std::shared_ptr<const SchemaVersion> evolve_to_;
  int64_t last_orphan_scan_ms_ = 0;
  int64_t last_expiry_ms_ = 0;

  std::mutex fits_mu_;  // Decode runs on converter threads
  std::unordered_map<std::string, FitResult> fits_;

  mutable std::mutex status_mu_;
  bool table_created_ = false;
  std::string table_location_;
  int64_t live_files_ = 0;
  int64_t live_bytes_ = 0;  // total-files-size of the current snapshot
  int64_t commits_ = 0;
  int64_t last_commit_ms_ = 0;
  int64_t version_number_ = 0;
  std::string ignored_version_;
  int64_t snapshots_expired_ = 0;
  int64_t orphans_removed_ = 0;
};

Result<DeliveryCounts> TableSink::Deliver(const DeliveryBatch& batch, RecordSource* source) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(Warehouse wh, OpenWarehouse());
  RETURN_IF_ERROR(EnsureTable(false));
  if (table_) {
    RETURN_IF_ERROR(table_->Refresh());
    RETURN_IF_ERROR(CheckUnchanged(table_->metadata()));
    // A replay of a batch whose commit landed (its outcome was unknown): nothing to do.
    auto held = TableCheckpoints(table_->metadata());
    bool all_in = std::all_of(batch.ranges.begin(), batch.ranges.end(), [&](const ShardRange& r) {
      auto it = held.find(r.shard);
      return it != held.end() && !(it->second < r.end());
    });
    if (all_in && !batch.ranges.empty()) return DeliveryCounts{};
  }
  if (config_.record_format == RecordFormat::kJson) RETURN_IF_ERROR(FollowLatest());

  const std::string attempt = crypto::RandomUuid().substr(0, 8);
  Cleanup cleanup(wh.io);
  int file_no = 0;
  auto place_file = [&](int64_t hour, std::string bytes, const pq::FileMetrics& m) -> Result<iceberg::DataFile> {
    RETURN_IF_ERROR(EnsureTable(true));
    iceberg::PartitionTuple part = {iceberg::Literal::Int(static_cast<int32_t>(hour))};
    std::string path =
        table_->NewDataFileLocation(part, fmt::format("{}-{}-{:05d}.parquet", config_.id, attempt, file_no++));
    cleanup.Add(path);
    RETURN_IF_ERROR(wh.io->Write(path, bytes));
    return iceberg::ParquetDataFile(m, path, part, table_->metadata().default_spec_id);
  };
  auto decode = [this](const SourceRecord& rec, size_t range, BlockOwner* owner, schema::ConvertBlock* block) {
    return Decode(rec, range, owner, block);
  };
  BatchOutput out;
  for (int pass = 1;; ++pass) {
    if (!writer_) {
      BatchWriterOptions wo;
      wo.target_file_size_bytes = options_.target_file_size_bytes;
      wo.max_buffered_bytes = options_.max_buffered_bytes;
      wo.convert_threads = options_.convert_threads;
      wo.block_bytes = options_.block_bytes;
      wo.block_records = options_.block_records;
      wo.writer = writer_options_;
      ASSIGN_OR_RETURN(writer_, BatchWriter::Make(&layout_, wo));
    }
    evolve_to_.reset();
    Status st = writer_->Run(source, decode, place_file, &out);
    if (st.ok()) break;
    if (!evolve_to_ || st.message() != kEvolveFirst || pass > 8) return st;
    // A record of a newer compatible version: the table evolves, then the batch starts over.
    cleanup.DeleteNow();
    RETURN_IF_ERROR(Evolve(evolve_to_));
    RETURN_IF_ERROR(source->Rewind());
  }
  DeliveryCounts counts = out.counts;

  // The dead-letter queue before the commit that moves past the rejected records.
  if (!out.rejects.empty()) {
    DlqBatch dlq(&config_, batch.attempt_ms);
    for (const auto& r : out.rejects) {
      dlq.Add(batch.ranges[r.range].shard, r.sequence_number, r.ordinal, r.arrival_ms, r.code,
              r.message, r.sub_sequence);
    }
    auto obj = dlq.Finish();
    ASSIGN_OR_RETURN(std::string dlq_bucket, objectstore::BucketFromArn(config_.dlq.bucket_arn));
    objectstore::PutOptions opts;
    opts.content_type = "application/x-ndjson";
    if (!env_.local_buckets) opts.expected_bucket_owner = config_.dlq.expected_bucket_owner;
    if (Status st = env_.buckets->Put(dlq_bucket, obj->key, obj->body, opts); !st.ok()) {
      Log({{"eventType", "DLQWriteFailed"}, {"errorMessage", st.message()}});
      return st.WithContext("Writing to the dead-letter queue failed");
    }
    counts.dlq_records = obj->records;
    Log({{"eventType", "DLQWrite"}, {"destination", "s3://" + dlq_bucket + "/" + obj->key}, {"records", obj->records}});
  }
  if (out.files.empty()) return counts;  // nothing valid: the checkpoint moves in meta.db only

  // One append for every shard of the batch; its summary is the checkpoint.
  std::map<std::string, Position> cps = TableCheckpoints(table_->metadata());
  for (const auto& r : batch.ranges) {
    auto& cp = cps[r.shard];
    if (cp < r.end()) cp = r.end();
  }
  std::map<std::string, std::string> summary = {{std::string(kOwnerProperty), config_.arn}};
  for (const auto& [shard, pos] : cps) {
    if (pos.at_start()) continue;
    summary[std::string(kCheckpointPrefix) + shard] = pos.sequence;
    if (pos.sub_sequence) {
      summary[std::string(kCheckpointSubPrefix) + shard] = std::to_string(*pos.sub_sequence);
    }
  }
  bool already = false;
  auto check = [&](const iceberg::TableMetadata& m) -> Status {
    RETURN_IF_ERROR(CheckUnchanged(m));
    auto held = TableCheckpoints(m);
    size_t in = 0;
    for (const auto& r : batch.ranges) {
      auto it = held.find(r.shard);
      Position h = it == held.end() ? Position{} : it->second;
      if (!(h < r.end())) {
        ++in;
      } else if (r.after < h) {
        return InvalidArgument(fmt::format(
            "Table {} holds shard {} up to {}, inside the batch {} to {} being committed; another "
            "writer commits as this channel.",
            TableLabel(), r.shard, h.sequence, PositionText(r.after), r.last_sequence));
      }
    }
    if (in == batch.ranges.size()) {
      already = true;
      return AlreadyExists("the batch is in the table already");
    }
    if (in > 0) {
      return InvalidArgument(fmt::format(
          "Table {} holds part of the batch being committed; another writer commits as this channel.", TableLabel()));
    }
    return Status::OK();
  };
  auto committed = table_->AppendFiles(out.files, summary, check);
  if (!committed.ok()) {
    if (already) return DeliveryCounts{};  // our files are unreferenced: the cleanup deletes them
    const Status& st = committed.status();
    Log({{"eventType", "CommitFailed"}, {"errorMessage", st.message()}});
    if (st.code() == StatusCode::kUnknownOutcome) {
      cleanup.Dismiss();  // the commit may reference them
      return Unavailable(fmt::format("The outcome of the commit to table {} is unknown ({}); the batch is checked "
                                     "against the table and retried.",
                                     TableLabel(), st.message()));
    }
    if (st.code() == StatusCode::kNotFound) {
      return NotFound(fmt::format("The table {} is gone: {}", TableLabel(), st.message()));
    }
    return st.WithContext(fmt::format("Commit to table {}", TableLabel()));
  }
  cleanup.Dismiss();
  compactor_->Appended(table_->metadata(), committed->snapshot_id, out.files);
  counts.deliveries = 1;
  {
    std::lock_guard slock(status_mu_);
    ++commits_;
    last_commit_ms_ = env_.clock->NowMillis();
    UpdateLiveFiles(table_->metadata());
  }
  Log({{"eventType", "CommitSucceeded"},
       {"destination", table_->metadata_location()},
       {"snapshotId", committed->snapshot_id},
       {"sequenceNumber", committed->sequence_number},
       {"files", out.files.size()},
       {"records", counts.delivered},
       {"bytes", counts.bytes_out},
       {"attempts", committed->attempts}});
  Maintain(wh.io);
  return counts;
}

void TableSink::Maintain(const iceberg::FileIO* io) {
  if (options_.compaction) {
    int64_t budget = options_.compaction_budget_ms > 0
                         ? options_.compaction_budget_ms
                         : std::max<int64_t>(500, int64_t{config_.data_freshness_seconds} * 500);
    auto check = [this](const iceberg::TableMetadata& m) { return CheckUnchanged(m); };
    if (Status st = compactor_->Run(table_.get(), io, layout_, writer_options_, check, budget); !st.ok()) {
      spdlog::warn("channel {}: compacting {}: {}", config_.name, TableLabel(), st.ToString());
      if (IsPermanent(st)) compactor_->Invalidate();
    }
  }
  ExpireSnapshots();
  RemoveOrphans(io);
}

void TableSink::ExpireSnapshots() {
  int64_t now = env_.clock->NowMillis();
  if (now - last_expiry_ms_ < options_.expire_interval_ms) return;
  last_expiry_ms_ = now;
  const iceberg::TableMetadata& m = table_->metadata();
  auto prop = [&](const char* key, int64_t fallback) {
    auto it = m.properties.find(key);
    if (it == m.properties.end()) return fallback;
    char* end = nullptr;
    long long v = std::strtoll(it->second.c_str(), &end, 10);
    return end != it->second.c_str() && *end == '\0' && v >= 0 ? static_cast<int64_t>(v) : fallback;
  };
  iceberg::ExpireOptions eo;
  eo.older_than_ms = now - prop("history.expire.max-snapshot-age-ms", options_.snapshot_max_age_ms);
  eo.retain_last = static_cast<int>(std::max<int64_t>(1, prop("history.expire.min-snapshots-to-keep",
                                                              options_.min_snapshots_to_keep)));
  // The snapshot that holds the channel's checkpoints stays: a restart resumes from it.
  for (const iceberg::Snapshot* s = m.CurrentSnapshot(); s != nullptr;
       s = s->parent_snapshot_id ? m.SnapshotById(*s->parent_snapshot_id) : nullptr) {
    auto owner = s->summary.find(std::string(kOwnerProperty));
    if (owner != s->summary.end() && owner->second == config_.arn) {
      eo.keep.insert(s->snapshot_id);
      break;
    }
  }
  auto r = table_->ExpireSnapshots(eo);
  if (!r.ok()) {
    spdlog::warn("channel {}: expiring snapshots of {}: {}", config_.name, TableLabel(), r.status().ToString());
    return;
  }
  if (r->expired_snapshot_ids.empty()) return;
  {
    std::lock_guard slock(status_mu_);
    snapshots_expired_ += static_cast<int64_t>(r->expired_snapshot_ids.size());
  }
  spdlog::debug("channel {}: expired {} snapshot(s) of {}, deleted {} data file(s)", config_.name,
                r->expired_snapshot_ids.size(), TableLabel(), r->deleted_content_files);
  Log({{"eventType", "SnapshotsExpired"},
       {"snapshots", r->expired_snapshot_ids.size()},
       {"deletedDataFiles", r->deleted_content_files},
       {"deletedManifests", r->deleted_manifests + r->deleted_manifest_lists}});
}

void TableSink::RemoveOrphans(const iceberg::FileIO* io) {
  int64_t now = env_.clock->NowMillis();
  if (now - last_orphan_scan_ms_ < options_.orphan_interval_ms) return;
  last_orphan_scan_ms_ = now;
  auto orphans = table_->ListOrphanFiles(now - options_.orphan_age_ms);
  if (!orphans.ok()) {
    spdlog::warn("channel {}: listing orphan files of {}: {}", config_.name, TableLabel(), orphans.status().ToString());
    return;
  }
  // Only the channel's own data files: files of other writers are theirs to clean.
  int removed = 0;
  for (const auto& f : *orphans) {
    size_t slash = f.location.rfind('/');
    std::string_view name = std::string_view(f.location).substr(slash == std::string::npos ? 0 : slash + 1);
    bool ours = f.location.find("/data/") != std::string::npos && name.starts_with(config_.id + "-");
    // Manifests and manifest lists nothing references (an expiry cut short by a crash).
    bool manifest = f.location.find("/metadata/") != std::string::npos && name.ends_with(".avro");
    if (!ours && !manifest) continue;
    if (io->Delete(f.location).ok()) ++removed;
  }
  if (removed > 0) {
    {
      std::lock_guard slock(status_mu_);
      orphans_removed_ += removed;
    }
    spdlog::info("channel {}: removed {} unreferenced file(s) of {} (attempts that never committed)", config_.name, removed, TableLabel());
    Log({{"eventType", "OrphansRemoved"}, {"files", removed}});
  }
}

// kds-delivery-spec.md §1.3 / §2.4: the schema ARN's parts.
struct GsrArn {
  std::string region, account, registry, schema;
};
std::optional<GsrArn> ParseGsrArn(std::string_view arn) {
  // arn:aws:glue:<region>:<account>:schema/<registry>/<schema>
  std::vector<std::string> parts;
  size_t start = 0;
  for (int i = 0; i < 5; ++i) {
    size_t c = arn.find(':', start);
    if (c == std::string_view::npos) return std::nullopt;
    parts.emplace_back(arn.substr(start, c - start));
    start = c + 1;
  }
  std::string_view rest = arn.substr(start);
  if (!rest.starts_with("schema/")) return std::nullopt;
  rest.remove_prefix(7);
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  return GsrArn{parts[3], parts[4], std::string(rest.substr(0, slash)), std::string(rest.substr(slash + 1))};
}

}  // namespace

TableDestination::TableDestination(TableServices services, TableSinkOptions options)
    : services_(std::move(services)), options_(options) {}

Status TableDestination::Prepare(ChannelConfig* config) {
  auto& t = config->table();
  RETURN_IF_ERROR(services_.bucket_name(t.table_bucket_arn).status());
  auto arn = ParseGsrArn(config->gsr_schema_arn);
  if (!arn) return InvalidArgument("GSRSchemaARN " + config->gsr_schema_arn + " is not a schema ARN.");
  if (arn->region != services_.region || arn->account != services_.account) {
    return InvalidArgument(fmt::format(
        "GSRSchemaARN {} names a schema in region {} and account {}; the schema must be in the channel's region "
        "{} and account {}.",
        config->gsr_schema_arn, arn->region, arn->account, services_.region, services_.account));
  }
  auto schema = services_.registry->GetSchema(arn->registry, arn->schema);
  if (!schema.ok()) {
    if (schema.status().code() == StatusCode::kNotFound) {
      return NotFound(fmt::format("Schema {} does not exist in the schema registry.", config->gsr_schema_arn));
    }
    return schema.status();
  }
  if (schema->data_format != registry::DataFormat::kJson) {
    return InvalidArgument(fmt::format(
        "Schema {} has DataFormat {}; streaming tables need a JSON Schema (DataFormat JSON).", config->gsr_schema_arn,
        registry::DataFormatName(schema->data_format)));
  }
  auto version = services_.registry->GetVersion(arn->registry, arn->schema, registry::VersionSelector{true, 0});
  if (!version.ok()) {
    if (version.status().code() == StatusCode::kNotFound) {
      return NotFound(fmt::format("Schema {} has no available version.", config->gsr_schema_arn));
    }
    return version.status();
  }
  auto layout = MakeTableLayout(version->definition, t.partition_fields.at(0));
  if (!layout.ok()) return layout.status();
  RETURN_IF_ERROR(CanonicalLayout(*layout).status());
  t.schema_version_id = version->id;
  t.schema_version_number = version->number;
  return Status::OK();
}

Result<std::unique_ptr<Sink>> TableDestination::MakeSink(const ChannelConfig& config, SinkEnv env) {
  const auto& t = config.table();
  if (t.partition_fields.size() != 1) return InvalidArgument("a streaming table has exactly one partition field");
  SchemaVersions versions(services_.registry, config.gsr_schema_arn, t.partition_fields[0]);
  ASSIGN_OR_RETURN(auto pinned, versions.ById(t.schema_version_id));
  if (!pinned->usable) {
    return InvalidArgument(fmt::format("The schema version {} (version {} of {}) the table is made from: {}",
                                       t.schema_version_id, t.schema_version_number, config.gsr_schema_arn,
                                       pinned->reason));
  }
  ASSIGN_OR_RETURN(TableLayout canonical, CanonicalLayout(pinned->layout));
  return std::unique_ptr<Sink>(new TableSink(config, pinned, std::move(canonical), services_, options_, std::move(env)));
}

}  // namespace icestream::delivery::table
