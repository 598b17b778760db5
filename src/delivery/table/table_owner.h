// TableOwner: a table channel's hold on its table in the catalog — finding it, creating it
// (with its namespace) from a layout, and checking each time it is read that it is still
// the channel's own, unchanged table: the table property icestream.channel-arn names the
// channel, its uuid is the one the channel created, its current schema is one the channel
// set, and its partitioning is still hour(<column>). It keeps the sink's notes (the
// delivery store's sink state): whether the channel created the table, the table's uuid,
// the schema id the channel last set and one it is about to set.
//
// Thread-safety: every method takes the owner's mutex. CreateIfMissing runs on the
// uploader thread of a batch (the first file cut in a new table's first batch) while the
// batch thread waits; table() hands out the handle for commits and must be used only by
// the batch thread while no batch writer runs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "delivery/sink.h"
#include "delivery/table/schema_versions.h"
#include "delivery/table/table_layout.h"
#include "delivery/table/table_sink.h"
#include "iceberg/table.h"

namespace icestream::delivery::table {

class TableOwner {
 public:
  TableOwner(const ChannelConfig& config, TableServices services, TableSinkOptions options,
             SinkEnv env);

  // A pool's shard writer (staging.h): the sink's notes are the control unit's holder's. The notes
  // are read again when the table's schema moved (the owner evolved it), the version followed is
  // read from the table at every refresh, and a note this process cannot save (fenced: it does not
  // hold the control unit) is left to the owner.
  void SetShared(bool shared) { shared_ = shared; }

  // The warehouse's catalog and files. kNotFound when the table bucket does not exist.
  Status CheckWarehouse();
  Result<const iceberg::FileIO*> io();

  // Loads the table if it exists (once; later calls return at once). Returns the id of
  // the registry version the table follows (its icestream.schema-version-id property),
  // or nullopt when there is no table yet. Errors: the table is someone else's, was
  // replaced, or was changed outside the channel (permanent: kAlreadyExists,
  // kNotFound, kInvalidArgument); the catalog cannot be read (retry).
  Result<std::optional<std::string>> Load();
  // Creates the table from `layout` (the version's schema with canonical field ids) if
  // there is none, then loads it. Files written with the canonical layout fit the new
  // table: a catalog assigns the same fresh ids.
  Status CreateIfMissing(const TableLayout& layout, const SchemaVersion& version);
  // Reads the table's current metadata and checks it is still the channel's, unchanged.
  Status Refresh();
  bool exists() const;
  // The table's handle (null before the table exists); see the class comment.
  iceberg::Table* table();

  // The table is still the channel's, unchanged (schema and hourly partitioning).
  Status CheckUnchanged(const iceberg::TableMetadata& m) const;
  // shard id → position, from the newest snapshot of this channel on the main branch.
  std::map<std::string, Position> Checkpoints(const iceberg::TableMetadata& m) const;
  // The channel's redrive progress in the same snapshot (nullopt: none recorded).
  std::optional<RedriveProgress> HeldRedrive(const iceberg::TableMetadata& m) const;

  // Schema evolution: `next_id` is about to become the table's schema (saved first, so a
  // commit that lands just before a crash is recognised as the channel's), then `id` is.
  Status BeginSchemaChange(int32_t next_id);
  Status EndSchemaChange(int32_t id);
  // The catalog (for a schema commit; batch thread only).
  Result<iceberg::Catalog*> catalog();

  std::string Label() const;
  const iceberg::TableIdentifier& id() const { return id_; }
  // For the status: whether the table exists, where, and its current snapshot's totals.
  struct Facts {
    bool created = false;
    std::string location;
    int64_t live_files = 0;
    int64_t live_bytes = 0;
  };
  Facts facts() const;
  // After a commit: the totals of the new current snapshot.
  void NoteMetadata(const iceberg::TableMetadata& m);

 private:
  struct Warehouse {
    iceberg::Catalog* catalog = nullptr;
    const iceberg::FileIO* io = nullptr;
  };
  Result<Warehouse> OpenWarehouse();               // mu_ held
  Status LoadState();                              // mu_ held
  Status SaveState(const nlohmann::json& before);  // mu_ held; only when changed
  Result<std::optional<std::string>> LoadLocked();
  Status CheckUnchangedLocked(const iceberg::TableMetadata& m) const;
  void NoteMetadataLocked(const iceberg::TableMetadata& m);

  const ChannelConfig config_;
  const TableServices services_;
  const TableSinkOptions options_;
  const SinkEnv env_;
  const iceberg::TableIdentifier id_;

  mutable std::mutex mu_;
  nlohmann::json state_;
  bool state_loaded_ = false;
  bool shared_ = false;
  std::unique_ptr<iceberg::Table> table_;
  int32_t partition_source_id_ = -1;  // of the table's spec, once loaded
  std::string followed_version_id_;
  Facts facts_;
};

// Table property keys: the registry version the table follows.
inline constexpr std::string_view kVersionIdProperty = "icestream.schema-version-id";
inline constexpr std::string_view kVersionProperty = "icestream.schema-version";

}  // namespace icestream::delivery::table
