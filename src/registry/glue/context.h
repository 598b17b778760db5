// Shared pieces of the Glue handlers (internal to registry/glue/): the call, identifier
// resolution (RegistryId, SchemaId, SchemaVersionNumber) and member checks with Glue's
// InvalidInputException texts (aws-api.md §D.2, §D.5).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "aws/error.h"
#include "aws/params.h"
#include "registry/glue/api.h"

namespace icestream::registry::glue {

struct GlueApi::Context {
  SchemaRegistry* registry;
  GlueOptions options;
};

struct Call {
  std::shared_ptr<http::Request> req;
  http::Responder respond;
  std::string request_id;

  void Reply(const nlohmann::json& body) const;
  void Fail(const aws::ApiError& e) const;
  void Fail(const Status& st) const;
};

// A member check's outcome: nullopt = fine.
using Check = std::optional<aws::ApiError>;

aws::ApiError InvalidInput(std::string message);

// Names (SchemaRegistryNameString): 1-255 of [a-zA-Z0-9-_$#.].
Check CheckName(const std::string& value, std::string_view parameter);
// Description: 0-2048 characters.
Check CheckDescription(const std::string& value);
// SchemaDefinition: 1-170000 characters with a non-blank one.
Check CheckDefinitionText(const std::string& value);
// Tags: at most 50, keys 1-128, values 0-256 characters.
Check CheckTags(const nlohmann::json& tags, Tags* out);

// RegistryId {RegistryName | RegistryArn}: exactly one. *name gets the registry.
Check ResolveRegistryId(const GlueApi::Context& ctx, const nlohmann::json& id, std::string* name);
// SchemaId {SchemaArn | SchemaName [+ RegistryName]}: a name without a registry is in
// default-registry ([DECISION] aws-api.md §D.2).
Check ResolveSchemaId(const GlueApi::Context& ctx, const nlohmann::json& id, std::string* registry,
                      std::string* schema);
// SchemaVersionNumber {LatestVersion | VersionNumber 1-100000}: exactly one.
Check ResolveVersionNumber(const nlohmann::json& svn, VersionSelector* out);

// MaxResults (1-100, default 25) and NextToken paging over an in-memory list.
Check PageBounds(aws::Params& p, size_t* offset, size_t* limit);
std::string NextToken(size_t next_offset);

// ISO 8601 with milliseconds (Glue's string timestamps).
std::string Time(int64_t ms);

using Handler = void (*)(GlueApi::Context&, Call&, aws::Params&);
void CreateRegistry(GlueApi::Context&, Call&, aws::Params&);
void GetRegistry(GlueApi::Context&, Call&, aws::Params&);
void ListRegistries(GlueApi::Context&, Call&, aws::Params&);
void UpdateRegistry(GlueApi::Context&, Call&, aws::Params&);
void DeleteRegistry(GlueApi::Context&, Call&, aws::Params&);
void CreateSchema(GlueApi::Context&, Call&, aws::Params&);
void GetSchema(GlueApi::Context&, Call&, aws::Params&);
void ListSchemas(GlueApi::Context&, Call&, aws::Params&);
void UpdateSchema(GlueApi::Context&, Call&, aws::Params&);
void DeleteSchema(GlueApi::Context&, Call&, aws::Params&);
void RegisterSchemaVersion(GlueApi::Context&, Call&, aws::Params&);
void GetSchemaVersion(GlueApi::Context&, Call&, aws::Params&);
void ListSchemaVersions(GlueApi::Context&, Call&, aws::Params&);
void GetSchemaByDefinition(GlueApi::Context&, Call&, aws::Params&);
void DeleteSchemaVersions(GlueApi::Context&, Call&, aws::Params&);
void CheckSchemaVersionValidity(GlueApi::Context&, Call&, aws::Params&);

}  // namespace icestream::registry::glue
