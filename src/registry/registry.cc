// The schema registry's model in SQLite (aws-api.md §D.4, texts from §D.5).
#include "registry/registry.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "aws/arn.h"
#include "common/crypto.h"

namespace icestream::registry {

namespace {

std::string TagsJson(const Tags& t) { return nlohmann::json(t).dump(); }
Tags TagsFrom(const std::string& s) {
  Tags t;
  auto j = nlohmann::json::parse(s, nullptr, false);
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.value().is_string()) t[it.key()] = it.value().get<std::string>();
    }
  }
  return t;
}

Status RegistryNotFound(const std::string& name) {
  return NotFound("Registry is not found. RegistryName: " + name);
}
Status SchemaNotFound(const std::string& registry, const std::string& name) {
  return NotFound(fmt::format(
      "Schema is not found. RegistryName: {}, SchemaName: {}, SchemaArn: null", registry, name));
}

bool ParseStatus(const std::string& s, VersionStatus* out) {
  for (auto v : {VersionStatus::kAvailable, VersionStatus::kPending, VersionStatus::kFailure,
                 VersionStatus::kDeleting}) {
    if (VersionStatusName(v) == s) {
      *out = v;
      return true;
    }
  }
  return false;
}

constexpr const char* kSchemaColumns =
    "registry, name, description, data_format, compatibility, checkpoint, next_version, tags, "
    "created_ms, updated_ms, "
    "(SELECT COALESCE(MAX(number), 0) FROM glue_schema_versions v WHERE v.registry = s.registry "
    "AND "
    "v.schema = s.name AND v.status = 'AVAILABLE')";
constexpr const char* kVersionColumns =
    "id, registry, schema, number, definition, status, created_ms";

}  // namespace

std::string_view VersionStatusName(VersionStatus s) {
  switch (s) {
    case VersionStatus::kAvailable:
      return "AVAILABLE";
    case VersionStatus::kPending:
      return "PENDING";
    case VersionStatus::kFailure:
      return "FAILURE";
    case VersionStatus::kDeleting:
      return "DELETING";
  }
  return "";
}

SchemaRegistry::SchemaRegistry(Database* db, const Clock* clock, RegistryOptions options)
    : db_(db), clock_(clock), options_(std::move(options)) {}

Result<std::unique_ptr<SchemaRegistry>> SchemaRegistry::Open(Database* db, const Clock* clock,
                                                             RegistryOptions options) {
  RETURN_IF_ERROR(db->Exec(R"(
    CREATE TABLE IF NOT EXISTS glue_registries (
      name TEXT PRIMARY KEY, description TEXT NOT NULL, tags TEXT NOT NULL,
      created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS glue_schemas (
      registry TEXT NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL, data_format TEXT NOT NULL,
      compatibility TEXT NOT NULL, checkpoint INTEGER NOT NULL, next_version INTEGER NOT NULL,
      tags TEXT NOT NULL, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,
      PRIMARY KEY (registry, name));
    CREATE TABLE IF NOT EXISTS glue_schema_versions (
      id TEXT PRIMARY KEY, registry TEXT NOT NULL, schema TEXT NOT NULL, number INTEGER NOT NULL,
      definition TEXT NOT NULL, canonical TEXT NOT NULL, status TEXT NOT NULL, created_ms INTEGER NOT NULL,
      UNIQUE (registry, schema, number));
  )"));
  return std::unique_ptr<SchemaRegistry>(new SchemaRegistry(db, clock, std::move(options)));
}

std::optional<SchemaArnParts> ParseSchemaArn(std::string_view text) {
  auto arn = aws::ParseArn(text);
  if (!arn || !arn->Is("glue", "schema")) return std::nullopt;
  std::string_view id = arn->ResourceId();
  size_t slash = id.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == id.size()) return std::nullopt;
  return SchemaArnParts{arn->region, arn->account, std::string(id.substr(0, slash)),
                        std::string(id.substr(slash + 1))};
}

std::optional<RegistryArnParts> ParseRegistryArn(std::string_view text) {
  auto arn = aws::ParseArn(text);
  if (!arn || !arn->Is("glue", "registry") || arn->ResourceId().empty()) return std::nullopt;
  return RegistryArnParts{arn->region, arn->account, std::string(arn->ResourceId())};
}

std::string SchemaRegistry::RegistryArn(const std::string& registry) const {
  return aws::Arn{"aws", "glue", options_.region, options_.account, "registry/" + registry}
      .ToString();
}
std::string SchemaRegistry::SchemaArn(const std::string& registry,
                                      const std::string& schema) const {
  return aws::Arn{"aws", "glue", options_.region, options_.account,
                  "schema/" + registry + "/" + schema}
      .ToString();
}

namespace {

struct Rows {
  // Row -> structs.
  static RegistryInfo Registry(const SqlRow& r) {
    RegistryInfo i;
    i.name = AsText(r[0]);
    i.description = AsText(r[1]);
    i.tags = TagsFrom(AsText(r[2]));
    i.created_ms = AsInt(r[3]);
    i.updated_ms = AsInt(r[4]);
    return i;
  }
  static SchemaInfo Schema(const SqlRow& r) {
    SchemaInfo s;
    s.registry = AsText(r[0]);
    s.name = AsText(r[1]);
    s.description = AsText(r[2]);
    ParseDataFormat(AsText(r[3]), &s.data_format);
    ParseCompatibility(AsText(r[4]), &s.compatibility);
    s.checkpoint = AsInt(r[5]);
    s.next_version = AsInt(r[6]);
    s.tags = TagsFrom(AsText(r[7]));
    s.created_ms = AsInt(r[8]);
    s.updated_ms = AsInt(r[9]);
    s.latest_version = AsInt(r[10]);
    return s;
  }
  static VersionInfo Version(const SqlRow& r) {
    VersionInfo v;
    v.id = AsText(r[0]);
    v.registry = AsText(r[1]);
    v.schema = AsText(r[2]);
    v.number = AsInt(r[3]);
    v.definition = AsText(r[4]);
    ParseStatus(AsText(r[5]), &v.status);
    v.created_ms = AsInt(r[6]);
    return v;
  }
};

Result<SchemaInfo> LoadSchema(Database::Tx& tx, const std::string& registry,
                              const std::string& name) {
  ASSIGN_OR_RETURN(
      auto rows,
      tx.Query(fmt::format("SELECT {} FROM glue_schemas s WHERE registry = ?1 AND name = ?2",
                           kSchemaColumns),
               {registry, name}));
  if (rows.empty()) return SchemaNotFound(registry, name);
  return Rows::Schema(rows[0]);
}

Status RegistryExists(Database::Tx& tx, const std::string& name) {
  ASSIGN_OR_RETURN(auto rows, tx.Query("SELECT 1 FROM glue_registries WHERE name = ?1", {name}));
  if (rows.empty()) return RegistryNotFound(name);
  return Status::OK();
}

}  // namespace

// ---------------------------------------------------------------- registries

Result<RegistryInfo> SchemaRegistry::CreateRegistry(const std::string& name,
                                                    const std::string& description,
                                                    const Tags& tags) {
  int64_t now = clock_->NowMillis();
  if (Status tx_st = db_->Transaction([&](Database::Tx& tx) -> Status {
        ASSIGN_OR_RETURN(auto rows,
                         tx.Query("SELECT 1 FROM glue_registries WHERE name = ?1", {name}));
        if (!rows.empty()) return AlreadyExists("Registry already exists. RegistryName: " + name);
        ASSIGN_OR_RETURN(auto count, tx.Query("SELECT COUNT(*) FROM glue_registries"));
        if (AsInt(count[0][0]) >= options_.max_registries) {
          return ResourceExhausted(
              "More registries cannot be created. The maximum limit has been reached.");
        }
        return tx.Exec(
            "INSERT INTO glue_registries (name, description, tags, created_ms, updated_ms) VALUES "
            "(?1, ?2, ?3, ?4, ?4)",
            {name, description, TagsJson(tags), now});
      });
      !tx_st.ok()) {
    return tx_st;
  }
  return GetRegistry(name);
}

Result<RegistryInfo> SchemaRegistry::GetRegistry(const std::string& name) {
  ASSIGN_OR_RETURN(
      auto rows,
      db_->Query("SELECT name, description, tags, created_ms, updated_ms FROM glue_registries "
                 "WHERE name = ?1",
                 {name}));
  if (rows.empty()) return RegistryNotFound(name);
  RegistryInfo r = Rows::Registry(rows[0]);
  r.arn = RegistryArn(r.name);
  return r;
}

Result<std::vector<RegistryInfo>> SchemaRegistry::ListRegistries() {
  ASSIGN_OR_RETURN(
      auto rows,
      db_->Query("SELECT name, description, tags, created_ms, updated_ms FROM glue_registries "
                 "ORDER BY name"));
  std::vector<RegistryInfo> out;
  for (const auto& row : rows) {
    out.push_back(Rows::Registry(row));
    out.back().arn = RegistryArn(out.back().name);
  }
  return out;
}

Result<RegistryInfo> SchemaRegistry::UpdateRegistry(const std::string& name,
                                                    const std::string& description) {
  if (Status tx_st = db_->Transaction([&](Database::Tx& tx) -> Status {
        RETURN_IF_ERROR(RegistryExists(tx, name));
        return tx.Exec(
            "UPDATE glue_registries SET description = ?2, updated_ms = ?3 WHERE name = ?1",
            {name, description, clock_->NowMillis()});
      });
      !tx_st.ok()) {
    return tx_st;
  }
  return GetRegistry(name);
}

Result<RegistryInfo> SchemaRegistry::DeleteRegistry(const std::string& name) {
  ASSIGN_OR_RETURN(RegistryInfo info, GetRegistry(name));
  if (Status tx_st = db_->Transaction([&](Database::Tx& tx) -> Status {
        RETURN_IF_ERROR(RegistryExists(tx, name));
        RETURN_IF_ERROR(tx.Exec("DELETE FROM glue_schema_versions WHERE registry = ?1", {name}));
        RETURN_IF_ERROR(tx.Exec("DELETE FROM glue_schemas WHERE registry = ?1", {name}));
        return tx.Exec("DELETE FROM glue_registries WHERE name = ?1", {name});
      });
      !tx_st.ok()) {
    return tx_st;
  }
  return info;
}

// ---------------------------------------------------------------- schemas

Result<SchemaRegistry::CreateSchemaResult> SchemaRegistry::CreateSchema(
    const std::string& registry, bool registry_given, const std::string& name, DataFormat format,
    Compatibility compatibility, const std::string& description, const Tags& tags,
    const std::optional<std::string>& definition) {
  if (definition) RETURN_IF_ERROR(CheckDefinition(format, *definition));
  int64_t now = clock_->NowMillis();
  std::string version_id = crypto::RandomUuid();
  if (Status tx_st = db_->Transaction([&](Database::Tx& tx) -> Status {
        ASSIGN_OR_RETURN(auto reg,
                         tx.Query("SELECT 1 FROM glue_registries WHERE name = ?1", {registry}));
        if (reg.empty()) {
          if (registry_given) return RegistryNotFound(registry);
          // The default registry appears with its first schema.
          RETURN_IF_ERROR(tx.Exec(
              "INSERT INTO glue_registries (name, description, tags, created_ms, updated_ms) "
              "VALUES (?1, '', '{}', ?2, ?2)",
              {registry, now}));
        }
        ASSIGN_OR_RETURN(auto existing,
                         tx.Query("SELECT 1 FROM glue_schemas WHERE registry = ?1 AND name = ?2",
                                  {registry, name}));
        if (!existing.empty()) return AlreadyExists("Schema already exists. SchemaName: " + name);
        if (definition) {
          ASSIGN_OR_RETURN(auto count, tx.Query("SELECT COUNT(*) FROM glue_schema_versions"));
          if (AsInt(count[0][0]) >= options_.max_schema_versions) {
            return ResourceExhausted(
                "More schema versions cannot be created. The maximum limit has been reached.");
          }
        }
        RETURN_IF_ERROR(tx.Exec(
            "INSERT INTO glue_schemas (registry, name, description, data_format, compatibility, "
            "checkpoint, next_version, tags, created_ms, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5, "
            "?6, ?7, "
            "?8, ?9, ?9)",
            {registry, name, description, std::string(DataFormatName(format)),
             std::string(CompatibilityName(compatibility)), int64_t{definition ? 1 : 0},
             int64_t{definition ? 2 : 1}, TagsJson(tags), now}));
        if (!definition) return Status::OK();
        return tx.Exec(
            "INSERT INTO glue_schema_versions (id, registry, schema, number, definition, "
            "canonical, status, "
            "created_ms) VALUES (?1, ?2, ?3, 1, ?4, ?5, 'AVAILABLE', ?6)",
            {version_id, registry, name, *definition, CanonicalDefinition(format, *definition),
             now});
      });
      !tx_st.ok()) {
    return tx_st;
  }
  CreateSchemaResult result;
  ASSIGN_OR_RETURN(result.schema, GetSchema(registry, name));
  if (definition) {
    ASSIGN_OR_RETURN(VersionInfo v, GetVersionById(version_id));
    result.version = std::move(v);
  }
  return result;
}

Result<SchemaInfo> SchemaRegistry::GetSchema(const std::string& registry, const std::string& name) {
  SchemaInfo s;
  if (Status tx_st = db_->Transaction([&](Database::Tx& tx) -> Status {
        ASSIGN_OR_RETURN(s, LoadSchema(tx, registry, name));
        return Status::OK();
      });
      !tx_st.ok()) {
    return tx_st;
  }
  s.registry_arn = RegistryArn(s.registry);
  s.arn = SchemaArn(s.registry, s.name);
  return s;
}

Result<std::vector<SchemaInfo>> SchemaRegistry::ListSchemas(
    const std::optional<std::string>& registry) {
  std::vector<SchemaInfo> out;
  if (Status tx_st = db_->Transaction([&](Database::Tx& tx) -> Status {
        std::vector<SqlRow> rows;
        if (registry) {
          RETURN_IF_ERROR(RegistryExists(tx, *registry));
          ASSIGN_OR_RETURN(
              rows, tx.Query(fmt::format(
                                 "SELECT {} FROM glue_schemas s WHERE registry = ?1 ORDER BY name",
                                 kSchemaColumns),
                             {*registry}));
        } else {
          ASSIGN_OR_RETURN(
              rows, tx.Query(fmt::format("SELECT {} FROM glue_schemas s ORDER BY registry, name",
                                         kSchemaColumns)));
        }
        for (const auto& r : rows) out.push_back(Rows::Schema(r));
        return Status::OK();
      });
      !tx_st.ok()) {
    return tx_st;
  }
  for (auto& s : out) {
    s.registry_arn = RegistryArn(s.registry);
    s.arn = SchemaArn(s.registry, s.name);
  }
  return out;
}

Result<SchemaInfo> SchemaRegistry::UpdateSchema(const std::string& registry,
                                                const std::string& name,
                                                const std::optional<VersionSelector>& checkpoint,
                                                const std::optional<Compatibility>& compatibility,
                                                const std::optional<std::string>& description) {
  if (Status tx_st = db_->Transaction([&](Database::Tx& tx) -> Status {
        ASSIGN_OR_RETURN(SchemaInfo s, LoadSchema(tx, registry, name));
        int64_t now = clock_->NowMillis();
        if (checkpoint) {
          int64_t number = checkpoint->latest ? s.latest_version : checkpoint->number;
          ASSIGN_OR_RETURN(
              auto rows, tx.Query("SELECT status FROM glue_schema_versions WHERE registry = ?1 AND "
                                  "schema = ?2 AND number = ?3",
                                  {registry, name, number}));
          if (rows.empty() || AsText(rows[0][0]) != "AVAILABLE") {
            return InvalidArgument(fmt::format(
                "Schema version {} is not an AVAILABLE version of schema {}", number, name));
          }
          RETURN_IF_ERROR(
              tx.Exec("UPDATE glue_schemas SET checkpoint = ?3, updated_ms = ?4 WHERE registry = "
                      "?1 AND name = ?2",
                      {registry, name, number, now}));
        }
        if (compatibility) {
          RETURN_IF_ERROR(tx.Exec(
              "UPDATE glue_schemas SET compatibility = ?3, updated_ms = ?4 WHERE registry = ?1 AND "
              "name = ?2",
              {registry, name, std::string(CompatibilityName(*compatibility)), now}));
        }
        if (description) {
          RETURN_IF_ERROR(tx.Exec(
              "UPDATE glue_schemas SET description = ?3, updated_ms = ?4 WHERE registry = ?1 AND "
              "name = ?2",
              {registry, name, *description, now}));
        }
        return Status::OK();
      });
      !tx_st.ok()) {
    return tx_st;
  }
  return GetSchema(registry, name);
}

Result<SchemaInfo> SchemaRegistry::DeleteSchema(const std::string& registry,
                                                const std::string& name) {
  ASSIGN_OR_RETURN(SchemaInfo s, GetSchema(registry, name));
  if (Status tx_st = db_->Transaction([&](Database::Tx& tx) -> Status {
        RETURN_IF_ERROR(LoadSchema(tx, registry, name).status());
        RETURN_IF_ERROR(
            tx.Exec("DELETE FROM glue_schema_versions WHERE registry = ?1 AND schema = ?2",
                    {registry, name}));
        return tx.Exec("DELETE FROM glue_schemas WHERE registry = ?1 AND name = ?2",
                       {registry, name});
      });
      !tx_st.ok()) {
    return tx_st;
  }
  return s;
}

// ---------------------------------------------------------------- versions

Result<VersionInfo> SchemaRegistry::RegisterVersion(const std::string& registry,
                                                    const std::string& name,
                                                    const std::string& definition) {
  std::string id;
  if (Status tx_st = db_->Transaction([&](Database::Tx& tx) -> Status {
        ASSIGN_OR_RETURN(SchemaInfo s, LoadSchema(tx, registry, name));
        RETURN_IF_ERROR(CheckDefinition(s.data_format, definition));
        std::string canonical = CanonicalDefinition(s.data_format, definition);
        ASSIGN_OR_RETURN(
            auto same,
            tx.Query("SELECT id FROM glue_schema_versions WHERE registry = ?1 AND schema = ?2 AND "
                     "canonical = ?3 ORDER BY number LIMIT 1",
                     {registry, name, canonical}));
        if (!same.empty()) {  // idempotent: the version that already holds this definition
          id = AsText(same[0][0]);
          return Status::OK();
        }
        if (s.compatibility == Compatibility::kDisabled && s.next_version > 1) {
          return InvalidArgument(
              fmt::format("Compatibility DISABLED does not allow versioning. SchemaId: "
                          "SchemaId(schemaArn=null, schemaName={}, "
                          "registryName={})",
                          name, registry));
        }
        ASSIGN_OR_RETURN(auto count, tx.Query("SELECT COUNT(*) FROM glue_schema_versions"));
        if (AsInt(count[0][0]) >= options_.max_schema_versions) {
          return ResourceExhausted(
              "More schema versions cannot be created. The maximum limit has been reached.");
        }
        // Compatibility from version 2 on, against the latest AVAILABLE version or, for the
        // *_ALL modes, every AVAILABLE version from the checkpoint on.
        std::string status = "AVAILABLE";
        bool all = s.compatibility == Compatibility::kBackwardAll ||
                   s.compatibility == Compatibility::kForwardAll ||
                   s.compatibility == Compatibility::kFullAll;
        if (s.compatibility != Compatibility::kNone &&
            s.compatibility != Compatibility::kDisabled && s.latest_version > 0) {
          std::vector<SqlRow> earlier;
          if (all) {
            ASSIGN_OR_RETURN(
                earlier,
                tx.Query("SELECT definition FROM glue_schema_versions WHERE registry = ?1 AND "
                         "schema = ?2 AND status = 'AVAILABLE' AND number >= ?3",
                         {registry, name, s.checkpoint}));
          } else {
            ASSIGN_OR_RETURN(
                earlier,
                tx.Query("SELECT definition FROM glue_schema_versions WHERE registry = ?1 AND "
                         "schema = ?2 AND number = ?3",
                         {registry, name, s.latest_version}));
          }
          for (const auto& row : earlier) {
            if (!Incompatibility(s.data_format, s.compatibility, definition, AsText(row[0]))
                     .empty()) {
              status = "FAILURE";
              break;
            }
          }
        }
        id = crypto::RandomUuid();
        int64_t now = clock_->NowMillis();
        RETURN_IF_ERROR(
            tx.Exec("INSERT INTO glue_schema_versions (id, registry, schema, number, definition, "
                    "canonical, "
                    "status, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    {id, registry, name, s.next_version, definition, canonical, status, now}));
        if (s.next_version == 1) {
          RETURN_IF_ERROR(
              tx.Exec("UPDATE glue_schemas SET checkpoint = 1 WHERE registry = ?1 AND name = ?2",
                      {registry, name}));
        }
        return tx.Exec(
            "UPDATE glue_schemas SET next_version = next_version + 1, updated_ms = ?3 WHERE "
            "registry = ?1 AND "
            "name = ?2",
            {registry, name, now});
      });
      !tx_st.ok()) {
    return tx_st;
  }
  return GetVersionById(id);
}

Result<VersionInfo> SchemaRegistry::GetVersionById(const std::string& id) {
  ASSIGN_OR_RETURN(
      auto rows,
      db_->Query(fmt::format("SELECT {} FROM glue_schema_versions WHERE id = ?1", kVersionColumns),
                 {id}));
  if (rows.empty()) return NotFound("Schema version is not found. SchemaVersionId: " + id);
  VersionInfo v = Rows::Version(rows[0]);
  ASSIGN_OR_RETURN(SchemaInfo s, GetSchema(v.registry, v.schema));
  v.data_format = s.data_format;
  v.schema_arn = s.arn;
  return v;
}

Result<VersionInfo> SchemaRegistry::GetVersion(const std::string& registry, const std::string& name,
                                               const VersionSelector& sel) {
  ASSIGN_OR_RETURN(SchemaInfo s, GetSchema(registry, name));
  int64_t number = sel.latest ? s.latest_version : sel.number;
  ASSIGN_OR_RETURN(
      auto rows,
      db_->Query(fmt::format("SELECT {} FROM glue_schema_versions WHERE registry = ?1 AND "
                             "schema = ?2 AND number = ?3",
                             kVersionColumns),
                 {registry, name, number}));
  if (rows.empty()) {
    return NotFound(fmt::format(
        "Schema version is not found. RegistryName: {}, SchemaName: {}, SchemaArn: null, "
        "VersionNumber: {}, isLatestVersion: {}",
        registry, name, sel.latest ? "null" : std::to_string(sel.number), sel.latest));
  }
  VersionInfo v = Rows::Version(rows[0]);
  v.data_format = s.data_format;
  v.schema_arn = s.arn;
  return v;
}

Result<std::vector<VersionInfo>> SchemaRegistry::ListVersions(const std::string& registry,
                                                              const std::string& name) {
  ASSIGN_OR_RETURN(SchemaInfo s, GetSchema(registry, name));
  ASSIGN_OR_RETURN(
      auto rows,
      db_->Query(fmt::format("SELECT {} FROM glue_schema_versions WHERE registry = ?1 AND "
                             "schema = ?2 ORDER BY number",
                             kVersionColumns),
                 {registry, name}));
  std::vector<VersionInfo> out;
  for (const auto& r : rows) {
    out.push_back(Rows::Version(r));
    out.back().data_format = s.data_format;
    out.back().schema_arn = s.arn;
  }
  return out;
}

Result<VersionInfo> SchemaRegistry::GetVersionByDefinition(const std::string& registry,
                                                           const std::string& name,
                                                           const std::string& definition) {
  ASSIGN_OR_RETURN(SchemaInfo s, GetSchema(registry, name));
  RETURN_IF_ERROR(CheckDefinition(s.data_format, definition));
  ASSIGN_OR_RETURN(
      auto rows,
      db_->Query(fmt::format("SELECT {} FROM glue_schema_versions WHERE registry = ?1 AND "
                             "schema = ?2 AND canonical = ?3 ORDER BY number LIMIT 1",
                             kVersionColumns),
                 {registry, name, CanonicalDefinition(s.data_format, definition)}));
  if (rows.empty()) {
    return NotFound(fmt::format(
        "Schema version is not found. RegistryName: {}, SchemaName: {}, SchemaArn: null: no "
        "version has this definition",
        registry, name));
  }
  VersionInfo v = Rows::Version(rows[0]);
  v.data_format = s.data_format;
  v.schema_arn = s.arn;
  return v;
}

Result<std::vector<VersionError>> SchemaRegistry::DeleteVersions(const std::string& registry,
                                                                 const std::string& name,
                                                                 int64_t first, int64_t last) {
  std::vector<VersionError> errors;
  if (Status tx_st = db_->Transaction([&](Database::Tx& tx) -> Status {
        ASSIGN_OR_RETURN(SchemaInfo s, LoadSchema(tx, registry, name));
        if (first <= s.checkpoint && s.checkpoint <= last) {
          return InvalidArgument(fmt::format(
              "The checkpoint version {} of schema {} cannot be deleted; move the checkpoint "
              "with UpdateSchema first",
              s.checkpoint, name));
        }
        if (first <= 1) {
          return InvalidArgument(
              "Schema version 1 cannot be deleted; use DeleteSchema to delete the schema");
        }
        for (int64_t n = first; n <= last; ++n) {
          RETURN_IF_ERROR(
              tx.Exec("DELETE FROM glue_schema_versions WHERE registry = ?1 AND schema = ?2 AND "
                      "number = ?3",
                      {registry, name, n}));
          if (tx.changes() == 0) {
            errors.push_back({n, "EntityNotFoundException",
                              fmt::format("Schema version is not found. RegistryName: {}, "
                                          "SchemaName: {}, VersionNumber: {}",
                                          registry, name, n)});
          }
        }
        return Status::OK();
      });
      !tx_st.ok()) {
    return tx_st;
  }
  return errors;
}

}  // namespace icestream::registry
