// JSON codec of TableUpdate and TableRequirement (Iceberg REST OpenAPI: discriminator
// "action" for updates, "type" for requirements). Unknown discriminators are errors:
// the REST spec requires servers to reject them with 400.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "iceberg/table_update.h"

namespace icestream::iceberg {

nlohmann::json TableUpdateToJsonValue(const TableUpdate& update);
// Errors: kInvalidArgument naming the action or member at fault.
Result<TableUpdate> TableUpdateFromJsonValue(const nlohmann::json& json);

nlohmann::json TableRequirementToJsonValue(const TableRequirement& requirement);
Result<TableRequirement> TableRequirementFromJsonValue(const nlohmann::json& json);

}  // namespace icestream::iceberg
