// Copying meta.db's channels and catalog into a pool.
#include "scaleout/import.h"

#include <fmt/format.h>

#include "delivery/channel.h"
#include "delivery/sqlite_delivery_store.h"
#include "iceberg/sqlite_catalog.h"
#include "scaleout/pg_catalog_store.h"
#include "source/local/local_source.h"

namespace icestream::scaleout {

namespace {

pg::Param Sub(const std::optional<uint32_t>& sub) {
  if (!sub) return std::nullopt;
  return std::to_string(*sub);
}

struct ChannelRows {
  delivery::ChannelConfig config;
  std::map<std::string, delivery::Position> checkpoints;
  std::map<std::string, delivery::BatchPlan> plans;
  std::set<std::string> finished;
  nlohmann::json sink_state;
};

struct Warehouse {
  std::string name;
  std::vector<std::pair<iceberg::Namespace, iceberg::Properties>> namespaces;
  std::vector<std::pair<iceberg::TableIdentifier, std::string>> tables;
};

Result<std::vector<Warehouse>> ReadCatalog(Database* meta) {
  std::vector<Warehouse> out;
  auto names = meta->Query(
      "SELECT warehouse FROM iceberg_namespaces UNION SELECT warehouse FROM iceberg_tables");
  if (!names.ok()) return out;  // no catalog tables: nothing to move
  for (const auto& row : *names) {
    Warehouse w;
    w.name = AsText(row[0]);
    ASSIGN_OR_RETURN(auto store, iceberg::SqliteCatalogStore::Open(meta, w.name));
    RETURN_IF_ERROR(store->RunInTransaction([&](iceberg::CatalogStore::Tx& tx) -> Status {
      ASSIGN_OR_RETURN(auto namespaces, tx.ListNamespaces());
      for (const auto& ns : namespaces) {
        ASSIGN_OR_RETURN(auto props, tx.LoadNamespace(ns));
        w.namespaces.emplace_back(ns, props.value_or(iceberg::Properties{}));
        ASSIGN_OR_RETURN(auto tables, tx.ListTables(ns));
        for (const auto& t : tables) {
          iceberg::TableIdentifier id{ns, t};
          ASSIGN_OR_RETURN(auto loc, tx.MetadataLocation(id));
          if (loc) w.tables.emplace_back(id, *loc);
        }
      }
      return Status::OK();
    }));
    out.push_back(std::move(w));
  }
  return out;
}

Status RemoveCatalog(Database* meta, const std::vector<Warehouse>& warehouses) {
  for (const auto& w : warehouses) {
    ASSIGN_OR_RETURN(auto store, iceberg::SqliteCatalogStore::Open(meta, w.name));
    RETURN_IF_ERROR(store->RunInTransaction([&](iceberg::CatalogStore::Tx& tx) -> Status {
      for (const auto& [id, loc] : w.tables) RETURN_IF_ERROR(tx.DeleteTable(id));
      // Children before parents.
      for (auto it = w.namespaces.rbegin(); it != w.namespaces.rend(); ++it) {
        RETURN_IF_ERROR(tx.DeleteNamespace(it->first));
      }
      return Status::OK();
    }));
  }
  return Status::OK();
}

}  // namespace

Result<ImportReport> ImportSingleServer(Database* meta, pg::PgPool* pool) {
  ASSIGN_OR_RETURN(auto local, delivery::SqliteDeliveryStore::Open(meta, source::LegacyPosition));
  std::vector<ChannelRows> channels;
  ASSIGN_OR_RETURN(auto configs, local->LoadChannels());
  for (auto& c : configs) {
    ChannelRows r;
    ASSIGN_OR_RETURN(r.checkpoints, local->Checkpoints(c.id));
    ASSIGN_OR_RETURN(r.plans, local->Plans(c.id));
    ASSIGN_OR_RETURN(r.finished, local->FinishedShards(c.id));
    ASSIGN_OR_RETURN(r.sink_state, local->LoadSinkState(c.id));
    r.config = std::move(c);
    channels.push_back(std::move(r));
  }
  ASSIGN_OR_RETURN(auto warehouses, ReadCatalog(meta));

  ImportReport report;
  RETURN_IF_ERROR(pool->RunInTransaction([&](pg::PgTx& tx) -> Status {
    report = {};
    for (const auto& ch : channels) {
      const std::string doc = delivery::ChannelToJson(ch.config).dump();
      ASSIGN_OR_RETURN(auto same, tx.Exec("SELECT id, doc FROM icestream_channels WHERE id = $1 OR "
                                          "name = $2",
                                          {ch.config.id, ch.config.name}));
      if (same.rows() > 0) {
        if (same.text(0, 0) == ch.config.id && same.text(0, 1) == doc) continue;  // done before
        return AlreadyExists(fmt::format(
            "the pool has a channel named {} already (or one with the id {}): nothing imported",
            ch.config.name, ch.config.id));
      }
      RETURN_IF_ERROR(tx.Exec("INSERT INTO icestream_channels (id, name, doc) VALUES ($1, $2, $3)",
                              {ch.config.id, ch.config.name, doc})
                          .status());
      for (const auto& [shard, p] : ch.checkpoints) {
        RETURN_IF_ERROR(
            tx.Exec("INSERT INTO icestream_checkpoints (channel_id, shard_id, sequence, "
                    "sub_sequence, epoch) VALUES ($1, $2, $3, $4, 0)",
                    {ch.config.id, shard, p.sequence, Sub(p.sub_sequence)})
                .status());
      }
      for (const auto& [shard, p] : ch.plans) {
        RETURN_IF_ERROR(
            tx.Exec(
                  "INSERT INTO icestream_plans (channel_id, shard_id, after_sequence, "
                  "after_sub_sequence, last_sequence, records, attempt_ms, epoch) VALUES ($1, $2, "
                  "$3, $4, $5, $6, $7, 0)",
                  {ch.config.id, shard, p.after.sequence, Sub(p.after.sub_sequence),
                   p.last_sequence, std::to_string(p.records), std::to_string(p.attempt_ms)})
                .status());
      }
      for (const auto& shard : ch.finished) {
        RETURN_IF_ERROR(
            tx.Exec("INSERT INTO icestream_finished (channel_id, shard_id) VALUES ($1, $2)",
                    {ch.config.id, shard})
                .status());
      }
      if (!ch.sink_state.is_null()) {
        RETURN_IF_ERROR(
            tx.Exec("INSERT INTO icestream_sink_state (channel_id, doc) VALUES ($1, $2)",
                    {ch.config.id, ch.sink_state.dump()})
                .status());
      }
      ++report.channels;
    }
    for (const auto& w : warehouses) {
      PgCatalogStore::PgCatalogTx cat(tx, w.name);
      for (const auto& [ns, props] : w.namespaces) {
        ASSIGN_OR_RETURN(auto existing, cat.LoadNamespace(ns));
        if (existing) continue;
        RETURN_IF_ERROR(cat.InsertNamespace(ns, props));
        ++report.namespaces;
      }
      for (const auto& [id, loc] : w.tables) {
        ASSIGN_OR_RETURN(auto existing, cat.MetadataLocation(id));
        if (existing && *existing == loc) continue;  // done before
        if (existing) {
          return AlreadyExists(fmt::format(
              "the pool's catalog {} has a table {} already, at another metadata file: nothing "
              "imported",
              w.name, id.name));
        }
        RETURN_IF_ERROR(cat.InsertTable(id, loc));
        ++report.tables;
      }
    }
    return Status::OK();
  }));
  // The pool has them: a server started on this directory without --pg must not deliver
  // them again.
  for (const auto& ch : channels) RETURN_IF_ERROR(local->RemoveChannel(ch.config.id));
  RETURN_IF_ERROR(RemoveCatalog(meta, warehouses));
  return report;
}

}  // namespace icestream::scaleout
