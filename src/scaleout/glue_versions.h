// GlueVersions: a scale-out worker's schema registry — the Glue Schema Registry API of
// another icestream server (the source server by default) or of AWS Glue itself
// (`--registry URL`), read with GetSchemaVersion. Versions never change once registered,
// and the channel caches what it reads (schema_versions.h).
//
// Thread-safety: as AwsJsonClient.
#pragma once

#include <memory>

#include "delivery/table/schema_versions.h"
#include "source/kinesis/aws_json_client.h"

namespace icestream::scaleout {

class GlueVersions final : public delivery::table::VersionLookup {
 public:
  // `endpoint`: URL, region and credentials (service and target are filled in).
  static Result<std::shared_ptr<GlueVersions>> Make(source::AwsEndpoint endpoint);

  Result<registry::VersionInfo> GetVersionById(const std::string& id) override;
  Result<registry::VersionInfo> GetVersion(const std::string& registry, const std::string& schema,
                                           const registry::VersionSelector& selector) override;

 private:
  explicit GlueVersions(std::unique_ptr<source::AwsJsonClient> client)
      : client_(std::move(client)) {}
  Result<registry::VersionInfo> Get(const nlohmann::json& request);
  std::unique_ptr<source::AwsJsonClient> client_;
};

}  // namespace icestream::scaleout
