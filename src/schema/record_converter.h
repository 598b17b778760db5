// RecordConverter: one JSON record -> one row of a Parquet FileWriter, straight into the
// column writers: walked over simdjson's stage 1 token index (token_walker.h) when the
// record is what the schema expects, otherwise through simdjson On-Demand, which
// converts it or says why not (both write a record the same way).
//
// A record that cannot be converted is rejected whole: everything it added to the
// columns is rolled back and a RecordError says why (kds-delivery-spec.md §2.5:
// missing required field, type mismatch, malformed JSON -> DLQ). Members that the
// schema does not name are dropped (after a syntax check); missing optional members are
// null.
//
// Not thread-safe; one converter per RecordSink (a FileWriter or a RowGroupBuilder),
// which must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "format/parquet/record_sink.h"
#include "schema/json_schema.h"

namespace icestream::schema {

enum class RecordErrorCode : uint8_t {
  kMalformedJson,
  kMissingRequiredField,
  kTypeMismatch,
  kValueOutOfRange,
  kNestingTooDeep,
  // Not a defect of the record: with routing on (ConverterOptions::route_field_id) the
  // record is valid but its routed value lies outside SetRoute's range (or is null).
  kOutsideRoute,
};

// "MALFORMED_JSON", "MISSING_REQUIRED_FIELD", "TYPE_MISMATCH", "VALUE_OUT_OF_RANGE",
// "NESTING_TOO_DEEP", "OUTSIDE_ROUTE".
std::string_view RecordErrorCodeName(RecordErrorCode code);

struct RecordError {
  RecordErrorCode code = RecordErrorCode::kMalformedJson;
  std::string path;     // JSON path of the offending value, e.g. "$.card.tags[2]"
  std::string message;  // human readable, names the path
  // kOutsideRoute: the record's routed value (nullopt: the field is null or absent).
  std::optional<int64_t> route_value;
};

struct ConverterOptions {
  // Containers (objects/arrays) nested deeper than this, counting the record itself
  // as 1, are refused with kNestingTooDeep, also inside dropped members.
  int max_record_depth = 17;
  // Routing (e.g. rows into the files of their partition): the value written for this
  // field id (int, long, date, timestamp, timestamptz; as stored: days or microseconds)
  // must lie within SetRoute's range, or the record is rolled back with kOutsideRoute
  // and its value, so that the caller converts it again into the right sink. 0 = off.
  int32_t route_field_id = 0;
  // Records are walked over stage 1's token index first (token_walker.h), and only the
  // ones that walk declines through simdjson's On-Demand API. false: On-Demand only (the
  // tests' and the fuzzer's reference for the token walk).
  bool token_walk = true;
};

class RecordConverter {
 public:
  // Fails with kUnimplemented for schemas the converter cannot fill from JSON (maps
  // whose keys are not strings).
  static Result<std::unique_ptr<RecordConverter>> Make(const ConvertibleSchema& schema,
                                                       format::parquet::RecordSink* writer,
                                                       ConverterOptions options = {});
  ~RecordConverter();

  // Converts one record (a JSON object). Returns true when a row was added, false
  // when the record was rejected (then *error says why and no row was added); a
  // non-OK status is a writer failure (I/O, codec), after which the writer is unusable.
  // The text is copied into a padded buffer first.
  Result<bool> Convert(std::string_view json, RecordError* error);
  // Same without the copy: json.data() must be followed by at least
  // kPadding readable bytes (simdjson's SIMDJSON_PADDING).
  Result<bool> ConvertPadded(std::string_view json, RecordError* error);
  // ConvertPadded on records[0], records[1], ... in turn, with the same results, but
  // records that follow each other in one buffer (at most 8 bytes apart: a line end,
  // blank lines) are tokenized together (one simdjson stage 1 pass per up to 64 KiB
  // instead of one per record, whose fixed cost was ~half of the pass on records of
  // ~100 bytes). Every record must be followed by kPadding readable bytes. After record
  // i, done(i, converted) is called (*error says why when not converted); a non-OK
  // status from it, or a writer failure, stops the run and is returned.
  Status ConvertRun(const std::string_view* records, size_t count, RecordError* error,
                    const std::function<Status(size_t, bool)>& done);

  // The range [lo, hi) of routed values this converter's sink takes (default: all).
  void SetRoute(int64_t lo, int64_t hi);

  static const size_t kPadding;

  struct Impl;

 private:
  explicit RecordConverter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace icestream::schema
