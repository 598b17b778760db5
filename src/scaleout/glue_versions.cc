// Schema versions through the Glue API.
#include "scaleout/glue_versions.h"

#include <cmath>

#include "registry/definition.h"
#include "registry/registry.h"

namespace icestream::scaleout {

using nlohmann::json;

Result<std::shared_ptr<GlueVersions>> GlueVersions::Make(source::AwsEndpoint endpoint) {
  endpoint.service = "glue";
  endpoint.target_prefix = "AWSGlue.";
  ASSIGN_OR_RETURN(auto client, source::AwsJsonClient::Make(std::move(endpoint)));
  return std::shared_ptr<GlueVersions>(new GlueVersions(std::move(client)));
}

Result<registry::VersionInfo> GlueVersions::Get(const json& request) {
  ASSIGN_OR_RETURN(json r, client_->Call("GetSchemaVersion", request));
  registry::VersionInfo v;
  v.id = r.value("SchemaVersionId", "");
  v.schema_arn = r.value("SchemaArn", "");
  v.number = r.value("VersionNumber", int64_t{0});
  v.definition = r.value("SchemaDefinition", "");
  registry::DataFormat f;
  if (registry::ParseDataFormat(r.value("DataFormat", ""), &f)) v.data_format = f;
  if (r.value("Status", "AVAILABLE") != "AVAILABLE") {
    return NotFound("schema version " + v.id + " is not AVAILABLE");
  }
  if (auto parts = registry::ParseSchemaArn(v.schema_arn)) {
    v.registry = parts->registry;
    v.schema = parts->schema;
  }
  if (r.contains("CreatedTime") && r["CreatedTime"].is_number()) {
    v.created_ms = static_cast<int64_t>(std::llround(r["CreatedTime"].get<double>() * 1000.0));
  }
  return v;
}

Result<registry::VersionInfo> GlueVersions::GetVersionById(const std::string& id) {
  return Get(json{{"SchemaVersionId", id}});
}

Result<registry::VersionInfo> GlueVersions::GetVersion(const std::string& registry,
                                                       const std::string& schema,
                                                       const registry::VersionSelector& selector) {
  json number =
      selector.latest ? json{{"LatestVersion", true}} : json{{"VersionNumber", selector.number}};
  return Get(json{{"SchemaId", {{"RegistryName", registry}, {"SchemaName", schema}}},
                  {"SchemaVersionNumber", number}});
}

}  // namespace icestream::scaleout
