// One GetRecords answer decoded for the Kinesis source: the records as views into bytes
// the answer owns, from a JSON 1.1 answer (base64 decoded once) or a CBOR one (read in
// place: its byte strings are the data), aws-api.md §A.3.
//
// Thread-safety: plain values; an Answer is immutable once decoded and shared by the
// chunks that point into it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "delivery/shard_source.h"

namespace icestream::source {

// The records of one answer and the bytes their views point into. A CBOR answer is kept
// whole (`bytes` is the body); a JSON answer's strings are copied (data base64-decoded)
// into `bytes`. `more` holds what cannot be a view into `bytes`: indefinite-length
// strings, base64 text in a CBOR answer (kinesalite sends its JSON strings as CBOR text).
struct Answer {
  std::string bytes;
  std::deque<std::string> more;
  std::vector<delivery::StreamRecord> records;
  size_t data_bytes = 0;
};

struct RecordsPage {
  std::shared_ptr<Answer> answer;
  bool end = false;       // NextShardIterator null or absent: the shard is closed and read
  std::string next;       // NextShardIterator
  int64_t behind_ms = 0;  // MillisBehindLatest
};

// Epoch milliseconds of a timestamp member: CBOR tag 1 carries milliseconds from the AWS
// SDKs and icestream, seconds from RFC 8949 encoders and every JSON 1.1 answer; told apart
// by magnitude (>= 1e11 is milliseconds) as aws/cbor.h does.
int64_t TimestampMs(double v);

// A JSON 1.1 answer. kUnavailable when a record lacks a member or its Data is not base64.
Result<RecordsPage> JsonPage(const nlohmann::json& answer);

// A CBOR answer, in one pass with a cursor (no tree). Definite and indefinite lengths;
// Data as a byte string (or base64 text); members other than Records, NextShardIterator
// and MillisBehindLatest, and record members other than SequenceNumber, PartitionKey,
// Data and ApproximateArrivalTimestamp, are skipped. kUnavailable when the body is not
// one well-formed CBOR map of that shape.
Result<RecordsPage> CborPage(std::string body);

// The ordinal of a record (StreamRecord::ordinal) from its sequence number: an icestream
// sequence number's log offset, else the number's last 18 digits.
uint64_t OrdinalOf(std::string_view sequence_number);

}  // namespace icestream::source
