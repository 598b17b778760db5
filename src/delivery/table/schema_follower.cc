// The schema a table channel writes with, and its evolution.
#include "delivery/table/schema_follower.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace icestream::delivery::table {

namespace pq = format::parquet;

Result<std::shared_ptr<const WriteTarget>> WriteTarget::Make(
    std::shared_ptr<const SchemaVersion> version, TableLayout layout, int32_t last_column_id) {
  std::shared_ptr<WriteTarget> t(new WriteTarget());
  ASSIGN_OR_RETURN(auto ps, pq::ParquetSchema::Make(layout.schema.schema));
  t->parquet_ = std::make_unique<pq::ParquetSchema>(std::move(ps));
  t->version_ = std::move(version);
  t->layout_ = std::move(layout);
  t->last_column_id_ = last_column_id;
  return std::shared_ptr<const WriteTarget>(std::move(t));
}

FitResult WriteTarget::Fit(const SchemaVersion& v, const std::string& schema_arn,
                           const std::string& table_label) const {
  {
    std::lock_guard lock(fits_mu_);
    auto it = fits_.find(v.id);
    if (it != fits_.end()) return it->second;
  }
  FitResult r;
  if (!v.usable) {
    r.reason = v.reason;
  } else {
    int32_t last = last_column_id_;
    auto evolved = EvolveSchema(layout_.schema.schema, v.layout.schema.schema, &last);
    if (!evolved.ok()) {
      r.reason = fmt::format("version {} of schema {} is not compatible with table {}: {}",
                             v.number, schema_arn, table_label, evolved.status().message());
    } else {
      r.fit = evolved->fields == layout_.schema.schema.fields ? Fit::kFits : Fit::kNeedsEvolution;
    }
  }
  std::lock_guard lock(fits_mu_);
  fits_[v.id] = r;
  return r;
}

SchemaFollower::SchemaFollower(const ChannelConfig& config, SchemaVersions* versions, SinkEnv env)
    : config_(config), versions_(versions), env_(std::move(env)) {}

Result<TableLayout> SchemaFollower::CanonicalLayout(const TableLayout& layout) {
  // The field ids a catalog assigns when it creates the table (fresh ids, Java's order),
  // so files written before the table exists fit it.
  ASSIGN_OR_RETURN(
      iceberg::TableMetadata m,
      iceberg::NewTableMetadata(layout.schema.schema, layout.spec, iceberg::SortOrder{},
                                "memory:/t", {}, "00000000-0000-0000-0000-000000000000", 0, 2));
  return ConformLayout(layout, *m.CurrentSchema(), *m.DefaultSpec());
}

Result<std::shared_ptr<const WriteTarget>> SchemaFollower::Initial(
    std::shared_ptr<const SchemaVersion> pinned) {
  ASSIGN_OR_RETURN(TableLayout canonical, CanonicalLayout(pinned->layout));
  int32_t last = iceberg::HighestFieldId(canonical.schema.schema);
  return WriteTarget::Make(std::move(pinned), std::move(canonical), last);
}

Result<std::shared_ptr<const WriteTarget>> SchemaFollower::ForTable(
    TableOwner* owner, const std::string& version_id, std::shared_ptr<const WriteTarget> current) {
  iceberg::Table* table = owner->table();
  if (table == nullptr) return current;
  const iceberg::TableMetadata& m = table->metadata();
  const iceberg::Schema* schema = m.CurrentSchema();
  if (schema == nullptr || m.DefaultSpec() == nullptr) {
    return InvalidArgument(
        fmt::format("Table {} has no current schema or partition spec.", owner->Label()));
  }
  if (current && current->version().id == version_id &&
      current->layout().schema.schema.fields == schema->fields &&
      current->last_column_id() == m.last_column_id) {
    return current;
  }
  ASSIGN_OR_RETURN(auto v, versions_->ById(version_id));
  if (!v->usable) {
    return InvalidArgument(
        fmt::format("Table {} follows a schema version the channel cannot use: {}.", owner->Label(),
                    v->reason));
  }
  auto layout = LayoutFor(v->layout, *schema, *m.DefaultSpec());
  if (!layout.ok()) {
    return InvalidArgument(fmt::format("Table {}: {} (the table was changed outside the channel).",
                                       owner->Label(), layout.status().message()));
  }
  return WriteTarget::Make(std::move(v), std::move(*layout), m.last_column_id);
}

Result<std::shared_ptr<const WriteTarget>> SchemaFollower::Evolve(
    TableOwner* owner, std::shared_ptr<const WriteTarget> current,
    std::shared_ptr<const SchemaVersion> v, const Defer& defer) {
  auto newest = v->number >= current->version().number ? v : current->version_ptr();
  iceberg::Table* table = owner->table();
  if (table == nullptr) {
    int32_t last = iceberg::HighestFieldId(current->layout().schema.schema);
    ASSIGN_OR_RETURN(iceberg::Schema evolved,
                     EvolveSchema(current->layout().schema.schema, v->layout.schema.schema, &last));
    TableLayout next = current->layout();
    next.schema.schema = evolved;
    ASSIGN_OR_RETURN(TableLayout canonical, CanonicalLayout(next));
    ASSIGN_OR_RETURN(TableLayout layout,
                     LayoutFor(newest->layout, canonical.schema.schema, canonical.spec));
    int32_t highest = iceberg::HighestFieldId(layout.schema.schema);
    return WriteTarget::Make(newest, std::move(layout), highest);
  }
  if (defer) return defer(*v);
  ASSIGN_OR_RETURN(iceberg::Catalog * catalog, owner->catalog());
  for (int attempt = 1;; ++attempt) {
    RETURN_IF_ERROR(owner->Refresh());
    const iceberg::TableMetadata& m = table->metadata();
    int32_t last = m.last_column_id;
    ASSIGN_OR_RETURN(iceberg::Schema evolved,
                     EvolveSchema(*m.CurrentSchema(), v->layout.schema.schema, &last));
    int32_t next_id = 0;
    for (const auto& s : m.schemas) next_id = std::max(next_id, s.schema_id + 1);
    RETURN_IF_ERROR(owner->BeginSchemaChange(next_id));
    std::vector<iceberg::TableRequirement> req = {
        iceberg::requirement::AssertTableUuid{m.table_uuid},
        iceberg::requirement::AssertCurrentSchemaId{m.current_schema_id}};
    std::vector<iceberg::TableUpdate> upd = {
        iceberg::update::AddSchema{evolved, last}, iceberg::update::SetCurrentSchema{-1},
        iceberg::update::SetProperties{
            {{std::string(kVersionIdProperty), newest->id},
             {std::string(kVersionProperty), std::to_string(newest->number)}}}};
    auto committed = fence_ != nullptr ? catalog->CommitTableFenced(owner->id(), req, upd, *fence_)
                                       : catalog->CommitTable(owner->id(), req, upd);
    if (!committed.ok()) {
      if (committed.status().code() == StatusCode::kConflict && attempt < 5) continue;
      return committed.status().WithContext(
          fmt::format("Evolving the schema of table {}", owner->Label()));
    }
    RETURN_IF_ERROR(owner->EndSchemaChange(committed->metadata.current_schema_id));
    const iceberg::TableMetadata& now = table->metadata();
    ASSIGN_OR_RETURN(TableLayout layout,
                     LayoutFor(newest->layout, *now.CurrentSchema(), *now.DefaultSpec()));
    spdlog::info("channel {}: table {} now follows version {} of {} (schema {})", config_.name,
                 owner->Label(), newest->number, config_.gsr_schema_arn, now.current_schema_id);
    if (env_.log_event) {
      env_.log_event({{"eventType", "SchemaEvolved"},
                      {"schemaVersion", v->number},
                      {"schemaVersionId", v->id},
                      {"tableSchemaId", now.current_schema_id}});
    }
    return WriteTarget::Make(newest, std::move(layout), now.last_column_id);
  }
}

Result<std::shared_ptr<const WriteTarget>> SchemaFollower::FollowLatest(
    TableOwner* owner, std::shared_ptr<const WriteTarget> current, const Defer& defer) {
  ASSIGN_OR_RETURN(auto latest, versions_->Latest());
  if (latest->number <= current->version().number) return current;
  for (int64_t n = latest->number; n > current->version().number; --n) {
    auto v = n == latest->number ? Result<std::shared_ptr<const SchemaVersion>>(latest)
                                 : versions_->ByNumber(n);
    if (!v.ok()) {
      if (v.status().code() == StatusCode::kNotFound) continue;  // a deleted version
      return v.status();
    }
    FitResult f = current->Fit(**v, config_.gsr_schema_arn, owner->Label());
    if (f.fit == Fit::kIncompatible) {
      std::lock_guard lock(mu_);
      if (n == latest->number && ignored_version_ != latest->id) {
        spdlog::warn("channel {}: not following schema version {}: {}", config_.name,
                     latest->number, f.reason);
        if (env_.log_event) {
          env_.log_event({{"eventType", "SchemaVersionIgnored"},
                          {"schemaVersion", latest->number},
                          {"errorMessage", f.reason}});
        }
        ignored_version_ = latest->id;
      }
      continue;
    }
    if (f.fit == Fit::kNeedsEvolution) return Evolve(owner, current, *v, defer);
    // Nothing to add to the table: only the version's value constraints change.
    ASSIGN_OR_RETURN(TableLayout layout, LayoutFor((*v)->layout, current->layout().schema.schema,
                                                   current->layout().spec));
    return WriteTarget::Make(*v, std::move(layout), current->last_column_id());
  }
  return current;
}

std::string SchemaFollower::ignored_version() const {
  std::lock_guard lock(mu_);
  return ignored_version_;
}

}  // namespace icestream::delivery::table
