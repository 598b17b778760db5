// Offline check and repair of one shard log (`icestream fsck`). The check reads every
// segment and reports what it finds and what a repair would do — above all which
// offsets it would drop — before anything is changed. A repair never drops a record it
// can still read:
//   - a torn tail of the active segment is cut (it was never acknowledged);
//   - a damaged segment is cut at its first damaged record, and every run of intact
//     records after the damage is moved, unchanged, into a new segment file named by its
//     first offset, so offsets are kept and never handed out again; only the damaged
//     records themselves are lost, and the log steps over their offsets;
//   - missing or stale index files are rebuilt; leftover temporary files are removed;
//   - stray files (not segments of this log by name or header, log/shard_dir.h) are
//     named and left alone: they are neither read nor counted as lost records.
// A segment whose header is damaged is reported and left for the operator.
//
// Runs only while no server uses the data directory (the caller holds its lock).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace icestream::log {

struct ShardCheck {
  std::vector<std::string> findings;  // what is wrong, one line each
  std::vector<std::string> actions;   // what a repair does (or did), one line each
  std::vector<std::string> notes;     // stray files beside the log (not problems of it)
  uint64_t dropped_records = 0;       // records a repair loses (damaged beyond reading)
  bool clean() const { return findings.empty(); }
  bool repairable = true;  // false: something needs the operator's hands
};

// Checks the shard log in `dir`; with `repair`, carries out the actions.
Result<ShardCheck> CheckShardLog(const std::string& dir, bool repair,
                                 uint64_t index_interval_bytes = 64 << 10);

}  // namespace icestream::log
