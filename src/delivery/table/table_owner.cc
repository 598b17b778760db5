// The channel's table in the catalog: create, load, check.
#include "delivery/table/table_owner.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace icestream::delivery::table {

namespace {

// Iceberg's write.parquet.compression-codec values.
const char* CodecProperty(TableCompression c) {
  switch (c) {
    case TableCompression::kNone:
      return "uncompressed";
    case TableCompression::kZstd:
      return "zstd";
    case TableCompression::kSnappy:
      return "snappy";
  }
  return "zstd";
}

}  // namespace

TableOwner::TableOwner(const ChannelConfig& config, TableServices services,
                       TableSinkOptions options, SinkEnv env)
    : config_(config),
      services_(std::move(services)),
      options_(options),
      env_(std::move(env)),
      id_{{config_.table().ns}, config_.table().table_name} {}

std::string TableOwner::Label() const {
  return fmt::format("{}.{}", config_.table().ns, config_.table().table_name);
}

Result<TableOwner::Warehouse> TableOwner::OpenWarehouse() {
  ASSIGN_OR_RETURN(std::string bucket, services_.bucket_name(config_.table().table_bucket_arn));
  auto catalog = services_.catalog(bucket);
  if (!catalog.ok()) {
    if (catalog.status().code() == StatusCode::kNotFound) {
      return NotFound(
          fmt::format("The table bucket {} does not exist.", config_.table().table_bucket_arn));
    }
    return catalog.status();
  }
  ASSIGN_OR_RETURN(const iceberg::FileIO* io, services_.io(bucket));
  return Warehouse{*catalog, io};
}

Status TableOwner::CheckWarehouse() {
  std::lock_guard lock(mu_);
  return OpenWarehouse().status();
}

Result<const iceberg::FileIO*> TableOwner::io() {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(Warehouse wh, OpenWarehouse());
  return wh.io;
}

Result<iceberg::Catalog*> TableOwner::catalog() {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(Warehouse wh, OpenWarehouse());
  return wh.catalog;
}

Status TableOwner::LoadState() {
  if (state_loaded_) return Status::OK();
  ASSIGN_OR_RETURN(state_, env_.load_state());
  if (!state_.is_object()) state_ = nlohmann::json::object();
  state_loaded_ = true;
  return Status::OK();
}

Status TableOwner::SaveState(const nlohmann::json& before) {
  if (state_ == before) return Status::OK();
  Status st = env_.save_state(state_);
  if (!st.ok() && shared_ && st.code() == StatusCode::kFailedPrecondition) {
    spdlog::debug("channel {}: the table's notes are the owner's: {}", config_.name, st.message());
    return Status::OK();
  }
  return st;
}

bool TableOwner::exists() const {
  std::lock_guard lock(mu_);
  return table_ != nullptr;
}

iceberg::Table* TableOwner::table() {
  std::lock_guard lock(mu_);
  return table_.get();
}

Result<std::optional<std::string>> TableOwner::Load() {
  std::lock_guard lock(mu_);
  return LoadLocked();
}

Result<std::optional<std::string>> TableOwner::LoadLocked() {
  RETURN_IF_ERROR(LoadState());
  if (table_) return std::optional<std::string>(followed_version_id_);
  ASSIGN_OR_RETURN(Warehouse wh, OpenWarehouse());
  ASSIGN_OR_RETURN(bool exists, wh.catalog->TableExists(id_));
  if (!exists) {
    if (state_.value("created", false)) {
      return NotFound(fmt::format(
          "The table {} that the channel created was deleted; the channel cannot deliver to it "
          "any more (delete the channel and create a new one).",
          Label()));
    }
    return std::optional<std::string>();
  }
  ASSIGN_OR_RETURN(auto table, iceberg::Table::Load(wh.catalog, wh.io, id_, env_.clock));
  const iceberg::TableMetadata& m = table->metadata();
  if (shared_) {
    // The owner may have created or evolved the table since the notes were read.
    state_loaded_ = false;
    RETURN_IF_ERROR(LoadState());
  }
  const nlohmann::json before = state_;
  auto owner = m.properties.find(std::string(kOwnerProperty));
  if (owner == m.properties.end() || owner->second != config_.arn) {
    return AlreadyExists(fmt::format(
        "The table {} already exists and was not created by this channel; a channel only writes "
        "the table it creates (choose another table name, or delete the table).",
        Label()));
  }
  if (state_.contains("table_uuid") && state_["table_uuid"] != m.table_uuid) {
    return NotFound(fmt::format(
        "The table {} was replaced by another table after the channel created it; the channel "
        "cannot deliver to it any more.",
        Label()));
  }
  // The schema the table has must be one the channel set: the one it was created with
  // or evolved to (an evolution that landed just before a crash is still pending here).
  if (state_.contains("pending_schema_id") && state_["pending_schema_id"] == m.current_schema_id) {
    state_["schema_id"] = m.current_schema_id;
  }
  state_.erase("pending_schema_id");
  if (!state_.contains("schema_id")) state_["schema_id"] = m.current_schema_id;
  state_["created"] = true;
  state_["table_uuid"] = m.table_uuid;
  RETURN_IF_ERROR(SaveState(before));
  const iceberg::PartitionSpec* spec = m.DefaultSpec();
  partition_source_id_ =
      spec != nullptr && spec->fields.size() == 1 ? spec->fields[0].source_id : -1;
  RETURN_IF_ERROR(CheckUnchangedLocked(m));
  auto vid = m.properties.find(std::string(kVersionIdProperty));
  followed_version_id_ =
      vid != m.properties.end() ? vid->second : config_.table().schema_version_id;
  table_ = std::move(table);
  NoteMetadataLocked(m);
  return std::optional<std::string>(followed_version_id_);
}

Status TableOwner::CreateIfMissing(const TableLayout& layout, const SchemaVersion& version) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(auto followed, LoadLocked());
  if (followed) return Status::OK();
  ASSIGN_OR_RETURN(Warehouse wh, OpenWarehouse());
  Status ns = wh.catalog->CreateNamespace({config_.table().ns}, {});
  if (!ns.ok() && ns.code() != StatusCode::kAlreadyExists) return ns;
  iceberg::CreateTableRequest req;
  req.name = config_.table().table_name;
  req.schema = layout.schema.schema;
  req.spec = layout.spec;
  req.properties = {
      {std::string(kOwnerProperty), config_.arn},
      {"icestream.channel-name", config_.name},
      {"icestream.stream-arn", config_.stream_arn},
      {"icestream.schema-arn", config_.gsr_schema_arn},
      {std::string(kVersionIdProperty), version.id},
      {std::string(kVersionProperty), std::to_string(version.number)},
      {"write.format.default", "parquet"},
      {"write.parquet.compression-codec", CodecProperty(config_.table().compression)},
      {"write.target-file-size-bytes", std::to_string(options_.target_file_size_bytes)},
      {"history.expire.max-snapshot-age-ms", std::to_string(options_.snapshot_max_age_ms)},
      {"history.expire.min-snapshots-to-keep", std::to_string(options_.min_snapshots_to_keep)}};
  auto created = wh.catalog->CreateTable({config_.table().ns}, req);
  if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
    return created.status();
  }
  if (created.ok()) {
    const nlohmann::json before = state_;
    state_["created"] = true;
    state_["table_uuid"] = created->metadata.table_uuid;
    state_["schema_id"] = created->metadata.current_schema_id;
    RETURN_IF_ERROR(SaveState(before));
    spdlog::info("channel {}: created table {} at {}", config_.name, Label(),
                 created->metadata.location);
    if (env_.log_event) {
      env_.log_event({{"eventType", "TableCreated"}, {"destination", created->metadata.location}});
    }
  }
  return LoadLocked().status();
}

Status TableOwner::Refresh() {
  std::lock_guard lock(mu_);
  if (!table_) return Status::OK();
  RETURN_IF_ERROR(table_->Refresh());
  const iceberg::TableMetadata& m = table_->metadata();
  if (shared_) {
    if (state_.contains("schema_id") && state_["schema_id"] != m.current_schema_id) {
      // The owner evolved the table: its notes say so (or say it is about to).
      state_loaded_ = false;
      RETURN_IF_ERROR(LoadState());
      if (state_.contains("pending_schema_id") &&
          state_["pending_schema_id"] == m.current_schema_id) {
        state_["schema_id"] = m.current_schema_id;
      }
    }
    auto vid = m.properties.find(std::string(kVersionIdProperty));
    if (vid != m.properties.end()) followed_version_id_ = vid->second;
  }
  return CheckUnchangedLocked(m);
}

Status TableOwner::CheckUnchanged(const iceberg::TableMetadata& m) const {
  std::lock_guard lock(mu_);
  return CheckUnchangedLocked(m);
}

Status TableOwner::CheckUnchangedLocked(const iceberg::TableMetadata& m) const {
  if (state_.contains("schema_id") && state_["schema_id"] != m.current_schema_id) {
    return InvalidArgument(fmt::format(
        "The schema of table {} was changed outside the channel (current schema {}, the channel "
        "set {}); the channel cannot write it.",
        Label(), m.current_schema_id, state_["schema_id"].get<int64_t>()));
  }
  const iceberg::PartitionSpec* spec = m.DefaultSpec();
  if (spec == nullptr || spec->fields.size() != 1 ||
      spec->fields[0].transform != iceberg::Transform::Hour() ||
      (partition_source_id_ >= 0 && spec->fields[0].source_id != partition_source_id_)) {
    return InvalidArgument(fmt::format(
        "The partition spec of table {} is no longer the channel's hourly partitioning (it was "
        "changed outside the channel); the channel cannot write it.",
        Label()));
  }
  return Status::OK();
}

std::optional<RedriveProgress> TableOwner::HeldRedrive(const iceberg::TableMetadata& m) const {
  const iceberg::Snapshot* s = m.CurrentSnapshot();
  while (s != nullptr) {
    auto owner = s->summary.find(std::string(kOwnerProperty));
    if (owner != s->summary.end() && owner->second == config_.arn) {
      auto it = s->summary.find(std::string(kRedriveProgressKey));
      if (it == s->summary.end()) return std::nullopt;
      return ParseRedriveProgress(it->second);
    }
    s = s->parent_snapshot_id ? m.SnapshotById(*s->parent_snapshot_id) : nullptr;
  }
  return std::nullopt;
}

std::map<std::string, Position> TableOwner::Checkpoints(const iceberg::TableMetadata& m) const {
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

Status TableOwner::BeginSchemaChange(int32_t next_id) {
  std::lock_guard lock(mu_);
  state_["pending_schema_id"] = next_id;
  return env_.save_state(state_);
}

Status TableOwner::EndSchemaChange(int32_t id) {
  std::lock_guard lock(mu_);
  state_["schema_id"] = id;
  state_.erase("pending_schema_id");
  RETURN_IF_ERROR(env_.save_state(state_));
  if (table_) {
    RETURN_IF_ERROR(table_->Refresh());
    auto vid = table_->metadata().properties.find(std::string(kVersionIdProperty));
    if (vid != table_->metadata().properties.end()) followed_version_id_ = vid->second;
  }
  return Status::OK();
}

TableOwner::Facts TableOwner::facts() const {
  std::lock_guard lock(mu_);
  return facts_;
}

void TableOwner::NoteMetadata(const iceberg::TableMetadata& m) {
  std::lock_guard lock(mu_);
  NoteMetadataLocked(m);
}

void TableOwner::NoteMetadataLocked(const iceberg::TableMetadata& m) {
  facts_.created = true;
  facts_.location = m.location;
  const iceberg::Snapshot* cur = m.CurrentSnapshot();
  if (cur == nullptr) return;
  auto it = cur->summary.find("total-data-files");
  if (it != cur->summary.end()) facts_.live_files = std::strtoll(it->second.c_str(), nullptr, 10);
  it = cur->summary.find("total-files-size");
  if (it != cur->summary.end()) facts_.live_bytes = std::strtoll(it->second.c_str(), nullptr, 10);
}

}  // namespace icestream::delivery::table
