// The streaming-table sink: decode, convert, write files, DLQ, commit.
#include "delivery/table/table_sink.h"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/crypto.h"
#include "delivery/dlq.h"
#include "delivery/retry.h"
#include "delivery/table/gsr_frame.h"
#include "delivery/table/table_layout.h"
#include "format/parquet/file_writer.h"
#include "format/parquet/output_stream.h"
#include "iceberg/parquet/data_file.h"
#include "iceberg/table.h"
#include "iceberg/table_update.h"
#include "schema/parallel_converter.h"
#include "stream/model.h"
#include "stream/sequence_number.h"

namespace icestream::delivery::table {

namespace {

namespace pq = format::parquet;

constexpr int64_t kHourMicros = 3600LL * 1000 * 1000;

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

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

std::optional<uint32_t> ParseShardId(std::string_view s) {
  constexpr std::string_view kPrefix = "shardId-";
  if (s.size() != kPrefix.size() + 12 || s.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  uint64_t v = 0;
  for (char c : s.substr(kPrefix.size())) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(v);
}

// The layout with canonical field ids: those a catalog assigns when it creates the table
// (fresh ids, Java's order), so files written before the table exists fit it.
Result<TableLayout> CanonicalLayout(std::string_view definition, const PartitionFieldConfig& field) {
  ASSIGN_OR_RETURN(TableLayout layout, MakeTableLayout(definition, field));
  ASSIGN_OR_RETURN(iceberg::TableMetadata m,
                   iceberg::NewTableMetadata(layout.schema.schema, layout.spec, iceberg::SortOrder{}, "memory:/t", {},
                                             "00000000-0000-0000-0000-000000000000", 0, 2));
  return ConformLayout(layout, *m.CurrentSchema(), *m.DefaultSpec());
}

// Where one record of a block came from.
struct RecordOrigin {
  size_t range = 0;
  uint64_t offset = 0;
  int64_t arrival_ms = 0;
  std::optional<uint32_t> sub_sequence;
  size_t bytes = 0;
};

struct Reject {
  size_t range = 0;
  uint64_t offset = 0;
  std::optional<uint32_t> sub_sequence;
  int64_t arrival_ms = 0;
  std::string code;
  std::string message;
};

// A block handed to the converter: the log records it points into, the inflated GSR
// payloads, where each converted record came from, and the records refused before
// conversion.
struct BlockOwner {
  std::vector<RecordChunk> chunks;
  std::deque<std::string> inflated;  // a deque: views into its strings survive growth
  std::vector<RecordOrigin> origins;  // of ConvertBlock::records
  std::vector<Reject> rejects;
  uint64_t records_in = 0;
  uint64_t bytes_in = 0;
};

class TableSink final : public Sink {
 public:
  TableSink(ChannelConfig config, TableLayout layout, std::string pinned_definition, TableServices services,
            TableSinkOptions options, SinkEnv env)
      : config_(std::move(config)),
        layout_(std::move(layout)),
        pinned_definition_(std::move(pinned_definition)),
        services_(std::move(services)),
        options_(options),
        env_(std::move(env)),
        id_{{config_.table().ns}, config_.table().table_name} {}

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

  Result<std::map<uint32_t, uint64_t>> Checkpoints() override {
    std::lock_guard lock(mu_);
    RETURN_IF_ERROR(EnsureTable(false));
    if (!table_) return std::map<uint32_t, uint64_t>{};
    RETURN_IF_ERROR(table_->Refresh());
    RETURN_IF_ERROR(CheckVersion(table_->metadata()));
    return TableCheckpoints(table_->metadata());
  }

  Result<DeliveryCounts> Deliver(const DeliveryBatch& batch, RecordSource* source) override;

  nlohmann::json StatusJson() const override {
    std::lock_guard lock(status_mu_);
    nlohmann::json j = {{"Table", fmt::format("{}.{}", config_.table().ns, config_.table().table_name)},
                        {"TableCreated", table_created_},
                        {"LiveDataFiles", live_files_},
                        {"CommitCount", commits_}};
    if (last_commit_ms_ > 0) j["LastCommitTimestamp"] = static_cast<double>(last_commit_ms_) / 1000.0;
    if (!table_location_.empty()) j["TableLocation"] = table_location_;
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

  // The sink's notes in meta.db: whether it created the table, and the table's uuid.
  Status LoadState() {
    if (state_loaded_) return Status::OK();
    ASSIGN_OR_RETURN(state_, env_.load_state());
    if (!state_.is_object()) state_ = nlohmann::json::object();
    state_loaded_ = true;
    return Status::OK();
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
                        {"icestream.schema-version-id", config_.table().schema_version_id},
                        {"write.format.default", "parquet"},
                        {"write.parquet.compression-codec", CodecProperty(config_.table().compression)},
                        {"write.target-file-size-bytes", std::to_string(options_.target_file_size_bytes)}};
      auto created = wh.catalog->CreateTable({config_.table().ns}, req);
      if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) return created.status();
      if (created.ok()) {
        state_["created"] = true;
        state_["table_uuid"] = created->metadata.table_uuid;
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
    if (!state_.value("created", false)) {
      // Created by this channel before the sink kept notes (or the note was lost).
      state_["created"] = true;
      state_["table_uuid"] = m.table_uuid;
      RETURN_IF_ERROR(env_.save_state(state_));
    }
    RETURN_IF_ERROR(CheckVersion(m));
    table_ = std::move(table);
    {
      std::lock_guard slock(status_mu_);
      table_created_ = true;
      table_location_ = m.location;
      UpdateLiveFiles(m);
    }
    return Status::OK();
  }

  // The table still has the channel's schema and partitioning.
  Status CheckVersion(const iceberg::TableMetadata& m) const {
    const iceberg::Schema* schema = m.CurrentSchema();
    const iceberg::PartitionSpec* spec = m.DefaultSpec();
    if (schema == nullptr || spec == nullptr) return InvalidArgument("the table has no current schema or spec");
    auto conformed = ConformLayout(layout_, *schema, *spec);
    if (!conformed.ok()) return InvalidArgument(fmt::format("Table {}: {}", TableLabel(), conformed.status().message()));
    if (conformed->schema.schema.fields != layout_.schema.schema.fields) {
      return InvalidArgument(fmt::format(
          "Table {}: its column ids are not those the channel writes (the table was changed outside the channel).",
          TableLabel()));
    }
    return Status::OK();
  }

  // shard → next offset, from the newest snapshot of this channel on the main branch.
  std::map<uint32_t, uint64_t> TableCheckpoints(const iceberg::TableMetadata& m) const {
    std::map<uint32_t, uint64_t> out;
    const iceberg::Snapshot* s = m.CurrentSnapshot();
    while (s != nullptr) {
      auto owner = s->summary.find(std::string(kOwnerProperty));
      if (owner != s->summary.end() && owner->second == config_.arn) {
        for (const auto& [k, v] : s->summary) {
          if (!k.starts_with(kCheckpointPrefix)) continue;
          auto shard = ParseShardId(std::string_view(k).substr(kCheckpointPrefix.size()));
          auto seq = stream::SequenceNumber::Parse(v);
          if (!shard || !seq || seq->stream_uid != config_.stream_uid || seq->shard_index != *shard) continue;
          out[*shard] = seq->position;  // position = offset + 1 = the next offset
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
  }

  void Log(nlohmann::json event) {
    if (env_.log_event) env_.log_event(std::move(event));
  }

  // Whether a GSR_JSON record's schema version may be written to the table: a version of
  // the channel's schema whose definition is the one the table was made from.
  struct VersionVerdict {
    bool ok = false;
    std::string message;
  };
  Result<VersionVerdict> CheckVersionId(const std::string& version_id) {
    std::lock_guard lock(versions_mu_);
    auto it = versions_.find(version_id);
    if (it != versions_.end()) return it->second;
    VersionVerdict v;
    auto info = services_.registry->GetVersionById(version_id);
    if (!info.ok()) {
      if (info.status().code() != StatusCode::kNotFound) return info.status();  // retry the batch
      v.message = fmt::format("The record's schema version {} is not in the schema registry.", version_id);
    } else if (info->schema_arn != config_.gsr_schema_arn) {
      v.message = fmt::format("The record's schema version {} belongs to schema {}, not to the channel's schema {}.",
                              version_id, info->schema_arn, config_.gsr_schema_arn);
    } else if (info->id != config_.table().schema_version_id && info->definition != pinned_definition_) {
      v.message = fmt::format(
          "The record was written with version {} of schema {}; the table follows version {} (schema changes need "
          "a new channel).",
          info->number, config_.gsr_schema_arn, config_.table().schema_version_number);
    } else {
      v.ok = true;
    }
    if (versions_.size() > 10000) versions_.clear();
    versions_[version_id] = v;
    return v;
  }

  // Decodes one record into the block (or a rejection). Errors: the registry could not
  // be read (the batch is retried).
  Status Decode(const SourceRecord& rec, size_t range, BlockOwner* owner, schema::ConvertBlock* block) {
    owner->records_in++;
    owner->bytes_in += rec.data.size();
    auto reject = [&](const char* code, std::string message) {
      owner->rejects.push_back({range, rec.offset, rec.sub_sequence, rec.arrival_ms, code, std::move(message)});
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
      ASSIGN_OR_RETURN(VersionVerdict verdict, CheckVersionId(frame->schema_version_id));
      if (!verdict.ok) {
        reject("INVALID_SCHEMA", verdict.message);
        return Status::OK();
      }
      if (frame->compressed) {
        owner->inflated.push_back(std::move(frame->inflated));
        text = owner->inflated.back();
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
    owner->origins.push_back({range, rec.offset, rec.arrival_ms, rec.sub_sequence, rec.data.size()});
    return Status::OK();
  }

  const ChannelConfig config_;
  const TableLayout layout_;
  const std::string pinned_definition_;
  const TableServices services_;
  const TableSinkOptions options_;
  const SinkEnv env_;
  const iceberg::TableIdentifier id_;

  std::mutex mu_;  // one delivery, check or checkpoint read at a time
  nlohmann::json state_;
  bool state_loaded_ = false;
  std::unique_ptr<iceberg::Table> table_;
  int64_t last_orphan_scan_ms_ = 0;

  std::mutex versions_mu_;
  std::unordered_map<std::string, VersionVerdict> versions_;

  mutable std::mutex status_mu_;
  bool table_created_ = false;
  std::string table_location_;
  int64_t live_files_ = 0;
  int64_t commits_ = 0;
  int64_t last_commit_ms_ = 0;

  void RemoveOrphans(const iceberg::FileIO* io);
  std::unique_ptr<pq::ParquetSchema> pschema_;
};

// Deletes the files named when dropped, unless dismissed.
class Cleanup {
 public:
  explicit Cleanup(const iceberg::FileIO* io) : io_(io) {}
  ~Cleanup() {
    for (const auto& p : paths_) (void)io_->Delete(p);
  }
  void Add(std::string path) { paths_.push_back(std::move(path)); }
  void Dismiss() { paths_.clear(); }

 private:
  const iceberg::FileIO* io_;
  std::vector<std::string> paths_;
};

Result<DeliveryCounts> TableSink::Deliver(const DeliveryBatch& batch, RecordSource* source) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(Warehouse wh, OpenWarehouse());
  RETURN_IF_ERROR(EnsureTable(false));
  DeliveryCounts counts;
  if (table_) {
    RETURN_IF_ERROR(table_->Refresh());
    RETURN_IF_ERROR(CheckVersion(table_->metadata()));
    // A replay of a batch whose commit landed (its outcome was unknown): nothing to do.
    auto held = TableCheckpoints(table_->metadata());
    bool all_in = std::all_of(batch.ranges.begin(), batch.ranges.end(), [&](const ShardRange& r) {
      auto it = held.find(r.shard);
      return it != held.end() && it->second >= r.end;
    });
    if (all_in && !batch.ranges.empty()) return counts;
  }
  if (!pschema_) {
    ASSIGN_OR_RETURN(auto ps, pq::ParquetSchema::Make(layout_.schema.schema));
    pschema_ = std::make_unique<pq::ParquetSchema>(std::move(ps));
  }
  pq::WriterOptions wo;
  wo.codec = CodecOf(config_.table().compression);
  wo.compression_level = env_.compression_level;
  wo.threads = 1;
  wo.row_group_size = options_.row_group_bytes;

  const std::string attempt = crypto::RandomUuid().substr(0, 8);
  struct OpenFile {
    std::string bytes;
    std::unique_ptr<pq::StringOutputStream> out;
    std::unique_ptr<pq::FileWriter> writer;
  };
  std::map<int64_t, OpenFile> open;
  std::vector<iceberg::DataFile> files;
  std::vector<Reject> rejects;
  Cleanup cleanup(wh.io);
  int file_no = 0;

  auto cut = [&](int64_t hour) -> Status {
    auto it = open.find(hour);
    ASSIGN_OR_RETURN(pq::FileMetrics m, it->second.writer->Close());
    RETURN_IF_ERROR(EnsureTable(true));
    iceberg::PartitionTuple part = {iceberg::Literal::Int(static_cast<int32_t>(hour))};
    std::string path = table_->NewDataFileLocation(part, fmt::format("{}-{}-{:05d}.parquet", config_.id, attempt, file_no++));
    cleanup.Add(path);
    RETURN_IF_ERROR(wh.io->Write(path, it->second.bytes));
    counts.bytes_out += it->second.bytes.size();
    files.push_back(iceberg::ParquetDataFile(m, path, part, table_->metadata().default_spec_id));
    open.erase(it);
    return Status::OK();
  };

  int64_t seq = 0;
  auto next = [&](schema::ConvertBlock* b) -> Result<bool> {
    auto owner = std::make_shared<BlockOwner>();
    b->records.clear();
    b->readable_end = nullptr;
    size_t bytes = 0;
    while (bytes < options_.block_bytes && owner->records_in < options_.block_records) {
      RecordChunk chunk;
      ASSIGN_OR_RETURN(bool more, source->Next(&chunk));
      if (!more) break;
      owner->chunks.push_back(std::move(chunk));
      const RecordChunk& c = owner->chunks.back();
      for (const auto& rec : c.records) {
        RETURN_IF_ERROR(Decode(rec, c.range, owner.get(), b));
        bytes += rec.data.size();
      }
    }
    if (owner->records_in == 0) return false;
    b->seq = seq++;
    b->owner = std::move(owner);
    return true;
  };
  auto place = [&](schema::ConvertedBlock&& done) -> Status {
    auto* owner = static_cast<BlockOwner*>(done.owner.get());
    BlockOwner none;
    if (owner == nullptr) owner = &none;  // a thread's last row groups
    counts.records_in += owner->records_in;
    counts.bytes_in += owner->bytes_in;
    for (auto& r : owner->rejects) rejects.push_back(std::move(r));
    uint64_t converted_bytes = 0;
    for (const auto& o : owner->origins) converted_bytes += o.bytes;
    for (const auto& rj : done.rejections) {
      const RecordOrigin& o = owner->origins[rj.index];
      converted_bytes -= o.bytes;
      // Undecodable JSON is what AWS calls a DESERIALIZATION_ERROR (as in S3 channels);
      // the converter's other codes name what did not fit the schema.
      std::string code = rj.error.code == schema::RecordErrorCode::kMalformedJson
                             ? "DESERIALIZATION_ERROR"
                             : std::string(schema::RecordErrorCodeName(rj.error.code));
      rejects.push_back({o.range, o.offset, o.sub_sequence, o.arrival_ms, std::move(code), rj.error.message});
    }
    counts.bytes_processed += converted_bytes;
    counts.delivered += static_cast<uint64_t>(done.rows);
    for (auto& [hour, groups] : done.row_groups) {
      auto it = open.find(hour);
      if (it == open.end()) {
        // Map nodes do not move: the stream may point at the entry's string.
        it = open.emplace(hour, OpenFile{}).first;
        it->second.out = std::make_unique<pq::StringOutputStream>(&it->second.bytes);
        ASSIGN_OR_RETURN(it->second.writer, pq::FileWriter::Make(layout_.schema.schema, it->second.out.get(), wo));
      }
      for (auto& g : groups) RETURN_IF_ERROR(it->second.writer->AppendRowGroup(&g));
      if (static_cast<int64_t>(it->second.bytes.size()) >= options_.target_file_size_bytes) RETURN_IF_ERROR(cut(hour));
    }
    for (;;) {
      int64_t total = 0, largest = 0, largest_hour = 0;
      for (const auto& [h, f] : open) {
        total += static_cast<int64_t>(f.bytes.size());
        if (static_cast<int64_t>(f.bytes.size()) >= largest) {
          largest = static_cast<int64_t>(f.bytes.size());
          largest_hour = h;
        }
      }
      if (total <= options_.max_buffered_bytes || open.empty()) break;
      RETURN_IF_ERROR(cut(largest_hour));
    }
    return Status::OK();
  };

  schema::ParallelConverterOptions po;
  po.threads = std::max(1, options_.convert_threads);
  po.carry_across_blocks = true;  // row order inside a file does not matter to a table
  po.converter.route_field_id = layout_.partition_source_id;
  po.route_key = [](int64_t micros) { return FloorDiv(micros, kHourMicros); };
  po.route_range = [](int64_t hour) { return std::make_pair(hour * kHourMicros, (hour + 1) * kHourMicros); };
  RETURN_IF_ERROR(schema::ParallelConverter::Run(layout_.schema, *pschema_, wo, po, next, place));
  while (!open.empty()) RETURN_IF_ERROR(cut(open.begin()->first));

  // The dead-letter queue before the commit that moves past the rejected records.
  counts.failed = rejects.size();
  if (!rejects.empty()) {
    std::sort(rejects.begin(), rejects.end(), [](const Reject& a, const Reject& b) {
      return std::tie(a.range, a.offset, a.sub_sequence) < std::tie(b.range, b.offset, b.sub_sequence);
    });
    DlqBatch dlq(&config_, batch.attempt_ms);
    for (const auto& r : rejects) {
      dlq.Add(batch.ranges[r.range].shard, r.offset, r.arrival_ms, r.code, r.message, r.sub_sequence);
    }
    auto obj = dlq.Finish();
    ASSIGN_OR_RETURN(std::string dlq_bucket, objectstore::BucketFromArn(config_.dlq.bucket_arn));
    objectstore::PutOptions opts;
    opts.content_type = "application/x-ndjson";
    if (!env_.local_buckets) opts.expected_bucket_owner = config_.dlq.expected_bucket_owner;
    if (Status st = PutWithRetry(env_, env_.buckets, dlq_bucket, obj->key, obj->body, opts); !st.ok()) {
      Log({{"eventType", "DLQWriteFailed"}, {"errorMessage", st.message()}});
      return st.WithContext("Writing to the dead-letter queue failed");
    }
    counts.dlq_records = obj->records;
    Log({{"eventType", "DLQWrite"}, {"destination", "s3://" + dlq_bucket + "/" + obj->key}, {"records", obj->records}});
  }
  if (files.empty()) return counts;  // nothing valid: the checkpoint moves in meta.db only

  // One append for every shard of the batch; its summary is the checkpoint.
  std::map<uint32_t, uint64_t> cps = TableCheckpoints(table_->metadata());
  for (const auto& r : batch.ranges) cps[r.shard] = std::max(cps[r.shard], r.end);
  std::map<std::string, std::string> summary = {{std::string(kOwnerProperty), config_.arn}};
  for (const auto& [shard, next_offset] : cps) {
    if (next_offset == 0) continue;
    summary[std::string(kCheckpointPrefix) + stream::ShardIdString(shard)] =
        stream::SequenceNumber{config_.stream_uid, shard, next_offset}.ToString();
  }
  bool already = false;
  auto check = [&](const iceberg::TableMetadata& m) -> Status {
    RETURN_IF_ERROR(CheckVersion(m));
    auto held = TableCheckpoints(m);
    size_t in = 0;
    for (const auto& r : batch.ranges) {
      auto it = held.find(r.shard);
      uint64_t h = it == held.end() ? 0 : it->second;
      if (h >= r.end) {
        ++in;
      } else if (h > r.first) {
        return InvalidArgument(fmt::format(
            "Table {} holds shard {} up to offset {}, inside the batch [{}, {}) being committed; another writer "
            "commits as this channel.",
            TableLabel(), stream::ShardIdString(r.shard), h, r.first, r.end));
      }
    }
    if (in == batch.ranges.size()) {
      already = true;
      return AlreadyExists("the batch is in the table already");
    }
    if (in > 0) {
      return InvalidArgument(fmt::format("Table {} holds part of the batch being committed; another writer commits as "
                                         "this channel.",
                                         TableLabel()));
    }
    return Status::OK();
  };
  auto committed = table_->AppendFiles(files, summary, check);
  if (!committed.ok()) {
    if (already) return counts;  // our files are unreferenced: the cleanup deletes them
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
       {"files", files.size()},
       {"records", counts.delivered},
       {"bytes", counts.bytes_out},
       {"attempts", committed->attempts}});
  RemoveOrphans(wh.io);
  return counts;
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
    if (f.location.find("/data/") == std::string::npos || !name.starts_with(config_.id + "-")) continue;
    if (io->Delete(f.location).ok()) ++removed;
  }
  if (removed > 0) {
    spdlog::info("channel {}: removed {} data file(s) of attempts that never committed", config_.name, removed);
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
  RETURN_IF_ERROR(CanonicalLayout(version->definition, t.partition_fields.at(0)).status());
  t.schema_version_id = version->id;
  t.schema_version_number = version->number;
  return Status::OK();
}

Result<std::unique_ptr<Sink>> TableDestination::MakeSink(const ChannelConfig& config, SinkEnv env) {
  const auto& t = config.table();
  if (t.partition_fields.size() != 1) return InvalidArgument("a streaming table has exactly one partition field");
  auto version = services_.registry->GetVersionById(t.schema_version_id);
  if (!version.ok()) {
    return InvalidArgument(fmt::format("The schema version {} (version {} of {}) the table is made from is gone: {}",
                                       t.schema_version_id, t.schema_version_number, config.gsr_schema_arn,
                                       version.status().message()));
  }
  ASSIGN_OR_RETURN(TableLayout layout, CanonicalLayout(version->definition, t.partition_fields[0]));
  return std::unique_ptr<Sink>(
      new TableSink(config, std::move(layout), version->definition, services_, options_, std::move(env)));
}

}  // namespace icestream::delivery::table
