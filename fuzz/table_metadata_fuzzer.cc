// Fuzzes the table-metadata JSON parser (metadata files are read from shared storage and
// arrive in REST register/commit calls). Invariants: no crash; whatever parses is valid
// and survives write -> parse unchanged.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "iceberg/table_metadata_json.h"

using namespace icestream;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto m = iceberg::TableMetadataFromJson(in);
  if (!m.ok()) return 0;
  if (!iceberg::ValidateTableMetadata(*m).ok()) std::abort();
  auto again = iceberg::TableMetadataFromJson(iceberg::TableMetadataToJson(*m));
  if (!again.ok() || !(*again == *m)) std::abort();
  return 0;
}
