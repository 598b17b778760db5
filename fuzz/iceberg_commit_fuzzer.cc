// Fuzzes what a REST commit body does to a table: CommitTableRequest parsing, then the
// requirements and updates applied to a fixed partitioned table. Invariants: no crash;
// a successful result is valid metadata that survives the JSON round trip.
#include <cstdint>
#include <cstdlib>
#include <variant>
#include <string_view>

#include <nlohmann/json.hpp>

#include "iceberg/rest/rest_json.h"
#include "iceberg/table_metadata_json.h"
#include "iceberg/table_update.h"

using namespace icestream;

namespace {

const iceberg::TableMetadata& Base() {
  static const iceberg::TableMetadata base = [] {
    iceberg::Schema s;
    s.fields = {{1, "id", true, iceberg::Primitive(iceberg::TypeId::kLong), ""},
                {2, "ts", false, iceberg::Primitive(iceberg::TypeId::kTimestampTz), ""}};
    iceberg::PartitionSpec spec;
    spec.fields = {{2, 0, "ts_day", iceberg::Transform::Day()}};
    return *iceberg::NewTableMetadata(s, spec, {}, "s3://b/t", {}, "9c12d441-03fe-4693-9a96-a0705ddf69c1", 1);
  }();
  return base;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return 0;
  auto commit = iceberg::rest::CommitTableRequestFromJson(j, false);
  if (!commit.ok()) return 0;
  // A create (assert-create) starts from nothing, everything else from the fixed table.
  bool create = false;
  for (const auto& r : commit->requirements) create |= std::holds_alternative<iceberg::requirement::AssertCreate>(r);
  const iceberg::TableMetadata* base = create ? nullptr : &Base();
  if (!iceberg::CheckRequirements(base, commit->requirements).ok()) return 0;
  auto next = iceberg::ApplyUpdates(base, commit->updates, 2);
  if (!next.ok()) return 0;
  if (!iceberg::ValidateTableMetadata(*next).ok()) std::abort();
  auto again = iceberg::TableMetadataFromJson(iceberg::TableMetadataToJson(*next));
  if (!again.ok() || !(*again == *next)) std::abort();
  return 0;
}
