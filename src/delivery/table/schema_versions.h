// SchemaVersions: a table channel's view of its registry schema's versions — each
// version's mapped layout (or why it cannot be a table schema at all), looked up by
// version id (GSR_JSON records name theirs) or as the schema's latest (what JSON
// channels follow). Cached: a version never changes once registered.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"
#include "delivery/channel.h"
#include "delivery/table/table_layout.h"
#include "registry/registry.h"

namespace icestream::delivery::table {

// Where a channel looks its schema's versions up: the built-in registry, or — on a
// scale-out worker — a Glue Schema Registry API (another icestream server, or AWS Glue).
// Errors: kNotFound when there is no such version; kUnavailable and the like when the
// registry cannot be read. Thread-safe.
class VersionLookup {
 public:
  virtual ~VersionLookup() = default;
  virtual Result<registry::VersionInfo> GetVersionById(const std::string& id) = 0;
  virtual Result<registry::VersionInfo> GetVersion(const std::string& registry,
                                                   const std::string& schema,
                                                   const registry::VersionSelector& selector) = 0;
};

// The built-in registry as a VersionLookup.
class RegistryVersions final : public VersionLookup {
 public:
  explicit RegistryVersions(registry::SchemaRegistry* registry) : registry_(registry) {}
  Result<registry::VersionInfo> GetVersionById(const std::string& id) override {
    return registry_->GetVersionById(id);
  }
  Result<registry::VersionInfo> GetVersion(const std::string& registry, const std::string& schema,
                                           const registry::VersionSelector& selector) override {
    return registry_->GetVersion(registry, schema, selector);
  }

 private:
  registry::SchemaRegistry* registry_;
};

struct SchemaVersion {
  std::string id;
  int64_t number = 0;
  // False when records of this version cannot go to the table at all: the version
  // belongs to another schema, or its definition does not map to the table's layout
  // (then `reason` says why).
  bool usable = false;
  std::string reason;
  TableLayout layout;  // when usable: the definition mapped, partition column required
};

class SchemaVersions {
 public:
  // `registry` must outlive this object.
  SchemaVersions(VersionLookup* registry, std::string schema_arn,
                 PartitionFieldConfig partition_field);

  // The version with this id; an id the registry does not know is an unusable version.
  // Errors: the registry could not be read.
  Result<std::shared_ptr<const SchemaVersion>> ById(const std::string& id);
  // The schema's newest available version. Errors: the registry could not be read, or
  // the schema is gone (kNotFound).
  Result<std::shared_ptr<const SchemaVersion>> Latest();
  // Version `number` of the schema; kNotFound when there is none (or it was deleted).
  Result<std::shared_ptr<const SchemaVersion>> ByNumber(int64_t number);

 private:
  std::shared_ptr<const SchemaVersion> Make(const registry::VersionInfo& info);
  Result<registry::VersionInfo> Get(const registry::VersionSelector& selector);

  VersionLookup* registry_;
  const std::string schema_arn_;
  const PartitionFieldConfig partition_field_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const SchemaVersion>> by_id_;
};

}  // namespace icestream::delivery::table
