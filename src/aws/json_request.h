// The JSON 1.1 request path of every AWS front end (Kinesis, Glue): one nesting guard, one
// value-count guard, one parse, one object check, one Params reader with the authentication
// verdict, and one place where nlohmann's type exceptions become SerializationException. The front
// ends keep their own operation tables and call this once per request.
#pragma once

#include <functional>
#include <optional>
#include <string_view>

#include "aws/error.h"
#include "aws/params.h"

namespace icestream::aws {

// No request of the APIs served here nests more than a few levels (Glue definitions travel
// as strings); deeper input is an attack on the recursion of whatever walks it.
inline constexpr size_t kMaxJsonRequestNesting = 64;
// A JSON tree costs tens of bytes per value: a 16 MiB body of small values would cost
// hundreds of MiB before authentication is even looked at. No request served here but
// Kinesis PutRecords (parsed in place, kinesis/handlers/records.cc) holds more than a few
// thousand values; the largest (CreateChannel with its stream list) stays well below this.
inline constexpr size_t kMaxJsonRequestValues = 200000;

// Parses the body of operation `op` and runs `handler` on it, or returns the
// SerializationException to answer instead: nesting beyond kMaxJsonRequestNesting, more
// than kMaxJsonRequestValues values, text that is not a JSON object (answered with no
// message, as AWS does: kinesalite's suite), or a type error the handler's checks missed
// (nlohmann throws on those).
// `auth_error` goes to Params: AWS reports it after the type and model checks (aws-api.md
// §A.7).
std::optional<ApiError> ServeJsonRequest(std::string_view op, std::string_view body,
                                         std::optional<ApiError> auth_error,
                                         const std::function<void(Params&)>& handler);

}  // namespace icestream::aws
