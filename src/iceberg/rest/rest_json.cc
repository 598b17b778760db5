// Iceberg REST catalog wire shapes (REST OpenAPI "components/schemas").
#include "iceberg/rest/rest_json.h"

#include <fmt/format.h>

#include "iceberg/json_util.h"
#include "iceberg/schema/schema_json.h"
#include "iceberg/table_metadata_json.h"
#include "iceberg/table_update_json.h"

namespace icestream::iceberg::rest {

using nlohmann::json;
namespace ju = json_util;

std::string ErrorBody(const ErrorModel& e) {
  return json{{"error", {{"message", e.message}, {"type", e.type}, {"code", e.code}}}}.dump();
}

Result<ErrorModel> ParseErrorBody(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  const json* e = j.is_discarded() ? nullptr : ju::Find(j, "error");
  if (e == nullptr || !e->is_object()) return InvalidArgument("not an Iceberg error response");
  ErrorModel m;
  ASSIGN_OR_RETURN(auto code, ju::OptInt(*e, "code", "error"));
  ASSIGN_OR_RETURN(auto type, ju::OptString(*e, "type", "error"));
  ASSIGN_OR_RETURN(auto message, ju::OptString(*e, "message", "error"));
  m.code = code.value_or(0);
  m.type = type.value_or("");
  m.message = message.value_or("");
  return m;
}

Status StatusFromError(const ErrorModel& e, bool commit_route, const Namespace& ns, const TableIdentifier& id) {
  std::string text = e.type.empty() ? e.message : e.type + ": " + e.message;
  switch (e.code) {
    case 400: return InvalidArgument(text);
    case 401:
    case 403: return FailedPrecondition("not authorized: " + text);
    case 404:
      if (e.type == "NoSuchNamespaceException") return NoSuchNamespaceError(ns.empty() ? id.ns : ns);
      if (e.type == "NoSuchTableException" || !id.name.empty()) return NoSuchTableError(id);
      return NotFound(text);
    case 406: return Unimplemented(text);
    case 409:
      if (e.type == "CommitFailedException" || (commit_route && e.type != "AlreadyExistsException")) {
        return Conflict(text);
      }
      if (e.type == "NamespaceNotEmptyException") return NamespaceNotEmptyError(ns);
      return AlreadyExists(text);
    case 419: return FailedPrecondition("authentication timed out: " + text);
    case 422: return InvalidArgument(text);
    default: break;
  }
  if (commit_route && (e.code == 500 || e.code == 502 || e.code == 503 || e.code == 504)) {
    return UnknownOutcome("commit state unknown: " + text);
  }
  if (e.code == 503) return Unavailable(text);
  if (e.code >= 500) return Unavailable(fmt::format("server error {}: {}", e.code, text));
  return Internal(fmt::format("unexpected HTTP status {}: {}", e.code, text));
}

std::string PercentEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Result<std::string> PercentDecode(std::string_view s, bool plus_is_space) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size()) return InvalidArgument("bad percent escape");
      int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
      if (hi < 0 || lo < 0) return InvalidArgument("bad percent escape");
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (plus_is_space && s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string EncodeNamespace(const Namespace& ns) {
  std::string out;
  for (size_t i = 0; i < ns.size(); ++i) {
    if (i) out += "%1F";
    out += PercentEncode(ns[i]);
  }
  return out;
}

Namespace SplitNamespace(std::string_view decoded) {
  Namespace ns;
  size_t start = 0;
  while (true) {
    size_t p = decoded.find('\x1f', start);
    ns.emplace_back(decoded.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start));
    if (p == std::string_view::npos) break;
    start = p + 1;
  }
  return ns;
}

json TableIdentifierToJson(const TableIdentifier& id) { return {{"namespace", id.ns}, {"name", id.name}}; }

Result<TableIdentifier> TableIdentifierFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("table identifier must be an object");
  TableIdentifier id;
  ASSIGN_OR_RETURN(id.name, ju::String(j, "name", "table identifier"));
  if (ju::Find(j, "namespace") == nullptr) return InvalidArgument("table identifier: missing \"namespace\"");
  ASSIGN_OR_RETURN(id.ns, ju::StringList(j, "namespace", "table identifier"));
  return id;
}

json CreateTableRequestToJson(const CreateTableRequest& r) {
  json j = {{"name", r.name}, {"schema", SchemaToJsonValue(r.schema)}};
  if (r.location) j["location"] = *r.location;
  if (r.spec) j["partition-spec"] = PartitionSpecToJsonValue(*r.spec);
  if (r.write_order) j["write-order"] = SortOrderToJsonValue(*r.write_order);
  if (r.stage_create) j["stage-create"] = true;
  if (!r.properties.empty()) j["properties"] = r.properties;
  return j;
}

Result<CreateTableRequest> CreateTableRequestFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("CreateTableRequest must be a JSON object");
  const char* where = "CreateTableRequest";
  CreateTableRequest r;
  ASSIGN_OR_RETURN(r.name, ju::String(j, "name", where));
  const json* schema = ju::Find(j, "schema");
  if (schema == nullptr) return InvalidArgument("CreateTableRequest: missing \"schema\"");
  ASSIGN_OR_RETURN(r.schema, SchemaFromJsonValue(*schema));
  ASSIGN_OR_RETURN(r.location, ju::OptString(j, "location", where));
  if (const json* spec = ju::Find(j, "partition-spec")) {
    int32_t next = kFirstPartitionFieldId;
    ASSIGN_OR_RETURN(r.spec, PartitionSpecFromJsonValue(*spec, &next));
  }
  if (const json* order = ju::Find(j, "write-order")) {
    ASSIGN_OR_RETURN(r.write_order, SortOrderFromJsonValue(*order));
  }
  ASSIGN_OR_RETURN(auto stage, ju::OptBool(j, "stage-create", where));
  r.stage_create = stage.value_or(false);
  ASSIGN_OR_RETURN(r.properties, ju::StringMap(j, "properties", where));
  // "format-version" is a reserved property: it picks the format at creation and is not
  // kept. Tables are created as v2 here, so only "2" is accepted.
  if (auto fv = r.properties.find("format-version"); fv != r.properties.end()) {
    if (fv->second != "2") {
      return InvalidArgument(std::string(where) + ": format-version " + fv->second +
                             " is not supported for new tables (this catalog creates v2 tables)");
    }
    r.properties.erase(fv);
  }
  return r;
}

std::string LoadTableResultToJson(const LoadedTable& t) {
  std::string metadata = t.metadata_json ? *t.metadata_json : TableMetadataToJson(t.metadata);
  std::string out = "{\"metadata-location\":";
  out += t.metadata_location.empty() ? "null" : json(t.metadata_location).dump();
  out += ",\"metadata\":";
  out += metadata;
  out += ",\"config\":";
  out += json(t.config).dump();
  out += "}";
  return out;
}

Result<LoadedTable> LoadTableResultFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("LoadTableResult must be a JSON object");
  LoadedTable t;
  ASSIGN_OR_RETURN(auto location, ju::OptString(j, "metadata-location", "LoadTableResult"));
  t.metadata_location = location.value_or("");
  const json* m = ju::Find(j, "metadata");
  if (m == nullptr) return InvalidArgument("LoadTableResult: missing \"metadata\"");
  ASSIGN_OR_RETURN(t.metadata, TableMetadataFromJsonValue(*m));
  ASSIGN_OR_RETURN(t.config, ju::StringMap(j, "config", "LoadTableResult"));
  return t;
}

json CommitTableRequestToJson(const TableCommit& c, bool with_identifier) {
  json j = json::object();
  if (with_identifier) j["identifier"] = TableIdentifierToJson(c.id);
  j["requirements"] = json::array();
  for (const auto& r : c.requirements) j["requirements"].push_back(TableRequirementToJsonValue(r));
  j["updates"] = json::array();
  for (const auto& u : c.updates) j["updates"].push_back(TableUpdateToJsonValue(u));
  return j;
}

Result<TableCommit> CommitTableRequestFromJson(const json& j, bool identifier_required) {
  if (!j.is_object()) return InvalidArgument("CommitTableRequest must be a JSON object");
  TableCommit c;
  if (const json* id = ju::Find(j, "identifier")) {
    ASSIGN_OR_RETURN(c.id, TableIdentifierFromJson(*id));
  } else if (identifier_required) {
    return InvalidArgument("CommitTableRequest: \"identifier\" is required in a transaction");
  }
  const json* reqs = ju::Find(j, "requirements");
  const json* updates = ju::Find(j, "updates");
  if (reqs == nullptr || !reqs->is_array()) return InvalidArgument("CommitTableRequest: \"requirements\" must be an array");
  if (updates == nullptr || !updates->is_array()) return InvalidArgument("CommitTableRequest: \"updates\" must be an array");
  for (const auto& r : *reqs) {
    ASSIGN_OR_RETURN(TableRequirement req, TableRequirementFromJsonValue(r));
    c.requirements.push_back(std::move(req));
  }
  for (const auto& u : *updates) {
    ASSIGN_OR_RETURN(TableUpdate upd, TableUpdateFromJsonValue(u));
    c.updates.push_back(std::move(upd));
  }
  return c;
}

}  // namespace icestream::iceberg::rest
