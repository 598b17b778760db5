// Moving a single server's delivery into a pool: the channels of a data directory's
// meta.db (documents, checkpoints, planned batches, finished shards, sink notes) and its
// Iceberg catalog rows (namespaces, tables and their metadata locations) are copied into
// the pool's PostgreSQL database in one transaction, then removed from meta.db, so that
// `serve --pg` and workers continue every channel from where the server left it and no
// server started later without --pg delivers them a second time. Streaming tables carry
// their own checkpoints in their snapshot summaries, so they continue from what they hold.
//
// Idempotent: a channel already in the pool with the same document is not copied again
// (an import cut off between the two steps is finished by running it again); a channel
// or table of the same name that differs is refused (kAlreadyExists) and nothing changes.
// The caller holds the data directory's lock (no server runs on it).
#pragma once

#include <string>

#include "common/sqlite.h"
#include "common/status.h"
#include "pg/client.h"

namespace icestream::scaleout {

struct ImportReport {
  size_t channels = 0;
  size_t tables = 0;
  size_t namespaces = 0;
};

// EnsureSchema and EnsureDeliverySchema must have run on `pool`.
Result<ImportReport> ImportSingleServer(Database* meta, pg::PgPool* pool);

}  // namespace icestream::scaleout
