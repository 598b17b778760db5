// The Iceberg REST catalog's wire shapes (REST OpenAPI components) and path encoding,
// shared by the server handlers and the client: the error model, CreateTableRequest,
// LoadTableResult / CommitTableResponse, CommitTableRequest, TableIdentifier, and
// namespaces as path segments (levels joined by the 0x1F unit separator, then
// percent-encoded).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "iceberg/catalog.h"

namespace icestream::iceberg::rest {

// IcebergErrorResponse.error (ErrorModel).
struct ErrorModel {
  int code = 500;
  std::string type;
  std::string message;
};

std::string ErrorBody(const ErrorModel& error);
// Parses {"error": {...}}; kInvalidArgument when the body is not the error model.
Result<ErrorModel> ParseErrorBody(std::string_view body);

// The status a client reports for an error response (inverse of the server's mapping):
// 404 NoSuchNamespaceException -> NoSuchNamespaceError, 404 -> NoSuchTableError, 409
// CommitFailedException -> kConflict, 409 NamespaceNotEmpty -> kFailedPrecondition,
// 409 -> kAlreadyExists, 5xx on commit routes -> kUnknownOutcome, 503 -> kUnavailable.
Status StatusFromError(const ErrorModel& error, bool commit_route, const Namespace& ns,
                       const TableIdentifier& id);

std::string PercentEncode(std::string_view s);
// Percent-decoding of a path segment ('+' stays '+'); kInvalidArgument for bad escapes.
Result<std::string> PercentDecode(std::string_view s, bool plus_is_space = false);
std::string EncodeNamespace(const Namespace& ns);
// Splits a decoded namespace string on 0x1F.
Namespace SplitNamespace(std::string_view decoded);

nlohmann::json TableIdentifierToJson(const TableIdentifier& id);
Result<TableIdentifier> TableIdentifierFromJson(const nlohmann::json& json);

nlohmann::json CreateTableRequestToJson(const CreateTableRequest& request);
Result<CreateTableRequest> CreateTableRequestFromJson(const nlohmann::json& json);

// LoadTableResult (and CommitTableResponse, a subset). Uses table.metadata_json when
// set; `metadata-location` is null for a staged table.
std::string LoadTableResultToJson(const LoadedTable& table);
Result<LoadedTable> LoadTableResultFromJson(const nlohmann::json& json);

nlohmann::json CommitTableRequestToJson(const TableCommit& commit, bool with_identifier);
// `identifier` is required inside a transaction.
Result<TableCommit> CommitTableRequestFromJson(const nlohmann::json& json, bool identifier_required);

}  // namespace icestream::iceberg::rest
