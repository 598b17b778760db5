// MetastoreCatalog: the Iceberg metastore rules over a CatalogStore.
#include "iceberg/metastore_catalog.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "common/crypto.h"
#include "iceberg/table_files.h"
#include "iceberg/table_metadata_json.h"

namespace icestream::iceberg {

struct MetastoreCatalog::Cached {
  TableMetadata metadata;
  std::shared_ptr<const std::string> json;
};

namespace {

Status CheckName(std::string_view what, const std::string& name) {
  if (name.empty()) return InvalidArgument(std::string(what) + " name must not be empty");
  bool control = std::any_of(name.begin(), name.end(),
                             [](char c) { return static_cast<unsigned char>(c) < 0x20; });
  if (name == "." || name == ".." || name.find('/') != std::string::npos || control) {
    return InvalidArgument(std::string(what) + " name '" + name +
                           "' contains '/', a control character or is a dot segment");
  }
  return Status::OK();
}

// "<NNNNN>-<uuid>.metadata.json" -> NNNNN, or -1.
int64_t MetadataVersion(const std::string& location) {
  size_t slash = location.rfind('/');
  std::string name = location.substr(slash == std::string::npos ? 0 : slash + 1);
  size_t i = 0;
  int64_t v = 0;
  while (i < name.size() && i < 10 && std::isdigit(static_cast<unsigned char>(name[i]))) {
    v = v * 10 + (name[i++] - '0');
  }
  if (i == 0 || i >= name.size() || name[i] != '-') return -1;
  return v;
}

bool IsPrefix(const Namespace& parent, const Namespace& ns) {
  return ns.size() >= parent.size() && std::equal(parent.begin(), parent.end(), ns.begin());
}

}  // namespace

Status CheckNamespaceName(const Namespace& ns) {
  if (ns.empty()) return InvalidArgument("namespace must have at least one level");
  for (const auto& part : ns) RETURN_IF_ERROR(CheckName("namespace", part));
  return Status::OK();
}

Status CheckTableName(const TableIdentifier& id) {
  RETURN_IF_ERROR(CheckNamespaceName(id.ns));
  return CheckName("table", id.name);
}

MetastoreCatalog::MetastoreCatalog(std::shared_ptr<CatalogStore> store, const FileIO* io,
                                   const Clock* clock, MetastoreCatalogOptions options)
    : store_(std::move(store)), io_(io), clock_(clock), options_(options) {}

std::mutex& MetastoreCatalog::TableLock(const TableIdentifier& id) {
  std::lock_guard lock(locks_mu_);
  auto& m = table_locks_[id];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

size_t MetastoreCatalog::cached_metadata_count() {
  std::lock_guard lock(cache_mu_);
  return cache_.size();
}

Result<std::shared_ptr<const MetastoreCatalog::Cached>> MetastoreCatalog::ReadMetadata(
    const std::string& location) {
  {
    std::lock_guard lock(cache_mu_);
    if (auto it = cache_.find(location); it != cache_.end()) return it->second;
  }
  ASSIGN_OR_RETURN(std::string text, io_->Read(location));
  auto metadata = TableMetadataFromJson(text);
  if (!metadata.ok()) {
    return Corruption("metadata file " + location +
                      " does not parse: " + metadata.status().message());
  }
  auto cached = std::make_shared<Cached>();
  cached->metadata = std::move(metadata).value();
  cached->json = std::make_shared<const std::string>(TableMetadataToJson(cached->metadata));
  CacheInsert(location, cached);
  return std::shared_ptr<const Cached>(cached);
}

void MetastoreCatalog::CacheInsert(const std::string& location,
                                   std::shared_ptr<const Cached> cached) {
  // Bounded on every insert: a writer that only reads back what it wrote never misses,
  // so eviction cannot wait for a miss.
  std::lock_guard lock(cache_mu_);
  if (!cache_.emplace(location, std::move(cached)).second) return;
  cache_order_.push_back(location);
  while (cache_order_.size() > options_.metadata_cache_entries) {
    cache_.erase(cache_order_.front());
    cache_order_.pop_front();
  }
}

void MetastoreCatalog::DiscardMetadata(const std::string& location) {
  CacheErase(location);
  (void)io_->Delete(location);
}

void MetastoreCatalog::CacheErase(const std::string& location) {
  std::lock_guard lock(cache_mu_);
  if (cache_.erase(location) == 0) return;
  std::erase(cache_order_, location);
}

Result<std::optional<std::string>> MetastoreCatalog::CurrentLocation(const TableIdentifier& id) {
  std::optional<std::string> location;
  RETURN_IF_ERROR(store_->RunInTransaction([&](CatalogStore::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(location, tx.MetadataLocation(id));
    return Status::OK();
  }));
  return location;
}

Result<LoadedTable> MetastoreCatalog::Loaded(const std::string& location) {
  ASSIGN_OR_RETURN(auto cached, ReadMetadata(location));
  LoadedTable t;
  t.metadata_location = location;
  t.metadata = cached->metadata;
  t.metadata_json = cached->json;
  return t;
}

Result<std::string> MetastoreCatalog::WriteMetadata(const TableMetadata& next,
                                                    const std::string& base_location) {
  int64_t version = base_location.empty() ? 0 : MetadataVersion(base_location) + 1;
  if (version < 0) version = 0;
  std::string dir = next.location + "/metadata";
  if (auto it = next.properties.find("write.metadata.path");
      it != next.properties.end() && !it->second.empty()) {
    dir = it->second;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  }
  std::string location =
      fmt::format("{}/{:05}-{}.metadata.json", dir, version, crypto::RandomUuid());
  auto cached = std::make_shared<Cached>();
  cached->metadata = next;
  cached->json = std::make_shared<const std::string>(TableMetadataToJson(next));
  RETURN_IF_ERROR(io_->Write(location, *cached->json, /*if_absent=*/true));
  CacheInsert(location, cached);
  return location;
}

// ---------------------------------------------------------------------------------
// Namespaces.

Result<std::vector<Namespace>> MetastoreCatalog::ListNamespaces(const Namespace& parent) {
  std::vector<Namespace> all;
  RETURN_IF_ERROR(store_->RunInTransaction([&](CatalogStore::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(all, tx.ListNamespaces());
    return Status::OK();
  }));
  std::set<Namespace> children;
  bool parent_seen = parent.empty();
  for (const Namespace& ns : all) {
    if (!IsPrefix(parent, ns)) continue;
    parent_seen = true;
    if (ns.size() == parent.size()) continue;
    children.insert(Namespace(ns.begin(), ns.begin() + static_cast<ptrdiff_t>(parent.size() + 1)));
  }
  if (!parent_seen) return NoSuchNamespaceError(parent);
  return std::vector<Namespace>(children.begin(), children.end());
}

Status MetastoreCatalog::CreateNamespace(const Namespace& ns, const Properties& properties) {
  RETURN_IF_ERROR(CheckNamespaceName(ns));
  return store_->RunInTransaction([&](CatalogStore::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(auto existing, tx.LoadNamespace(ns));
    if (existing) return AlreadyExists("Namespace already exists: " + NamespaceName(ns));
    return tx.InsertNamespace(ns, properties);
  });
}

Result<Properties> MetastoreCatalog::LoadNamespaceProperties(const Namespace& ns) {
  std::optional<Properties> props;
  RETURN_IF_ERROR(store_->RunInTransaction([&](CatalogStore::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(props, tx.LoadNamespace(ns));
    return Status::OK();
  }));
  if (!props) return NoSuchNamespaceError(ns);
  return *props;
}

Result<bool> MetastoreCatalog::NamespaceExists(const Namespace& ns) {
  auto p = LoadNamespaceProperties(ns);
  if (p.ok()) return true;
  if (IsNoSuchNamespace(p.status())) return false;
  return p.status();
}

Result<NamespacePropertiesChange> MetastoreCatalog::UpdateNamespaceProperties(
    const Namespace& ns, const std::vector<std::string>& removals, const Properties& updates) {
  for (const auto& k : removals) {
    if (updates.count(k))
      return InvalidArgument("Property '" + k + "' is both updated and removed");
  }
  NamespacePropertiesChange change;
  RETURN_IF_ERROR(store_->RunInTransaction([&](CatalogStore::Tx& tx) -> Status {
    change = {};
    ASSIGN_OR_RETURN(auto props, tx.LoadNamespace(ns));
    if (!props) return NoSuchNamespaceError(ns);
    Properties p = std::move(*props);
    for (const auto& k : removals) {
      if (p.erase(k)) {
        change.removed.push_back(k);
      } else {
        change.missing.push_back(k);
      }
    }
    for (const auto& [k, v] : updates) {
      p[k] = v;
      change.updated.push_back(k);
    }
    return tx.SetNamespaceProperties(ns, p);
  }));
  return change;
}

Status MetastoreCatalog::DropNamespace(const Namespace& ns) {
  return store_->RunInTransaction([&](CatalogStore::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(auto props, tx.LoadNamespace(ns));
    if (!props) return NoSuchNamespaceError(ns);
    ASSIGN_OR_RETURN(auto tables, tx.ListTables(ns));
    ASSIGN_OR_RETURN(auto all, tx.ListNamespaces());
    bool children = std::any_of(all.begin(), all.end(), [&](const Namespace& other) {
      return other.size() > ns.size() && IsPrefix(ns, other);
    });
    if (!tables.empty() || children) return NamespaceNotEmptyError(ns);
    return tx.DeleteNamespace(ns);
  });
}

// ---------------------------------------------------------------------------------
// Tables.

Result<std::vector<TableIdentifier>> MetastoreCatalog::ListTables(const Namespace& ns) {
  std::vector<TableIdentifier> out;
  RETURN_IF_ERROR(store_->RunInTransaction([&](CatalogStore::Tx& tx) -> Status {
    out.clear();
    ASSIGN_OR_RETURN(auto props, tx.LoadNamespace(ns));
    if (!props) return NoSuchNamespaceError(ns);
    ASSIGN_OR_RETURN(auto names, tx.ListTables(ns));
    for (auto& n : names) out.push_back({ns, std::move(n)});
    return Status::OK();
  }));
  return out;
}

Result<LoadedTable> MetastoreCatalog::CreateTable(const Namespace& ns,
                                                  const CreateTableRequest& req) {
  TableIdentifier id{ns, req.name};
  RETURN_IF_ERROR(CheckTableName(id));
  ASSIGN_OR_RETURN(Properties ns_props, LoadNamespaceProperties(ns));
  ASSIGN_OR_RETURN(auto existing, CurrentLocation(id));
  if (existing) return AlreadyExists("Table already exists: " + TableName(id));
  std::string uuid = crypto::RandomUuid();
  std::string location;
  if (req.location && !req.location->empty()) {
    location = *req.location;
  } else if (auto it = ns_props.find("location"); it != ns_props.end() && !it->second.empty()) {
    location = it->second + "/" + req.name;
  } else {
    // A suffix from the table uuid keeps a re-created table's files apart from those
    // of a dropped table of the same name.
    std::string path;
    for (const auto& part : ns) path += part + "/";
    // At most 200 characters of the name: with the suffix the folder name stays within
    // NAME_MAX (255) for any valid table name.
    location = io_->Location(path + req.name.substr(0, 200) + "-" + uuid.substr(0, 8));
  }
  while (location.size() > 1 && location.back() == '/') location.pop_back();
  if (!req.stage_create) RETURN_IF_ERROR(io_->KeyOf(location + "/metadata").status());
  ASSIGN_OR_RETURN(TableMetadata m,
                   NewTableMetadata(req.schema, req.spec.value_or(PartitionSpec{}),
                                    req.write_order.value_or(SortOrder{}), location, req.properties,
                                    uuid, clock_->NowMillis()));
  if (req.stage_create) {
    LoadedTable t;
    t.metadata = std::move(m);
    return t;
  }
  std::lock_guard table_lock(TableLock(id));
  ASSIGN_OR_RETURN(std::string new_location, WriteMetadata(m, ""));
  Status st = store_->RunInTransaction([&](CatalogStore::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(auto now, tx.MetadataLocation(id));
    if (now) return AlreadyExists("Table already exists: " + TableName(id));
    ASSIGN_OR_RETURN(auto props, tx.LoadNamespace(ns));
    if (!props) return NoSuchNamespaceError(ns);
    return tx.InsertTable(id, new_location);
  });
  if (!st.ok()) {
    if (st.code() != StatusCode::kUnknownOutcome) DiscardMetadata(new_location);
    return st;
  }
  return Loaded(new_location);
}

Result<LoadedTable> MetastoreCatalog::LoadTable(const TableIdentifier& id) {
  ASSIGN_OR_RETURN(auto location, CurrentLocation(id));
  if (!location) return NoSuchTableError(id);
  return Loaded(*location);
}

Result<bool> MetastoreCatalog::TableExists(const TableIdentifier& id) {
  ASSIGN_OR_RETURN(auto location, CurrentLocation(id));
  return location.has_value();
}

Result<MetastoreCatalog::Prepared> MetastoreCatalog::Prepare(
    const TableIdentifier& id, const std::vector<TableRequirement>& requirements,
    const std::vector<TableUpdate>& updates) {
  RETURN_IF_ERROR(CheckTableName(id));
  Prepared p;
  p.id = id;
  ASSIGN_OR_RETURN(auto location, CurrentLocation(id));
  std::shared_ptr<const Cached> base;
  if (location) {
    ASSIGN_OR_RETURN(base, ReadMetadata(*location));
    p.base_location = *location;
  } else {
    bool creates =
        std::any_of(requirements.begin(), requirements.end(), [](const TableRequirement& r) {
          return std::holds_alternative<requirement::AssertCreate>(r);
        });
    if (!creates) return NoSuchTableError(id);
    ASSIGN_OR_RETURN(bool ns_exists, NamespaceExists(id.ns));
    if (!ns_exists) return NoSuchNamespaceError(id.ns);
  }
  RETURN_IF_ERROR(CheckRequirements(base ? &base->metadata : nullptr, requirements));
  std::vector<TableUpdate> all;
  if (!base) {
    // A create through updates: fill in what the updates leave out.
    bool has_uuid = false, has_location = false;
    for (const auto& u : updates) {
      has_uuid |= std::holds_alternative<update::AssignUuid>(u);
      has_location |= std::holds_alternative<update::SetLocation>(u);
    }
    std::string uuid = crypto::RandomUuid();
    if (!has_uuid) all.push_back(update::AssignUuid{uuid});
    if (!has_location) {
      std::string path;
      for (const auto& part : id.ns) path += part + "/";
      all.push_back(update::SetLocation{io_->Location(path + id.name + "-" + uuid.substr(0, 8))});
    }
  }
  all.insert(all.end(), updates.begin(), updates.end());
  ASSIGN_OR_RETURN(TableMetadata next,
                   ApplyUpdates(base ? &base->metadata : nullptr, all, clock_->NowMillis()));
  if (base) {
    if (next.table_uuid != base->metadata.table_uuid) {
      return InvalidArgument("the table uuid cannot change");
    }
    RecordPreviousMetadata(&next, base->metadata, p.base_location);
  }
  RETURN_IF_ERROR(io_->KeyOf(next.location + "/metadata").status());
  ASSIGN_OR_RETURN(p.new_location, WriteMetadata(next, p.base_location));
  ASSIGN_OR_RETURN(p.next, ReadMetadata(p.new_location));
  return p;
}

Result<bool> MetastoreCatalog::Swap(CatalogStore::Tx& tx, const Prepared& p) {
  if (p.base_location.empty()) {
    ASSIGN_OR_RETURN(auto now, tx.MetadataLocation(p.id));
    if (now) return false;  // created concurrently: the retry re-checks assert-create
    RETURN_IF_ERROR(tx.InsertTable(p.id, p.new_location));
    return true;
  }
  return tx.SwapMetadataLocation(p.id, p.base_location, p.new_location);
}

Result<LoadedTable> MetastoreCatalog::CommitTable(const TableIdentifier& id,
                                                  const std::vector<TableRequirement>& requirements,
                                                  const std::vector<TableUpdate>& updates) {
  return Commit(id, requirements, updates, nullptr);
}

Result<LoadedTable> MetastoreCatalog::CommitTableFenced(
    const TableIdentifier& id, const std::vector<TableRequirement>& requirements,
    const std::vector<TableUpdate>& updates, const CommitFence& fence) {
  return Commit(id, requirements, updates, &fence);
}

Result<LoadedTable> MetastoreCatalog::Commit(const TableIdentifier& id,
                                             const std::vector<TableRequirement>& requirements,
                                             const std::vector<TableUpdate>& updates,
                                             const CommitFence* fence) {
  std::lock_guard table_lock(TableLock(id));
  if (updates.empty() && fence == nullptr) {
    // Nothing to change: no new metadata file (as Iceberg Java's catalogs do).
    RETURN_IF_ERROR(CheckTableName(id));
    ASSIGN_OR_RETURN(auto location, CurrentLocation(id));
    if (!location) return NoSuchTableError(id);
    ASSIGN_OR_RETURN(auto base, ReadMetadata(*location));
    RETURN_IF_ERROR(CheckRequirements(&base->metadata, requirements));
    return Loaded(*location);
  }
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(Prepared p, Prepare(id, requirements, updates));
    bool swapped = false;
    bool fenced = false;
    Status st = store_->RunInTransaction([&](CatalogStore::Tx& tx) -> Status {
      swapped = false;
      fenced = false;
      if (fence) {
        Status f = fence->Check(tx);
        if (!f.ok()) {
          fenced = true;
          return f;
        }
      }
      ASSIGN_OR_RETURN(swapped, Swap(tx, p));
      // A lost race must not keep the fence's bookkeeping: roll back.
      if (!swapped) return Conflict("lost the pointer swap");
      return Status::OK();
    });
    if (st.ok()) return Loaded(p.new_location);
    if (fenced) {
      DiscardMetadata(p.new_location);
      return st;
    }
    if (!swapped && st.code() == StatusCode::kConflict) {
      DiscardMetadata(p.new_location);  // lost the race to another writer
      if (attempt >= options_.cas_retries) {
        return Conflict("Commit failed: the metadata of " + TableName(id) +
                        " kept changing concurrently");
      }
      continue;
    }
    if (st.code() == StatusCode::kUnknownOutcome) return st;
    // The transaction failed before or at its commit: with a store that cannot tell
    // which, the swap may have reached the disk, so the new file is never deleted.
    return UnknownOutcome("commit of " + TableName(id) +
                          " failed at the pointer swap: " + st.ToString());
  }
}

Status MetastoreCatalog::CommitTransaction(const std::vector<TableCommit>& commits) {
  std::vector<TableIdentifier> ids;
  for (const auto& c : commits) ids.push_back(c.id);
  std::sort(ids.begin(), ids.end());
  if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) {
    return InvalidArgument("a transaction may change each table only once");
  }
  // Lock in a global order so that concurrent transactions cannot deadlock.
  std::vector<std::unique_lock<std::mutex>> locks;
  for (const auto& id : ids) locks.emplace_back(TableLock(id));
  std::vector<Prepared> prepared;
  auto discard = [&] {
    for (const auto& p : prepared) DiscardMetadata(p.new_location);
  };
  for (const auto& c : commits) {
    auto p = Prepare(c.id, c.requirements, c.updates);
    if (!p.ok()) {
      discard();
      return p.status();
    }
    prepared.push_back(std::move(p).value());
  }
  bool lost = false;
  Status st = store_->RunInTransaction([&](CatalogStore::Tx& tx) -> Status {
    lost = false;
    for (const auto& p : prepared) {
      ASSIGN_OR_RETURN(bool swapped, Swap(tx, p));
      if (!swapped) {
        lost = true;
        return Conflict(p.base_location.empty()
                            ? "Requirement failed: table " + TableName(p.id) +
                                  " was created concurrently"
                            : "Commit failed: " + TableName(p.id) + " changed concurrently");
      }
    }
    return Status::OK();
  });
  if (st.ok()) return st;
  if (lost) {
    discard();
    return st;
  }
  if (st.code() == StatusCode::kUnknownOutcome) return st;
  return UnknownOutcome("transaction commit failed at the pointer swap: " + st.ToString());
}

Status MetastoreCatalog::DropTable(const TableIdentifier& id, bool purge) {
  std::lock_guard table_lock(TableLock(id));
  ASSIGN_OR_RETURN(auto location, CurrentLocation(id));
  if (!location) return NoSuchTableError(id);
  std::shared_ptr<const Cached> metadata;
  if (purge) {
    auto m = ReadMetadata(*location);
    if (m.ok()) metadata = *m;
  }
  RETURN_IF_ERROR(store_->RunInTransaction([&](CatalogStore::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(auto now, tx.MetadataLocation(id));
    if (!now) return NoSuchTableError(id);
    return tx.DeleteTable(id);
  }));
  if (!purge || !metadata) return Status::OK();
  // Purge what the metadata references (never blindly a prefix: a registered table may
  // share its location with others). Files that cannot be read are skipped, logged.
  const TableMetadata& m = metadata->metadata;
  auto remove = [&](const std::string& f) {
    if (Status st = io_->Delete(f); !st.ok()) {
      spdlog::warn("purge of {}: {}", TableName(id), st.ToString());
    }
  };
  for (const auto& s : m.snapshots) {
    auto files = CollectReachableFiles(*io_, m, {s.snapshot_id}, {}, false);
    if (!files.ok()) {
      spdlog::warn("purge of {}: snapshot {}: {}", TableName(id), s.snapshot_id,
                   files.status().ToString());
      if (!s.manifest_list.empty()) remove(s.manifest_list);
      continue;
    }
    for (const auto* set : {&files->content_files, &files->manifests, &files->manifest_lists}) {
      for (const auto& f : *set) remove(f);
    }
  }
  auto table_files = CollectReachableFiles(*io_, m, {}, {}, true);
  if (table_files.ok()) {
    for (const auto& f : table_files->other) remove(f);
  }
  remove(*location);
  return Status::OK();
}

Status MetastoreCatalog::RenameTable(const TableIdentifier& from, const TableIdentifier& to) {
  RETURN_IF_ERROR(CheckTableName(to));
  std::lock_guard table_lock(TableLock(from));
  return store_->RunInTransaction([&](CatalogStore::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(auto src, tx.MetadataLocation(from));
    if (!src) return NoSuchTableError(from);
    ASSIGN_OR_RETURN(auto ns, tx.LoadNamespace(to.ns));
    if (!ns) return NoSuchNamespaceError(to.ns);
    ASSIGN_OR_RETURN(auto dst, tx.MetadataLocation(to));
    if (dst) return AlreadyExists("Table already exists: " + TableName(to));
    return tx.RenameTable(from, to);
  });
}

Result<LoadedTable> MetastoreCatalog::RegisterTable(const TableIdentifier& id,
                                                    const std::string& metadata_location,
                                                    bool overwrite) {
  RETURN_IF_ERROR(CheckTableName(id));
  RETURN_IF_ERROR(io_->KeyOf(metadata_location).status());
  auto metadata = ReadMetadata(metadata_location);
  if (!metadata.ok()) {
    if (metadata.status().code() == StatusCode::kNotFound) {
      return InvalidArgument("no metadata file at " + metadata_location);
    }
    return InvalidArgument(metadata.status().message());
  }
  std::lock_guard table_lock(TableLock(id));
  RETURN_IF_ERROR(store_->RunInTransaction([&](CatalogStore::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(auto ns, tx.LoadNamespace(id.ns));
    if (!ns) return NoSuchNamespaceError(id.ns);
    ASSIGN_OR_RETURN(auto now, tx.MetadataLocation(id));
    if (now && !overwrite) return AlreadyExists("Table already exists: " + TableName(id));
    if (now) return tx.SetMetadataLocation(id, metadata_location, *now);
    return tx.InsertTable(id, metadata_location);
  }));
  return Loaded(metadata_location);
}

}  // namespace icestream::iceberg
