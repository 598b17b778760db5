// Reading AWS JSON 1.1 request members with the service's two kinds of failure
// (aws-api.md §A.6): a member of the wrong JSON type is a SerializationException; a
// member that breaks a model constraint (required, length, pattern, range, enum) adds one
// item to a ValidationException ("N validation errors detected: ...", at most 10 items).
//
// Not thread-safe; one per request.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "aws/error.h"
#include "common/utf8.h"

namespace icestream::aws {

// The model types a member can have, for the texts of SerializationException.
enum class MemberType {
  kString,
  kInteger,
  kLong,
  kBoolean,
  kBlob,
  kTimestamp,
  kList,
  kMap,
  kStructure
};

class Params {
 public:
  explicit Params(const nlohmann::json& object) : obj_(object) {}

  const nlohmann::json& object() const { return obj_; }
  bool Has(std::string_view name) const;

  // Typed getters; absent or null → nullopt. Wrong type → records a serialization error.
  std::optional<std::string> Str(std::string_view name);
  std::optional<int64_t> Int(std::string_view name);  // 32-bit model integers (clamped)
  std::optional<int64_t> Long(std::string_view name);
  std::optional<bool> Bool(std::string_view name);
  // Epoch seconds (integer or fractional), returned in milliseconds.
  std::optional<int64_t> TimestampMs(std::string_view name);
  const nlohmann::json* List(std::string_view name);
  const nlohmann::json* Map(std::string_view name);
  const nlohmann::json* Struct(std::string_view name);

  // Constraint checks on a member path (e.g. "records.1.member.partitionKey"). Each
  // failed check adds one validation item.
  void Required(std::string_view path, bool present);
  void Length(std::string_view path, std::string_view value, size_t min, size_t max);
  void ListLength(std::string_view path, size_t size, const std::string& rendered, size_t min,
                  size_t max);
  // `ok` is the result of matching `pattern` (the pattern text goes into the message).
  void Pattern(std::string_view path, std::string_view value, bool ok, std::string_view pattern);
  void Range(std::string_view path, int64_t value, int64_t min, int64_t max);
  void Enum(std::string_view path, std::string_view value,
            std::initializer_list<std::string_view> allowed);
  void Enum(std::string_view path, std::string_view value,
            std::span<const std::string_view> allowed);
  void AddViolation(std::string text);
  // Records a serialization error found outside the typed getters (first one wins).
  void AddSerializationError(std::string message);
  // Moves another reader's findings (a nested structure's) into this one.
  void Absorb(const Params& nested);

  // The request's authentication verdict (null: authenticated). AWS reports it after the
  // body's type and model checks and before any service check (aws-api.md §A.7).
  void SetAuthError(std::optional<ApiError> error) { auth_ = std::move(error); }
  // A service check that fails only once everything above passed (e.g. "Neither
  // StreamARN nor StreamName was provided."); the first one is kept.
  void Defer(ApiError error);

  // True when a serialization or validation error is recorded (not auth, not deferred).
  bool failed() const { return serialization_.has_value() || !violations_.empty(); }
  // The error to return, in AWS's order: serialization, validation (every violation),
  // authentication, then the deferred service error. Handlers call this once every
  // member has been read and before anything touches state.
  std::optional<ApiError> Error() const;

  // What AWS says when a member of `type` holds the JSON value `v` of another type
  // ("Start of list found where not expected", "class java.lang.Boolean can not be
  // converted to an String", ...).
  static std::string TypeMessage(const nlohmann::json& v, MemberType type);
  // Values inside validation messages as AWS renders them (Java's toString): lists
  // "[a, b]" (or each member as `member_str`, AWS's name for structures), maps "{k=v}".
  static std::string RenderList(const nlohmann::json& list, std::string_view member_str = {});
  static std::string RenderMap(const nlohmann::json& map);
  // A list of strings whose members must be min..max characters long: one violation on
  // the list (as AWS reports it), not one per member.
  void ListMemberLengths(std::string_view path, const nlohmann::json& list, size_t min, size_t max);

  // Member path of a top-level member: first letter lower-cased ("StreamName" →
  // "streamName").
  static std::string PathOf(std::string_view member);
  // Renders a value for a validation message: 'text', numbers as is, null.
  static std::string Quote(std::string_view s);

 private:
  const nlohmann::json* Get(std::string_view name) const;
  static int64_t ToLong(const nlohmann::json& v);
  void TypeError(std::string_view name, std::string message);

  const nlohmann::json& obj_;
  std::optional<ApiError> serialization_;
  std::vector<std::string> violations_;
  std::optional<ApiError> auth_;
  std::optional<ApiError> deferred_;
};

// AWS counts string lengths in code points (common/utf8.h).
using ::icestream::IsValidUtf8;
using ::icestream::Utf8Length;

// Character-class checks for the common Kinesis patterns.
bool MatchesNameChars(std::string_view s);                   // [a-zA-Z0-9_.-]+
bool MatchesDecimal(std::string_view s, size_t max_digits);  // 0|([1-9]\d{0,max-1})

}  // namespace icestream::aws
