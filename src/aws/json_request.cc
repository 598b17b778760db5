// ServeJsonRequest (json_request.h).
#include "aws/json_request.h"

#include <fmt/format.h>

#include <exception>

#include "common/json_depth.h"

namespace icestream::aws {

std::optional<ApiError> ServeJsonRequest(std::string_view op, std::string_view body,
                                         std::optional<ApiError> auth_error,
                                         const std::function<void(Params&)>& handler) {
  if (JsonNestingDepth(body, kMaxJsonRequestNesting) > kMaxJsonRequestNesting) {
    return SerializationError(
        fmt::format("Request body nests JSON more than {} levels deep.", kMaxJsonRequestNesting));
  }
  if (JsonValueBound(body, kMaxJsonRequestValues) > kMaxJsonRequestValues) {
    return SerializationError(
        fmt::format("Request body holds more than {} JSON values; no {} request does.",
                    kMaxJsonRequestValues, op));
  }
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return SerializationError("");
  }
  Params p(parsed);
  p.SetAuthError(std::move(auth_error));
  try {
    handler(p);
  } catch (const std::exception& e) {
    // nlohmann throws on type confusion the handler's checks missed: a client error.
    return SerializationError(e.what());
  }
  return std::nullopt;
}

}  // namespace icestream::aws
