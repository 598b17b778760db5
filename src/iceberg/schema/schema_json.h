// JSON codec of Iceberg schemas and types (Iceberg spec, Appendix C "JSON
// serialization": schemas, struct/list/map types, primitive type strings).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "common/status.h"
#include "iceberg/schema/schema.h"

namespace icestream::iceberg {

// {"type":"struct","schema-id":0,"identifier-field-ids":[..],"fields":[..]}; the
// identifier list is written only when non-empty.
nlohmann::json SchemaToJsonValue(const Schema& schema);
std::string SchemaToJson(const Schema& schema);
nlohmann::json TypeToJsonValue(const Type& type);

// Parses and validates (Validate in schema.h). Errors are kInvalidArgument naming the
// offending member. Unknown members are ignored (forward compatibility).
Result<Schema> SchemaFromJsonValue(const nlohmann::json& json);
Result<Schema> SchemaFromJson(std::string_view text);
Result<Type> TypeFromJsonValue(const nlohmann::json& json);

}  // namespace icestream::iceberg
