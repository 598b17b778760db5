// A channel's dead-letter queue as the console shows it: the JSON lines of its DLQ
// objects (delivery/dlq.h writes them: stream ARN, shard, sequence number, error code
// and message, times), newest object first, with counts per error code.
//
// Reads at most `max_objects` objects and `max_bytes` bytes (newest first) and returns
// at most `max_lines` lines; `truncated` says when there was more. Stateless.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "common/status.h"
#include "console/console.h"

namespace icestream::console {

struct DlqQuery {
  size_t max_lines = 500;
  size_t max_objects = 2000;
  uint64_t max_bytes = 16ull << 20;
};

// {"bucket", "prefix", "objects", "objects_read", "lines_read", "error_counts": {code: n},
//  "lines": [{...the line's fields, "object": key, "line": 1-based}], "truncated"}.
// A bucket that does not exist gives "bucket_error" and no lines (not an error: the
// channel's page shows it). Errors: the store's, other than kNotFound.
Result<nlohmann::json> ReadDlq(const DlqLocation& location, const DlqQuery& query);

}  // namespace icestream::console
