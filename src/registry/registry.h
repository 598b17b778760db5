// SchemaRegistry: the Glue Schema Registry's model — registries, schemas, schema
// versions — persisted in SQLite (meta.db), with AWS's semantics (aws-api.md §D.4):
// version numbers from 1, idempotent registration of a known definition, compatibility
// checks from version 2 on (an incompatible definition becomes a FAILURE version, not
// an error), checkpoints, DISABLED schemas, and the default registry created by the
// first CreateSchema without a registry.
//
// Errors carry AWS's texts (§D.5) and map to Glue exceptions through aws::GlueError:
// kNotFound (EntityNotFound), kAlreadyExists, kInvalidArgument (InvalidInput),
// kResourceExhausted (ResourceNumberLimitExceeded).
// Thread-safe (every operation is one SQLite transaction).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/sqlite.h"
#include "common/status.h"
#include "registry/compatibility.h"
#include "registry/definition.h"

namespace icestream::registry {

inline constexpr const char* kDefaultRegistry = "default-registry";

struct RegistryOptions {
  std::string region = "us-east-1";
  std::string account = "000000000000";
  int64_t max_registries = 100;         // AWS account quota
  int64_t max_schema_versions = 10000;  // per account (all schemas)
};

using Tags = std::map<std::string, std::string>;

struct RegistryInfo {
  std::string name;
  std::string arn;
  std::string description;
  Tags tags;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
};

struct SchemaInfo {
  std::string registry;
  std::string name;
  std::string registry_arn;
  std::string arn;
  std::string description;
  DataFormat data_format = DataFormat::kAvro;
  Compatibility compatibility = Compatibility::kBackward;
  int64_t checkpoint = 0;      // version number compatibility was last set at
  int64_t latest_version = 0;  // newest AVAILABLE version (0: none)
  int64_t next_version = 1;
  Tags tags;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
};

enum class VersionStatus : uint8_t { kAvailable, kPending, kFailure, kDeleting };
std::string_view VersionStatusName(VersionStatus s);

struct VersionInfo {
  std::string id;  // UUID
  std::string registry;
  std::string schema;
  std::string schema_arn;
  int64_t number = 0;
  std::string definition;
  DataFormat data_format = DataFormat::kAvro;
  VersionStatus status = VersionStatus::kAvailable;
  int64_t created_ms = 0;
};

// A version by number, or the latest AVAILABLE one.
struct VersionSelector {
  bool latest = false;
  int64_t number = 0;
};

struct VersionError {
  int64_t number = 0;
  std::string code;
  std::string message;
};

// The parts of a Glue schema ARN,
// arn:<partition>:glue:<region>:<account>:schema/<registry>/<schema> (kds-delivery-spec.md §1.3,
// the Glue API's SchemaId.SchemaArn), or nullopt for anything else. Names are not checked against
// the registry's naming rules.
struct SchemaArnParts {
  std::string region, account, registry, schema;
};
std::optional<SchemaArnParts> ParseSchemaArn(std::string_view arn);
// The registry name of arn:<partition>:glue:<region>:<account>:registry/<registry>, with
// its region and account, or nullopt.
struct RegistryArnParts {
  std::string region, account, registry;
};
std::optional<RegistryArnParts> ParseRegistryArn(std::string_view arn);

class SchemaRegistry {
 public:
  static Result<std::unique_ptr<SchemaRegistry>> Open(Database* db, const Clock* clock,
                                                      RegistryOptions options = {});

  std::string RegistryArn(const std::string& registry) const;
  std::string SchemaArn(const std::string& registry, const std::string& schema) const;

  Result<RegistryInfo> CreateRegistry(const std::string& name, const std::string& description,
                                      const Tags& tags);
  Result<RegistryInfo> GetRegistry(const std::string& name);
  Result<std::vector<RegistryInfo>> ListRegistries();
  Result<RegistryInfo> UpdateRegistry(const std::string& name, const std::string& description);
  // Deletes the registry with its schemas and versions.
  Result<RegistryInfo> DeleteRegistry(const std::string& name);

  struct CreateSchemaResult {
    SchemaInfo schema;
    std::optional<VersionInfo> version;  // when a definition was given
  };
  Result<CreateSchemaResult> CreateSchema(const std::string& registry, bool registry_given,
                                          const std::string& name, DataFormat format,
                                          Compatibility compatibility,
                                          const std::string& description, const Tags& tags,
                                          const std::optional<std::string>& definition);
  Result<SchemaInfo> GetSchema(const std::string& registry, const std::string& name);
  // All schemas, or those of one registry (which must exist).
  Result<std::vector<SchemaInfo>> ListSchemas(const std::optional<std::string>& registry);
  // Compatibility needs a checkpoint; a checkpoint alone moves it.
  Result<SchemaInfo> UpdateSchema(const std::string& registry, const std::string& name,
                                  const std::optional<VersionSelector>& checkpoint,
                                  const std::optional<Compatibility>& compatibility,
                                  const std::optional<std::string>& description);
  Result<SchemaInfo> DeleteSchema(const std::string& registry, const std::string& name);

  Result<VersionInfo> RegisterVersion(const std::string& registry, const std::string& name,
                                      const std::string& definition);
  Result<VersionInfo> GetVersionById(const std::string& id);
  Result<VersionInfo> GetVersion(const std::string& registry, const std::string& name,
                                 const VersionSelector& v);
  Result<std::vector<VersionInfo>> ListVersions(const std::string& registry,
                                                const std::string& name);
  Result<VersionInfo> GetVersionByDefinition(const std::string& registry, const std::string& name,
                                             const std::string& definition);
  // Deletes versions first..last; per-version failures are returned, not raised.
  Result<std::vector<VersionError>> DeleteVersions(const std::string& registry,
                                                   const std::string& name, int64_t first,
                                                   int64_t last);

 private:
  SchemaRegistry(Database* db, const Clock* clock, RegistryOptions options);

  Database* db_;
  const Clock* clock_;
  RegistryOptions options_;
};

}  // namespace icestream::registry
