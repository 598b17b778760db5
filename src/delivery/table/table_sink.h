// The streaming-table destination (kds-delivery-spec.md §2): a channel's stream written
// exactly once into an Apache Iceberg v2 table of the built-in catalog (one warehouse per
// table bucket), with a dead-letter queue for the records that do not fit the schema.
//
// In a scale-out pool the shards are written where their leases are held and committed
// by the control unit's holder (staging.h); what follows is the single-server route, and
// each part is the same in both except the commit.
//
// One sink per channel writes its one table. A batch spans every shard with records:
// its records are decoded (JSON, or GSR_JSON framing resolved in the schema registry),
// converted on several threads into Parquet row groups routed by the partition hour,
// gathered into files (one per hour, cut at the target file size, rows of all shards
// mixed), the files uploaded under names unique to the attempt, the rejected records
// written to the DLQ, and then everything committed in one Iceberg append whose snapshot
// summary carries every shard's last committed sequence number
// (icestream.checkpoint.<shardId>). That summary is the checkpoint: a commit that
// conflicts re-reads it before retrying (never commits a range twice), and after a
// restart the runner resumes from it. Files of attempts that never committed are
// removed later, once no commit can still reference them.
//
// The table is created (with its namespace) by the first batch that has a valid row:
// the registry schema version pinned at CreateChannel mapped per §2.5, partitioned by
// hour(<column>), format v2, owned by the channel (table property
// icestream.channel-arn). A table the channel did not create, a table deleted or
// replaced after the channel created it, and a schema or partition change made outside
// the channel fail the channel (permanent errors); commits from outside that only add or
// remove files are fine.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "delivery/sink.h"
#include "delivery/table/schema_versions.h"
#include "delivery/table/staging.h"
#include "iceberg/catalog.h"
#include "iceberg/catalog_store.h"
#include "iceberg/file_io.h"
#include "registry/registry.h"

namespace icestream::delivery::table {

// What the table destination needs from the server (server/ wires the built-in
// catalog's warehouses and the schema registry in).
struct TableServices {
  // Table-bucket ARN → the warehouse (bucket) name; kInvalidArgument for an ARN of
  // another region or account.
  std::function<Result<std::string>(std::string_view arn)> bucket_name;
  // The warehouse's catalog and files; kNotFound when the table bucket does not exist.
  std::function<Result<iceberg::Catalog*>(const std::string& bucket)> catalog;
  std::function<Result<const iceberg::FileIO*>(const std::string& bucket)> io;
  // The built-in registry (CreateChannel's checks, and version lookups unless
  // `versions` is set).
  registry::SchemaRegistry* registry = nullptr;
  // Where sinks look versions up (a scale-out worker: a Glue API client). Null: `registry`.
  std::shared_ptr<VersionLookup> versions;
  // The fence every write of a channel's table carries (appends, schema changes,
  // compaction, expiry), checked in the catalog transaction of the pointer swap: a
  // scale-out worker's lease on the table's committer role. Null (or a null result):
  // unfenced, as on one server. The fence must outlive the sink.
  std::function<const iceberg::CommitFence*(const ChannelConfig&)> fence_for;
  // A scale-out pool's staging (staging.h): every shard is written where its lease is
  // held and the holder of the control unit commits. Null (one server): one batch spans
  // the shards and commits itself.
  std::shared_ptr<StagingStore> staging;
  std::string region = "us-east-1";
  std::string account = "000000000000";
};

struct TableSinkOptions {
  // Data files are cut at this size (table property write.target-file-size-bytes).
  int64_t target_file_size_bytes = 128ll << 20;
  // Open files of a batch (one per partition hour) are kept in memory up to this sum;
  // beyond it the largest is cut early.
  int64_t max_buffered_bytes = 256ll << 20;
  int convert_threads = 2;
  // Uncompressed row-group size (a row group also ends with the batch).
  int64_t row_group_bytes = 64ll << 20;
  // Records are converted in blocks of about this size.
  size_t block_bytes = 16u << 20;
  size_t block_records = 16384;
  // Inline compaction after each commit (compaction_planner.h), for at most
  // compaction_budget_ms (0: half the channel's freshness, at least 500 ms).
  bool compaction = true;
  int64_t compaction_budget_ms = 0;
  int64_t compaction_cold_after_ms = 10ll * 60 * 1000;
  // Snapshot expiry, at most every expire_interval_ms: snapshots older than the table
  // property history.expire.max-snapshot-age-ms (set to snapshot_max_age_ms when the
  // table is created) go, but the newest history.expire.min-snapshots-to-keep stay, and
  // so does the snapshot that holds the channel's checkpoints.
  int64_t expire_interval_ms = 5ll * 60 * 1000;
  int64_t snapshot_max_age_ms = 60ll * 60 * 1000;
  int min_snapshots_to_keep = 10;
  // Files of failed attempts are removed once older than this (no commit can reference
  // them any more), checked at most every orphan_interval_ms.
  int64_t orphan_age_ms = 60ll * 60 * 1000;
  int64_t orphan_interval_ms = 60ll * 60 * 1000;
  // Largest inflated GSR payload.
  size_t max_payload_bytes = 64u << 20;
  // With staging: how often the control unit's holder looks for staged batches to commit
  // (and for requests to create or evolve the table) when nothing tells it of one, and how
  // long at least after it learns that a batch was staged (StagingStore::Watch) it commits
  // (a tenth of the channel's freshness when that is longer, up to the interval): the
  // other shards' batches of the same freshness tick, staged within that time, join the
  // same commit.
  int64_t staged_commit_interval_ms = 1000;
  int64_t staged_commit_gather_ms = 100;
};

class TableDestination final : public Destination {
 public:
  TableDestination(TableServices services, TableSinkOptions options);
  DestinationType type() const override { return DestinationType::kS3Tables; }
  // Checks the table bucket ARN (region, account), that the registry schema exists and
  // is a JSON Schema (kNotFound / kInvalidArgument), that it maps to a table (nesting,
  // the partition column), and pins its latest version in the channel.
  Status Prepare(ChannelConfig* config) override;
  Result<std::unique_ptr<Sink>> MakeSink(const ChannelConfig& config, SinkEnv env) override;

 private:
  // The schema's latest AVAILABLE version, from the built-in registry or (a pool's worker
  // and channel command, which have none) the configured registry's Glue API; kNotFound
  // when the schema or such a version does not exist.
  Result<registry::VersionInfo> LatestVersion(const std::string& schema_arn,
                                              const registry::SchemaArnParts& arn);

  TableServices services_;
  TableSinkOptions options_;
};

// Table property and snapshot summary keys icestream writes.
inline constexpr std::string_view kOwnerProperty = "icestream.channel-arn";
inline constexpr std::string_view kCheckpointPrefix = "icestream.checkpoint.";
// Only for a checkpoint inside a KPL aggregate: the last delivered user record's index.
inline constexpr std::string_view kCheckpointSubPrefix = "icestream.checkpoint-sub.";
// The channel's DLQ redrive progress (redrive.h RedriveProgressText), carried forward by
// every append of the channel like the checkpoints.
inline constexpr std::string_view kRedriveProgressKey = "icestream.redrive";

}  // namespace icestream::delivery::table
