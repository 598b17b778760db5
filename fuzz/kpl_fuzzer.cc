// Fuzzes the KPL de-aggregator (delivery/kpl.h), which reads the producer's record bytes.
// Invariants: no crash; input without the magic is plain; an aggregate has records and every
// view it returns lies inside the input.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "delivery/kpl.h"

using namespace icestream::delivery;

namespace {
bool Inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  KplAggregate a = Deaggregate(in);
  if (!in.starts_with(kKplMagic) && a.kind != KplAggregate::Kind::kPlain) std::abort();
  if (a.kind == KplAggregate::Kind::kCorrupt && a.error.empty()) std::abort();
  if (a.kind != KplAggregate::Kind::kAggregate) return 0;
  if (a.records.empty()) std::abort();
  for (const auto& r : a.records) {
    if (!Inside(r.partition_key, in) || !Inside(r.explicit_hash_key, in) || !Inside(r.data, in)) {
      std::abort();
    }
  }
  return 0;
}
