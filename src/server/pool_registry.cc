// The Glue API of a pool's registry, with errors that say which flag to give.
#include "server/pool_registry.h"

#include <fmt/format.h>

#include "scaleout/glue_versions.h"
#include "source/kinesis/aws_json_client.h"

namespace icestream::server {

namespace {

constexpr std::string_view kWhatToPass =
    "pass --registry URL (an icestream server, or https://glue.<region>.amazonaws.com for AWS "
    "Glue), or set registry in the [scaleout] section of --config";

class PoolRegistry final : public delivery::table::VersionLookup {
 public:
  PoolRegistry(std::shared_ptr<delivery::table::VersionLookup> glue, std::string url,
               bool is_source)
      : glue_(std::move(glue)), url_(std::move(url)), is_source_(is_source) {}

  Result<registry::VersionInfo> GetVersionById(const std::string& id) override {
    if (!glue_) return Unavailable(Unreachable("reading schema versions"));
    auto v = glue_->GetVersionById(id);
    if (!v.ok() && NoGlueApi(v.status())) return Unavailable(NoApi(v.status()));
    return v;
  }
  Result<registry::VersionInfo> GetVersion(const std::string& registry, const std::string& schema,
                                           const registry::VersionSelector& selector) override {
    if (!glue_) return InvalidArgument(Unreachable("checking the schema"));
    auto v = glue_->GetVersion(registry, schema, selector);
    if (!v.ok() && NoGlueApi(v.status())) return InvalidArgument(NoApi(v.status()));
    return v;
  }

 private:
  // The endpoint does not speak the Glue API at all (rather than: the schema is missing).
  static bool NoGlueApi(const Status& st) {
    const std::string& m = st.message();
    return m.find("UnknownOperationException") != std::string::npos ||
           m.find("HTTP 404") != std::string::npos || m.find("HTTP 405") != std::string::npos;
  }
  std::string NoApi(const Status& st) const {
    return fmt::format(
        "the schema registry {} does not answer the Glue Schema Registry API ({}){}: {}.", url_,
        st.message(),
        is_source_ ? " (the registry is the source unless one is given; kinesalite has no Glue API)"
                   : "",
        kWhatToPass);
  }
  static std::string Unreachable(std::string_view what) {
    return fmt::format("{} needs a schema registry: {}.", what, kWhatToPass);
  }

  std::shared_ptr<delivery::table::VersionLookup> glue_;
  const std::string url_;
  const bool is_source_;
};

}  // namespace

std::string PoolRegistryUrl(const Config& c) { return c.registry.empty() ? c.source : c.registry; }

Result<std::shared_ptr<delivery::table::VersionLookup>> MakePoolRegistry(
    const Config& c, const std::string& ca_file) {
  const std::string url = PoolRegistryUrl(c);
  std::shared_ptr<delivery::table::VersionLookup> glue;
  if (!url.empty()) {
    source::AwsEndpoint e;
    e.url = url;
    e.region = c.region;
    e.credentials = source::CredentialsFromEnvironment();
    e.ca_file = ca_file;
    ASSIGN_OR_RETURN(glue, scaleout::GlueVersions::Make(e));
  }
  return std::shared_ptr<delivery::table::VersionLookup>(
      new PoolRegistry(std::move(glue), url, c.registry.empty()));
}

}  // namespace icestream::server
