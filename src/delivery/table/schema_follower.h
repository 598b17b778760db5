// SchemaFollower: which schema a table channel's batch is written with, and how the table
// follows its registry schema (docs/channels.md, "Schema evolution").
//
// A batch is written with one WriteTarget, fixed before conversion starts and never
// changed while the batch runs (converter threads and the uploader thread read it; nobody
// writes it): the registry version records are checked against, the table layout with
// the table's field ids (canonical ids before the table exists), the Parquet schema, and
// a thread-safe cache of how other versions fit it. When the table must change (a JSON
// channel's newer compatible version, or a GSR_JSON record of a wider version), the
// follower commits the evolved schema and returns a new target for the next pass; the
// old one stays valid for whoever still holds it.
//
// Thread-safety: Fit() may be called from any thread; the other methods run on the
// batch thread.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "delivery/table/schema_versions.h"
#include "delivery/table/table_layout.h"
#include "delivery/table/table_owner.h"
#include "format/parquet/schema_mapping.h"
#include "iceberg/catalog_store.h"

namespace icestream::delivery::table {

// How a registry version relates to a target's table schema.
enum class Fit { kFits, kNeedsEvolution, kIncompatible };
struct FitResult {
  Fit fit = Fit::kIncompatible;
  std::string reason;  // kIncompatible: why
};

class WriteTarget {
 public:
  // Errors: the layout has no Parquet mapping (a bug upstream: layouts are checked).
  static Result<std::shared_ptr<const WriteTarget>> Make(
      std::shared_ptr<const SchemaVersion> version, TableLayout layout, int32_t last_column_id);

  const SchemaVersion& version() const { return *version_; }
  const std::shared_ptr<const SchemaVersion>& version_ptr() const { return version_; }
  const TableLayout& layout() const { return layout_; }
  const format::parquet::ParquetSchema& parquet() const { return *parquet_; }
  // The table's last assigned column id (the layout's highest before the table exists).
  int32_t last_column_id() const { return last_column_id_; }

  // How `v` fits this target's table schema (cached per version id). Thread-safe.
  FitResult Fit(const SchemaVersion& v, const std::string& schema_arn,
                const std::string& table_label) const;

 private:
  WriteTarget() = default;
  std::shared_ptr<const SchemaVersion> version_;
  TableLayout layout_;
  std::unique_ptr<format::parquet::ParquetSchema> parquet_;
  int32_t last_column_id_ = 0;
  mutable std::mutex fits_mu_;
  mutable std::unordered_map<std::string, FitResult> fits_;
};

class SchemaFollower {
 public:
  // `registry` (inside `versions`) must outlive the follower.
  SchemaFollower(const ChannelConfig& config, SchemaVersions* versions, SinkEnv env);

  // The target before the table exists: the pinned version with canonical field ids.
  static Result<TableLayout> CanonicalLayout(const TableLayout& layout);
  Result<std::shared_ptr<const WriteTarget>> Initial(std::shared_ptr<const SchemaVersion> pinned);
  // The target for the table as it is: the version it follows (`version_id`), the
  // table's current schema and ids. Returns `current` when it already is that.
  Result<std::shared_ptr<const WriteTarget>> ForTable(TableOwner* owner,
                                                      const std::string& version_id,
                                                      std::shared_ptr<const WriteTarget> current);
  // JSON channels: the schema's newest version compatible with the table (an
  // incompatible newer one is reported once and not followed).
  // Where another process owns the table (a pool's shard writer, staging.h): an evolution
  // of an existing table is not made here but handed to `defer`, whose status is returned
  // (the owner is asked to make it; the batch is retried). Empty: made here.
  using Defer = std::function<Status(const SchemaVersion&)>;

  Result<std::shared_ptr<const WriteTarget>> FollowLatest(
      TableOwner* owner, std::shared_ptr<const WriteTarget> current, const Defer& defer = {});
  // Makes `v` (compatible, newer or wider) the table's schema: one catalog commit that
  // adds the evolved schema, makes it current and records the version in the table's
  // properties. Without a table yet, only the target changes (the table will be made
  // from it).
  Result<std::shared_ptr<const WriteTarget>> Evolve(TableOwner* owner,
                                                    std::shared_ptr<const WriteTarget> current,
                                                    std::shared_ptr<const SchemaVersion> v,
                                                    const Defer& defer = {});

  // The newest version not followed because it is incompatible (empty when none).
  std::string ignored_version() const;
  // Schema commits carry `fence` (table_committer.h); null commits unfenced.
  void SetFence(const iceberg::CommitFence* fence) { fence_ = fence; }

 private:
  const ChannelConfig& config_;
  SchemaVersions* versions_;
  SinkEnv env_;
  const iceberg::CommitFence* fence_ = nullptr;
  mutable std::mutex mu_;
  std::string ignored_version_;
};

}  // namespace icestream::delivery::table
