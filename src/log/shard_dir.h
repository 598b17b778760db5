// What a shard log's folder holds, told apart by name and header: segments (by base
// offset), temporary files of interrupted writes, and strays — files that are no segment
// of this log: a name other than <20 digits>.log (or .idx, .tmp), or a segment header
// naming another base offset than the file name (a copy, or a file renamed by hand).
// Strays are never read as part of the log and never deleted: the server warns and
// passes them by, `icestream fsck` names them (log/repair.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace icestream::log {

struct ShardDirListing {
  std::vector<uint64_t> segments;  // base offsets, ascending
  std::vector<std::string> temporary;
  std::vector<std::pair<std::string, std::string>> strays;  // file name, why it is one
};

// A segment whose header does not decode stays listed as a segment: that is damage, for
// the caller's rules (the server refuses the shard; fsck reports it).
Result<ShardDirListing> ListShardDir(const std::string& dir);

}  // namespace icestream::log
