// GlueApi: the AWS Glue Schema Registry operations (JSON 1.1, `X-Amz-Target:
// AWSGlue.<Op>`, aws-api.md §D) over a SchemaRegistry: CreateRegistry, GetRegistry,
// ListRegistries, UpdateRegistry, DeleteRegistry, CreateSchema, GetSchema, ListSchemas,
// UpdateSchema, DeleteSchema, RegisterSchemaVersion, GetSchemaVersion,
// ListSchemaVersions, GetSchemaByDefinition, DeleteSchemaVersions,
// CheckSchemaVersionValidity. Errors are Glue's (capital "Message"): InvalidInput,
// EntityNotFound, AlreadyExists, ResourceNumberLimitExceeded; wrong member types are
// SerializationException.
//
// Thread-safe; runs on the caller's thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "http/message.h"
#include "registry/registry.h"

namespace icestream::registry::glue {

struct GlueOptions {
  std::string region = "us-east-1";
  std::string account = "000000000000";
};

class GlueApi {
 public:
  // `registry` must outlive the API.
  GlueApi(SchemaRegistry* registry, GlueOptions options);
  ~GlueApi();

  bool Knows(std::string_view op) const;
  // `op` is the operation after "AWSGlue."; the envelope was checked by the router.
  void Handle(std::string_view op, std::shared_ptr<http::Request> req, http::Responder respond);

  struct Context;

 private:
  std::unique_ptr<Context> ctx_;
};

}  // namespace icestream::registry::glue
