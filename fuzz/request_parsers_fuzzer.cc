// Fuzzes the small parsers that read request and response bytes from the network:
// SigV4 Authorization headers, S3 XML responses, base64, sequence numbers and shard ids.
// Invariants: no crash; base64 round-trips what it decodes.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "aws/sigv4.h"
#include "common/base64.h"
#include "objectstore/s3/s3_xml.h"
#include "stream/model.h"
#include "stream/sequence_number.h"

using namespace icestream;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  (void)aws::ParseAuthorization(in);
  (void)aws::CanonicalQuery(in);
  (void)aws::UriDecode(in);
  (void)objectstore::s3::ParseListObjectsV2(in);
  (void)objectstore::s3::XmlText(in, "Code");
  if (auto d = base64::Decode(in)) {
    if (base64::Encode(*d) != in) std::abort();
  }
  (void)base64::DecodeUrl(in);
  if (auto sn = stream::SequenceNumber::Parse(in)) {
    if (sn->ToString() != in) std::abort();
  }
  (void)stream::ParseShardId(in);
  return 0;
}
