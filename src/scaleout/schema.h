// icestream's own tables in the scale-out PostgreSQL database (beside the Iceberg JDBC
// catalog's two), created and upgraded by versioned migrations (pg/migrate.h, component
// "delivery"). docs/scale-out.md describes each table and who writes it.
//
//   icestream_worker          one row per running process: id (host:pid:uuid), where it
//                             listens, heartbeat on the database clock
//   icestream_lease           one row per lease unit of a channel (coordinator.h): owner,
//                             fencing epoch (bumped on every change of owner), expiry on the
//                             database clock. fillfactor 50 and no index on expires_at, so
//                             a renewal is a heap-only update.
//   icestream_lease_history   every change of owner, for the invariant checks of the tests
//   icestream_commit_log      every fenced table commit: which owner and epoch made it
//   icestream_channels, icestream_checkpoints, icestream_plans, icestream_finished,
//   icestream_sink_state      the DeliveryStore's rows (as in meta.db)
#pragma once

#include "pg/client.h"

namespace icestream::scaleout {

// Creates or upgrades the delivery tables (and the catalog's, PgCatalogStore::EnsureSchema).
Status EnsureDeliverySchema(pg::PgPool* pool);

}  // namespace icestream::scaleout
