// The CBOR codec of AWS JSON-RPC services (`application/x-amz-cbor-1.1`, aws-api.md §A.3):
// a request body in CBOR becomes the JSON 1.1 text of the same request, and a JSON 1.1
// answer becomes CBOR, so that the operation handlers see one model whatever the client
// spoke. The two wire formats differ only in two member types, which the service names
// in a CborModel:
//
//   model type   JSON 1.1                         CBOR
//   blob         base64 string                    byte string (major type 2)
//   timestamp    number, epoch seconds (fraction) tag 1 + integer epoch milliseconds
//
// Timestamps follow the AWS SDKs for Java (the CBOR clients in practice, KCL included):
// they write tag 1 with *milliseconds*, not the seconds of RFC 8949. On input a tagged or
// plain number of magnitude >= 1e11 is read as milliseconds, a smaller one as seconds
// (1e11 ms is March 1973, 1e11 s is the year 5138), so RFC-style clients work too.
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "aws/error.h"

namespace icestream::aws {

inline constexpr std::string_view kCborContentType = "application/x-amz-cbor-1.1";
inline constexpr std::string_view kJsonContentType = "application/x-amz-json-1.1";

// Member names (at any depth) whose model type is blob or timestamp. AWS models use a
// member name with one type throughout a service, so names suffice.
struct CborModel {
  std::set<std::string, std::less<>> blobs;
  std::set<std::string, std::less<>> timestamps;
};

// Deepest nesting of maps and arrays a request may have.
inline constexpr size_t kMaxCborNesting = 64;

// Decodes one CBOR data item (a map) into JSON 1.1 text. Definite and indefinite
// lengths are accepted. Errors (SerializationException): malformed or truncated CBOR,
// trailing bytes, nesting deeper than kMaxCborNesting, a non-map top level, a non-text
// map key, a byte string outside a blob member, a blob member that is not a byte
// string, a timestamp member that is not a number, text that is not UTF-8.
std::optional<ApiError> CborRequestToJson(std::string_view cbor, const CborModel& model,
                                          std::string* json_out);

// Encodes a JSON 1.1 body (an answer or an error body) as CBOR: blob members (base64
// strings) become byte strings, timestamp members (epoch seconds) tag 1 + milliseconds.
// An empty body stays empty. Text that is not JSON is returned as a CBOR text string.
std::string JsonResponseToCbor(std::string_view json, const CborModel& model);

}  // namespace icestream::aws
