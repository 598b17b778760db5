// Fuzzes the Avro object-container reader and the Iceberg manifest / manifest-list
// readers on top of it (manifests come from object stores other writers share).
// Invariants: no crash, no unbounded allocation; whatever decodes as a manifest list
// re-encodes and decodes to the same entries.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "format/avro/container.h"
#include "iceberg/manifest_avro.h"

using namespace icestream;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  format::avro::ContainerLimits limits;
  limits.max_block_bytes = 16 << 20;
  if (auto reader = format::avro::ContainerReader::Open(in, limits); reader.ok()) {
    format::avro::Datum d;
    for (int i = 0; i < 100000; ++i) {
      auto more = (*reader)->Next(&d);
      if (!more.ok() || !*more) break;
    }
  }
  (void)iceberg::ReadManifest(in);
  if (auto list = iceberg::ReadManifestList(in); list.ok()) {
    auto again = iceberg::WriteManifestList(1, std::nullopt, 1, *list);
    if (!again.ok()) std::abort();
    auto back = iceberg::ReadManifestList(*again);
    if (!back.ok() || back->size() != list->size()) std::abort();
  }
  return 0;
}
