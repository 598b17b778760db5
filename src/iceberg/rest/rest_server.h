// RestCatalogServer: the Iceberg REST catalog protocol (REST OpenAPI, formats.md §C.12)
// over Catalog implementations, one per warehouse. Served under `base_path` (the
// server mounts it at /iceberg, so clients use http://host:port/iceberg as their URI).
//
//   GET  /v1/config?warehouse=W        -> {"defaults":{}, "overrides":{"prefix": W'}}
//   /v1/{prefix}/namespaces…, /v1/{prefix}/tables/rename, /v1/{prefix}/transactions/commit
//   and the same without {prefix} for the default warehouse.
//
// Errors use the spec's error model {"error":{"message","type","code"}}: 400
// BadRequestException, 404 NoSuchNamespaceException / NoSuchTableException, 406
// UnsupportedOperationException, 409 AlreadyExistsException / NamespaceNotEmptyException
// / CommitFailedException, 422 UnprocessableEntityException, 500
// CommitStateUnknownException (commit routes) / InternalServerError, 503.
//
// Thread-safe; handlers run on the caller's thread.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"
#include "http/message.h"
#include "iceberg/catalog.h"

namespace icestream::iceberg::rest {

struct RestServerOptions {
  std::string base_path = "/iceberg";
  // Catalog defaults handed to clients in GET /v1/config.
  Properties defaults;
};

struct Warehouses {
  // The prefix (path segment) of a warehouse named in GET /v1/config?warehouse=…
  // (a table bucket name or ARN); kInvalidArgument / kNotFound when there is none.
  std::function<Result<std::string>(const std::string& warehouse)> prefix_for;
  // The catalog of a prefix; an empty prefix is the default warehouse.
  std::function<Result<Catalog*>(const std::string& prefix)> catalog;
  // The warehouse's root location (a URI, no trailing '/'), for the table location rules
  // (rest/table_locations.h). Empty function: locations are not checked.
  std::function<Result<std::string>(const std::string& prefix)> root_location;
};

class RestCatalogServer {
 public:
  RestCatalogServer(RestServerOptions options, Warehouses warehouses);
  http::Response Handle(const http::Request& request) const;

 private:
  RestServerOptions options_;
  Warehouses warehouses_;
};

}  // namespace icestream::iceberg::rest
