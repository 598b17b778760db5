// Fuzzes the CBOR request decoder (aws/cbor.h), the parser that every CBOR client's
// bytes meet first. Invariants: no crash, no unbounded recursion; a body that decodes
// yields a JSON object, and the answer encoder turns that JSON back into CBOR that
// decodes again.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "aws/cbor.h"

using namespace icestream;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const aws::CborModel model{
      {"Data"}, {"Timestamp", "StreamCreationTimestamp", "ApproximateArrivalTimestamp"}};
  std::string in(reinterpret_cast<const char*>(data), size);
  std::string json_text;
  if (aws::CborRequestToJson(in, model, &json_text)) return 0;
  auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) std::abort();
  std::string again = aws::JsonResponseToCbor(json_text, model);
  std::string json2;
  if (aws::CborRequestToJson(again, model, &json2)) std::abort();
  return 0;
}
