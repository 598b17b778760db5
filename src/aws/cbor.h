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
// Cost: requests are transcoded in one streaming pass (no tree), so time is linear in
// the body and memory is the JSON text (at most about 8x the body, for bodies made of
// one-byte items; a blob costs 4/3). The data-plane hot paths (PutRecords requests,
// GetRecords answers) skip the JSON detour altogether with CborReader / CborAppend*.
//
// Thread-safety: free functions and a cursor over caller-owned bytes; no shared state.
#pragma once

#include <cstdint>
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
// Most data items (every head: keys, values, containers) a request may have. No Kinesis
// request comes near it (PutRecords: 500 records of at most 7 items each); the bound
// keeps the work a body costs proportional to its useful content (a 16 MB body of
// one-byte items would otherwise be 16 million values to walk and build).
inline constexpr size_t kMaxCborItems = 16384;

// Decodes one CBOR data item (a map) into JSON 1.1 text. Definite and indefinite
// lengths are accepted; tags are ignored (the model says which members are timestamps).
// Errors (SerializationException): malformed or truncated CBOR, trailing bytes, nesting
// deeper than kMaxCborNesting, more than kMaxCborItems items, a non-map top level, a non-text map
// key, a byte string outside a blob member, a blob member that is not a byte string, a timestamp
// member that is not a number, a number that is not finite, text that is not UTF-8.
std::optional<ApiError> CborRequestToJson(std::string_view cbor, const CborModel& model,
                                          std::string* json_out);

// The checks CborRequestToJson makes before anything else, for callers that read a
// request in place: one well-formed data item, nesting <= kMaxCborNesting, at most
// kMaxCborItems items (walked only as far as that bound). SerializationException.
std::optional<ApiError> CborCheckRequest(std::string_view cbor);

// Encodes a JSON 1.1 body (an answer or an error body) as CBOR: blob members (base64
// strings) become byte strings, timestamp members (epoch seconds) tag 1 + milliseconds.
// An empty body stays empty. Text that is not JSON is returned as a CBOR text string.
std::string JsonResponseToCbor(std::string_view json, const CborModel& model);

// Writers (RFC 8949 §3): definite lengths, shortest heads, appended to *out.
void CborAppendHead(std::string* out, int major, uint64_t n);
void CborAppendInt(std::string* out, int64_t v);
void CborAppendText(std::string* out, std::string_view s);
void CborAppendBytes(std::string* out, std::string_view b);
// A timestamp member: tag 1 + integer epoch milliseconds (see above).
void CborAppendEpochMillis(std::string* out, int64_t ms);

// A cursor over one CBOR data item in caller-owned bytes (which must outlive it).
// Next() reads item heads (tags skipped); containers are walked by the caller, which
// reads their items in turn (definite: `length` items, twice that for maps; indefinite:
// until TakeBreak()). Every failure is sticky and means the input is not well-formed.
class CborReader {
 public:
  enum class Kind : uint8_t {
    kUnsigned,  // major 0: value = length
    kNegative,  // major 1: value = -1 - length
    kBytes,
    kText,
    kArray,
    kMap,
    kFalse,
    kTrue,
    kNull,
    kFloat,  // half, single or double: `number`
    kOther,  // undefined and other simple values
  };
  struct Item {
    Kind kind = Kind::kNull;
    uint64_t length = 0;  // string bytes, array items, map pairs; the integer's argument
    bool indefinite = false;
    double number = 0;
  };

  explicit CborReader(std::string_view in) : in_(in) {}

  // The next item's head. False at a break (0xff) or on malformed input.
  bool Next(Item* item);
  // Inside an indefinite container: consumes the break that ends it, if it is next.
  bool TakeBreak();
  // The body of a kBytes/kText item just read: a view into the input when definite; the
  // chunks joined in *scratch when indefinite. Text is not UTF-8-checked here.
  bool StringBody(const Item& item, std::string* scratch, std::string_view* out);
  // Skips what follows an item's head (a string's bytes, a container's items, checked
  // for well-formedness down to `max_depth` more levels of nesting).
  bool SkipBody(const Item& item, size_t max_depth);

  size_t position() const { return pos_; }
  // Heads read so far (tags not counted).
  uint64_t items() const { return items_; }
  // Reading more than `n` heads fails (and sets too_many_items()): a bound checked as the
  // input is walked, not after.
  void LimitItems(uint64_t n) { item_limit_ = n; }
  bool too_many_items() const { return items_ > item_limit_; }
  bool at_end() const { return pos_ == in_.size(); }
  bool failed() const { return failed_; }

 private:
  bool Fail() {
    failed_ = true;
    return false;
  }
  bool ReadArgument(int ai, uint64_t* arg);

  std::string_view in_;
  size_t pos_ = 0;
  uint64_t items_ = 0;
  uint64_t item_limit_ = UINT64_MAX;
  bool failed_ = false;
};

// Checks one value of a request that the caller reads itself with `reader` (its head
// just read; `member` is the member it belongs to) exactly as CborRequestToJson would,
// and skips it. Errors as there.
std::optional<ApiError> CborCheckValue(CborReader* reader, const CborReader::Item& item,
                                       std::string_view member, const CborModel& model);

// An answer already in CBOR (Content-Type application/x-amz-cbor-1.1).
http::Response CborResponse(std::string body, std::string_view request_id);

}  // namespace icestream::aws
