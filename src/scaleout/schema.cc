// Migrations of icestream's scale-out tables.
#include "scaleout/schema.h"

#include "pg/migrate.h"

namespace icestream::scaleout {

Status EnsureDeliverySchema(pg::PgPool* pool) {
  static const std::vector<std::string> kSteps = {
      // 1: workers, leases and their history; the delivery store's rows.
      "CREATE TABLE icestream_worker (worker_id TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER "
      "NOT NULL, listen TEXT NOT NULL DEFAULT '', started_at TIMESTAMPTZ NOT NULL DEFAULT "
      "clock_timestamp(), heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()) WITH "
      "(fillfactor = 50);"
      "CREATE TABLE icestream_lease (channel_id TEXT NOT NULL, unit TEXT NOT NULL, owner TEXT, "
      "epoch BIGINT NOT NULL DEFAULT 0, expires_at TIMESTAMPTZ, PRIMARY KEY (channel_id, unit)) "
      "WITH (fillfactor = 50);"
      "CREATE INDEX icestream_lease_owner ON icestream_lease (owner);"
      "CREATE TABLE icestream_lease_history (channel_id TEXT NOT NULL, unit TEXT NOT NULL, owner "
      "TEXT NOT NULL, epoch BIGINT NOT NULL, at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp());"
      "CREATE TABLE icestream_commit_log (channel_id TEXT NOT NULL, owner TEXT NOT NULL, epoch "
      "BIGINT NOT NULL, metadata_location TEXT, at TIMESTAMPTZ NOT NULL DEFAULT "
      "clock_timestamp());"
      "CREATE TABLE icestream_channels (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, doc TEXT "
      "NOT NULL);"
      "CREATE TABLE icestream_checkpoints (channel_id TEXT NOT NULL, shard_id TEXT NOT NULL, "
      "sequence TEXT NOT NULL, sub_sequence INTEGER, epoch BIGINT NOT NULL, PRIMARY KEY "
      "(channel_id, shard_id));"
      "CREATE TABLE icestream_plans (channel_id TEXT NOT NULL, shard_id TEXT NOT NULL, "
      "after_sequence TEXT NOT NULL, after_sub_sequence INTEGER, last_sequence TEXT NOT NULL, "
      "records BIGINT NOT NULL, attempt_ms BIGINT NOT NULL, epoch BIGINT NOT NULL, PRIMARY KEY "
      "(channel_id, shard_id));"
      "CREATE TABLE icestream_finished (channel_id TEXT NOT NULL, shard_id TEXT NOT NULL, "
      "PRIMARY KEY (channel_id, shard_id));"
      "CREATE TABLE icestream_sink_state (channel_id TEXT PRIMARY KEY, doc TEXT NOT NULL)",
      // 2: DLQ redrives (delivery/redrive.h), one document each.
      "CREATE TABLE icestream_redrives (channel_id TEXT NOT NULL, redrive_id TEXT NOT NULL, "
      "created_ms BIGINT NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (channel_id, redrive_id))",
      // 3: a table channel's staged shard batches and its writers' requests to the table's
      // owner (delivery/table/staging.h). after_sub_sequence is -1 for none (a key column).
      "CREATE TABLE icestream_staged (channel_id TEXT NOT NULL, shard_id TEXT NOT NULL, "
      "after_sequence TEXT NOT NULL, after_sub_sequence INTEGER NOT NULL, last_sequence TEXT NOT "
      "NULL, row_count BIGINT NOT NULL, files TEXT NOT NULL, epoch BIGINT NOT NULL, staged_at "
      "TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(), PRIMARY KEY (channel_id, shard_id, "
      "after_sequence, after_sub_sequence));"
      "CREATE TABLE icestream_table_requests (channel_id TEXT NOT NULL, version_id TEXT NOT "
      "NULL, PRIMARY KEY (channel_id, version_id))",
      // 4: which workers can deliver which channels (lease_manager.h: only they take its
      // units, and the channel's share is divided among them).
      "CREATE TABLE icestream_interest (worker_id TEXT NOT NULL, channel_id TEXT NOT NULL, "
      "PRIMARY KEY (worker_id, channel_id))",
      // 5: a unit handed back by its owner is recorded too (released = true, with the epoch
      // it was held under), so the history shows when each grant ended.
      "ALTER TABLE icestream_lease_history ADD COLUMN released BOOLEAN NOT NULL DEFAULT false",
      // 6: any change of the channel list, whoever makes it (a process, `channels --pg`, an
      // import, an operator's psql), is announced on the PostgreSQL channel
      // icestream_channels when its transaction commits, so the pool's processes read the
      // list again at once instead of polling it every second.
      "CREATE FUNCTION icestream_channels_changed() RETURNS trigger LANGUAGE plpgsql AS $$ "
      "BEGIN PERFORM pg_notify('icestream_channels', 'all'); RETURN NULL; END $$;"
      "CREATE TRIGGER icestream_channels_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
      "ON icestream_channels FOR EACH STATEMENT EXECUTE FUNCTION icestream_channels_changed()",
  };
  return pg::Migrate(pool, "delivery", kSteps);
}

}  // namespace icestream::scaleout
