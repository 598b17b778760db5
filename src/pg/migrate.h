// Versioned schema migrations for icestream's own PostgreSQL tables: each component
// (e.g. "delivery", "catalog") has an ordered list of steps; step N runs once, in its own
// transaction, together with the row that records version N in icestream_schema_version.
// Concurrent processes migrate one at a time (a transaction-scoped advisory lock), so a
// pool of workers starting at once applies each step once.
#pragma once

#include <string>
#include <vector>

#include "pg/client.h"

namespace icestream::pg {

// Applies the steps of `component` above its recorded version. Errors: a step failed
// (nothing of it stays; later steps do not run); the recorded version is above the
// steps this binary knows (a newer icestream migrated the database: kFailedPrecondition).
Status Migrate(PgPool* pool, const std::string& component, const std::vector<std::string>& steps);

}  // namespace icestream::pg
