// Registry schema versions of a table channel.
#include "delivery/table/schema_versions.h"

#include <fmt/format.h>

namespace icestream::delivery::table {

SchemaVersions::SchemaVersions(VersionLookup* registry, std::string schema_arn,
                               PartitionFieldConfig partition_field)
    : registry_(registry),
      schema_arn_(std::move(schema_arn)),
      partition_field_(std::move(partition_field)) {}

std::shared_ptr<const SchemaVersion> SchemaVersions::Make(const registry::VersionInfo& info) {
  auto v = std::make_shared<SchemaVersion>();
  v->id = info.id;
  v->number = info.number;
  if (info.schema_arn != schema_arn_) {
    v->reason = fmt::format(
        "the record's schema version {} belongs to schema {}, not to the channel's schema {}",
        info.id, info.schema_arn, schema_arn_);
    return v;
  }
  auto layout = MakeTableLayout(info.definition, partition_field_);
  if (!layout.ok()) {
    v->reason = fmt::format("version {} of schema {} cannot be a table schema: {}", info.number,
                            schema_arn_, layout.status().message());
    return v;
  }
  v->usable = true;
  v->layout = std::move(*layout);
  return v;
}

Result<std::shared_ptr<const SchemaVersion>> SchemaVersions::ById(const std::string& id) {
  {
    std::lock_guard lock(mu_);
    auto it = by_id_.find(id);
    if (it != by_id_.end()) return it->second;
  }
  auto info = registry_->GetVersionById(id);
  std::shared_ptr<const SchemaVersion> v;
  if (!info.ok()) {
    if (info.status().code() != StatusCode::kNotFound) return info.status();
    auto unknown = std::make_shared<SchemaVersion>();
    unknown->id = id;
    unknown->reason =
        fmt::format("the record's schema version {} is not in the schema registry", id);
    v = std::move(unknown);
  } else {
    v = Make(*info);
  }
  std::lock_guard lock(mu_);
  if (by_id_.size() > 10000) by_id_.clear();
  return by_id_.emplace(id, v).first->second;
}

Result<registry::VersionInfo> SchemaVersions::Get(const registry::VersionSelector& selector) {
  auto arn = registry::ParseSchemaArn(schema_arn_);
  if (!arn) return InvalidArgument("not a schema ARN: " + schema_arn_);
  return registry_->GetVersion(arn->registry, arn->schema, selector);
}

Result<std::shared_ptr<const SchemaVersion>> SchemaVersions::Latest() {
  ASSIGN_OR_RETURN(registry::VersionInfo info, Get(registry::VersionSelector{true, 0}));
  return ById(info.id);
}

Result<std::shared_ptr<const SchemaVersion>> SchemaVersions::ByNumber(int64_t number) {
  ASSIGN_OR_RETURN(registry::VersionInfo info, Get(registry::VersionSelector{false, number}));
  return ById(info.id);
}

}  // namespace icestream::delivery::table
