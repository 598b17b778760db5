// The schema registry of a pool's processes that read another endpoint (`icestream
// worker`, `icestream channels … --pg`): the Glue Schema Registry API at [scaleout]
// registry (--registry), else at the source. An endpoint without that API (kinesalite has
// none: it answers UnknownOperationException) is named in the error with what to pass
// instead:
//
//   GetVersion (CreateChannel's check of GSRSchemaARN)  kInvalidArgument (the request fails)
//   GetVersionById (a table sink's pinned version)       kUnavailable (retried: a process's
//                                                        own configuration never fails a
//                                                        channel the rest of the pool delivers)
//
// Other errors are the Glue client's (scaleout/glue_versions.h).
#pragma once

#include <memory>
#include <string>

#include "delivery/table/schema_versions.h"
#include "server/config.h"

namespace icestream::server {

// The registry of `c` (c.registry, else c.source), checked TLS against `ca_file` (empty:
// the system's). Without either URL every lookup fails with the flags to give.
// kInvalidArgument for a URL that is not http(s)://host[:port].
Result<std::shared_ptr<delivery::table::VersionLookup>> MakePoolRegistry(
    const Config& c, const std::string& ca_file);

// Where MakePoolRegistry looks versions up ("" when nowhere).
std::string PoolRegistryUrl(const Config& c);

}  // namespace icestream::server
