// KPL aggregation (the Kinesis Producer Library's record format): several user records
// packed into one Kinesis record.
//
//   +-------------+--------------------------------------+------------------------+
//   | F3 89 9A C2 | AggregatedRecord (protobuf)          | MD5 of the protobuf    |
//   |  (magic)    |                                      | bytes (16)             |
//   +-------------+--------------------------------------+------------------------+
//
//   message AggregatedRecord {
//     repeated string partition_key_table     = 1;
//     repeated string explicit_hash_key_table = 2;
//     repeated Record records                 = 3;
//   }
//   message Record {
//     required uint64 partition_key_index     = 1;
//     optional uint64 explicit_hash_key_index = 2;
//     required bytes  data                    = 3;
//     repeated Tag    tags                    = 4;   // {string key = 1; string value = 2;}
//   }
//
// A user record is named by the Kinesis record's sequence number plus its index in the
// aggregate (the sub-sequence number).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace icestream::delivery {

inline constexpr std::string_view kKplMagic = "\xF3\x89\x9A\xC2";

struct KplUserRecord {
  std::string_view partition_key;
  std::string_view explicit_hash_key;  // empty when absent
  std::string_view data;
};

struct KplAggregate {
  enum class Kind { kPlain, kAggregate, kCorrupt };
  Kind kind = Kind::kPlain;
  std::vector<KplUserRecord> records;  // kAggregate: views into the record's bytes
  std::string error;                   // kCorrupt: what is wrong
};

// Whether `data` is a KPL aggregate and, if so, its user records. Bytes that start with
// the magic but do not decode (protobuf damaged, MD5 mismatch, an index out of its
// table, no records) are kCorrupt; everything else is kPlain. Never reads past `data`.
KplAggregate Deaggregate(std::string_view data);

}  // namespace icestream::delivery
