// The SQLite-backed catalog (Iceberg spec "Metastore Tables": the table pointer is
// swapped with a compare-and-set; metadata files are never overwritten).
#include "iceberg/sqlite_catalog.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/crypto.h"
#include "iceberg/table_files.h"
#include "iceberg/table_metadata_json.h"

namespace icestream::iceberg {

struct SqliteCatalog::Cached {
  TableMetadata metadata;
  std::shared_ptr<const std::string> json;
};

namespace {

constexpr char kSep = '\x1f';

std::string NsKey(const Namespace& ns) {
  std::string k;
  for (size_t i = 0; i < ns.size(); ++i) {
    if (i) k += kSep;
    k += ns[i];
  }
  return k;
}

Namespace NsFromKey(const std::string& k) {
  Namespace ns;
  size_t start = 0;
  while (true) {
    size_t p = k.find(kSep, start);
    ns.push_back(k.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return ns;
}

// Names become path segments of table locations: no separators, no dot segments.
Status CheckName(std::string_view what, const std::string& name) {
  if (name.empty()) return InvalidArgument(std::string(what) + " name must not be empty");
  if (name == "." || name == ".." || name.find('/') != std::string::npos || name.find(kSep) != std::string::npos ||
      name.find('\0') != std::string::npos) {
    return InvalidArgument(std::string(what) + " name '" + name + "' contains '/', a control character or is a dot segment");
  }
  return Status::OK();
}

Status CheckNamespace(const Namespace& ns) {
  if (ns.empty()) return InvalidArgument("namespace must have at least one level");
  for (const auto& part : ns) RETURN_IF_ERROR(CheckName("namespace", part));
  return Status::OK();
}

Status CheckTable(const TableIdentifier& id) {
  RETURN_IF_ERROR(CheckNamespace(id.ns));
  return CheckName("table", id.name);
}

std::string PropertiesJson(const Properties& p) { return nlohmann::json(p).dump(); }

Properties PropertiesFromJson(const std::string& text) {
  Properties p;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.value().is_string()) p[it.key()] = it.value().get<std::string>();
    }
  }
  return p;
}

// "<NNNNN>-<uuid>.metadata.json" -> NNNNN, or -1.
int64_t MetadataVersion(const std::string& location) {
  size_t slash = location.rfind('/');
  std::string name = location.substr(slash == std::string::npos ? 0 : slash + 1);
  size_t i = 0;
  int64_t v = 0;
  while (i < name.size() && i < 10 && std::isdigit(static_cast<unsigned char>(name[i]))) v = v * 10 + (name[i++] - '0');
  if (i == 0 || i >= name.size() || name[i] != '-') return -1;
  return v;
}

}  // namespace

SqliteCatalog::SqliteCatalog(Database* db, const FileIO* io, const Clock* clock, SqliteCatalogOptions options)
    : db_(db), io_(io), clock_(clock), options_(std::move(options)) {}

Result<std::unique_ptr<SqliteCatalog>> SqliteCatalog::Open(Database* db, const FileIO* io, const Clock* clock,
                                                           SqliteCatalogOptions options) {
  RETURN_IF_ERROR(db->Exec(R"(
    CREATE TABLE IF NOT EXISTS iceberg_namespaces (
      warehouse TEXT NOT NULL, namespace TEXT NOT NULL, properties TEXT NOT NULL DEFAULT '{}',
      PRIMARY KEY (warehouse, namespace));
    CREATE TABLE IF NOT EXISTS iceberg_tables (
      warehouse TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
      metadata_location TEXT NOT NULL, previous_metadata_location TEXT,
      PRIMARY KEY (warehouse, namespace, name));
  )"));
  return std::unique_ptr<SqliteCatalog>(new SqliteCatalog(db, io, clock, std::move(options)));
}

std::mutex& SqliteCatalog::TableLock(const TableIdentifier& id) {
  std::lock_guard lock(locks_mu_);
  auto& m = table_locks_[id];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

Result<std::shared_ptr<const SqliteCatalog::Cached>> SqliteCatalog::ReadMetadata(const std::string& location) {
  {
    std::lock_guard lock(cache_mu_);
    if (auto it = cache_.find(location); it != cache_.end()) return it->second;
  }
  ASSIGN_OR_RETURN(std::string text, io_->Read(location));
  auto metadata = TableMetadataFromJson(text);
  if (!metadata.ok()) {
    return Corruption("metadata file " + location + " does not parse: " + metadata.status().message());
  }
  auto cached = std::make_shared<Cached>();
  cached->metadata = std::move(metadata).value();
  cached->json = std::make_shared<const std::string>(TableMetadataToJson(cached->metadata));
  CacheInsert(location, cached);
  return std::shared_ptr<const Cached>(cached);
}

void SqliteCatalog::CacheInsert(const std::string& location, std::shared_ptr<const Cached> cached) {
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

void SqliteCatalog::DiscardMetadata(const std::string& location) {
  CacheErase(location);
  (void)io_->Delete(location);
}

void SqliteCatalog::CacheErase(const std::string& location) {
  std::lock_guard lock(cache_mu_);
  if (cache_.erase(location) == 0) return;
  std::erase(cache_order_, location);
}

Result<std::optional<std::string>> SqliteCatalog::CurrentLocation(const TableIdentifier& id) {
  ASSIGN_OR_RETURN(auto rows, db_->Query("SELECT metadata_location FROM iceberg_tables WHERE warehouse = ?1 AND "
                                         "namespace = ?2 AND name = ?3",
                                         {options_.warehouse, NsKey(id.ns), id.name}));
  if (rows.empty()) return std::optional<std::string>();
  return std::optional<std::string>(AsText(rows[0][0]));
}

Result<LoadedTable> SqliteCatalog::Loaded(const std::string& location) {
  ASSIGN_OR_RETURN(auto cached, ReadMetadata(location));
  LoadedTable t;
  t.metadata_location = location;
  t.metadata = cached->metadata;
  t.metadata_json = cached->json;
  return t;
}

Result<std::string> SqliteCatalog::WriteMetadata(const TableMetadata& next, const std::string& base_location) {
  int64_t version = base_location.empty() ? 0 : MetadataVersion(base_location) + 1;
  if (version < 0) version = 0;
  std::string dir = next.location + "/metadata";
  if (auto it = next.properties.find("write.metadata.path"); it != next.properties.end() && !it->second.empty()) {
    dir = it->second;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  }
  std::string location = fmt::format("{}/{:05}-{}.metadata.json", dir, version, crypto::RandomUuid());
  auto cached = std::make_shared<Cached>();
  cached->metadata = next;
  cached->json = std::make_shared<const std::string>(TableMetadataToJson(next));
  RETURN_IF_ERROR(io_->Write(location, *cached->json, /*if_absent=*/true));
  CacheInsert(location, cached);
  return location;
}

// ---------------------------------------------------------------------------------
// Namespaces.

Result<std::vector<Namespace>> SqliteCatalog::ListNamespaces(const Namespace& parent) {
  ASSIGN_OR_RETURN(auto rows, db_->Query("SELECT namespace FROM iceberg_namespaces WHERE warehouse = ?1 "
                                         "ORDER BY namespace",
                                         {options_.warehouse}));
  std::set<Namespace> children;
  bool parent_seen = parent.empty();
  for (const auto& row : rows) {
    Namespace ns = NsFromKey(AsText(row[0]));
    if (ns.size() < parent.size() || !std::equal(parent.begin(), parent.end(), ns.begin())) continue;
    parent_seen = true;
    if (ns.size() == parent.size()) continue;
    children.insert(Namespace(ns.begin(), ns.begin() + static_cast<ptrdiff_t>(parent.size() + 1)));
  }
  if (!parent_seen) return NoSuchNamespaceError(parent);
  return std::vector<Namespace>(children.begin(), children.end());
}

Status SqliteCatalog::CreateNamespace(const Namespace& ns, const Properties& properties) {
  RETURN_IF_ERROR(CheckNamespace(ns));
  return db_->Transaction([&](Database::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(auto rows, tx.Query("SELECT 1 FROM iceberg_namespaces WHERE warehouse = ?1 AND namespace = ?2",
                                         {options_.warehouse, NsKey(ns)}));
    if (!rows.empty()) return AlreadyExists("Namespace already exists: " + NamespaceName(ns));
    return tx.Exec("INSERT INTO iceberg_namespaces (warehouse, namespace, properties) VALUES (?1, ?2, ?3)",
                   {options_.warehouse, NsKey(ns), PropertiesJson(properties)});
  });
}

Result<Properties> SqliteCatalog::LoadNamespaceProperties(const Namespace& ns) {
  ASSIGN_OR_RETURN(auto rows, db_->Query("SELECT properties FROM iceberg_namespaces WHERE warehouse = ?1 AND "
                                         "namespace = ?2",
                                         {options_.warehouse, NsKey(ns)}));
  if (rows.empty()) return NoSuchNamespaceError(ns);
  return PropertiesFromJson(AsText(rows[0][0]));
}

Result<bool> SqliteCatalog::NamespaceExists(const Namespace& ns) {
  auto p = LoadNamespaceProperties(ns);
  if (p.ok()) return true;
  if (IsNoSuchNamespace(p.status())) return false;
  return p.status();
}

Result<NamespacePropertiesChange> SqliteCatalog::UpdateNamespaceProperties(const Namespace& ns,
                                                                          const std::vector<std::string>& removals,
                                                                          const Properties& updates) {
  for (const auto& k : removals) {
    if (updates.count(k)) return InvalidArgument("Property '" + k + "' is both updated and removed");
  }
  NamespacePropertiesChange change;
  RETURN_IF_ERROR(db_->Transaction([&](Database::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(auto rows, tx.Query("SELECT properties FROM iceberg_namespaces WHERE warehouse = ?1 AND "
                                         "namespace = ?2",
                                         {options_.warehouse, NsKey(ns)}));
    if (rows.empty()) return NoSuchNamespaceError(ns);
    Properties p = PropertiesFromJson(AsText(rows[0][0]));
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
    return tx.Exec("UPDATE iceberg_namespaces SET properties = ?3 WHERE warehouse = ?1 AND namespace = ?2",
                   {options_.warehouse, NsKey(ns), PropertiesJson(p)});
  }));
  return change;
}

Status SqliteCatalog::DropNamespace(const Namespace& ns) {
  return db_->Transaction([&](Database::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(auto rows, tx.Query("SELECT 1 FROM iceberg_namespaces WHERE warehouse = ?1 AND namespace = ?2",
                                         {options_.warehouse, NsKey(ns)}));
    if (rows.empty()) return NoSuchNamespaceError(ns);
    ASSIGN_OR_RETURN(auto tables, tx.Query("SELECT 1 FROM iceberg_tables WHERE warehouse = ?1 AND namespace = ?2 LIMIT 1",
                                           {options_.warehouse, NsKey(ns)}));
    std::string prefix = NsKey(ns) + kSep;
    ASSIGN_OR_RETURN(auto children, tx.Query("SELECT 1 FROM iceberg_namespaces WHERE warehouse = ?1 AND "
                                             "substr(namespace, 1, length(?2)) = ?2 LIMIT 1",
                                             {options_.warehouse, prefix}));
    if (!tables.empty() || !children.empty()) return NamespaceNotEmptyError(ns);
    return tx.Exec("DELETE FROM iceberg_namespaces WHERE warehouse = ?1 AND namespace = ?2",
                   {options_.warehouse, NsKey(ns)});
  });
}

// ---------------------------------------------------------------------------------
// Tables.

Result<std::vector<TableIdentifier>> SqliteCatalog::ListTables(const Namespace& ns) {
  ASSIGN_OR_RETURN(bool exists, NamespaceExists(ns));
  if (!exists) return NoSuchNamespaceError(ns);
  ASSIGN_OR_RETURN(auto rows, db_->Query("SELECT name FROM iceberg_tables WHERE warehouse = ?1 AND namespace = ?2 "
                                         "ORDER BY name",
                                         {options_.warehouse, NsKey(ns)}));
  std::vector<TableIdentifier> out;
  for (const auto& r : rows) out.push_back({ns, AsText(r[0])});
  return out;
}

Result<LoadedTable> SqliteCatalog::CreateTable(const Namespace& ns, const CreateTableRequest& req) {
  TableIdentifier id{ns, req.name};
  RETURN_IF_ERROR(CheckTable(id));
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
                   NewTableMetadata(req.schema, req.spec.value_or(PartitionSpec{}), req.write_order.value_or(SortOrder{}),
                                    location, req.properties, uuid, clock_->NowMillis()));
  if (req.stage_create) {
    LoadedTable t;
    t.metadata = std::move(m);
    return t;
  }
  std::lock_guard table_lock(TableLock(id));
  ASSIGN_OR_RETURN(std::string new_location, WriteMetadata(m, ""));
  Status st = db_->Transaction([&](Database::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(auto rows, tx.Query("SELECT 1 FROM iceberg_tables WHERE warehouse = ?1 AND namespace = ?2 AND "
                                         "name = ?3",
                                         {options_.warehouse, NsKey(ns), req.name}));
    if (!rows.empty()) return AlreadyExists("Table already exists: " + TableName(id));
    ASSIGN_OR_RETURN(auto nsrows, tx.Query("SELECT 1 FROM iceberg_namespaces WHERE warehouse = ?1 AND namespace = ?2",
                                           {options_.warehouse, NsKey(ns)}));
    if (nsrows.empty()) return NoSuchNamespaceError(ns);
    return tx.Exec("INSERT INTO iceberg_tables (warehouse, namespace, name, metadata_location) VALUES (?1, ?2, ?3, ?4)",
                   {options_.warehouse, NsKey(ns), req.name, new_location});
  });
  if (!st.ok()) {
    DiscardMetadata(new_location);
    return st;
  }
  return Loaded(new_location);
}

Result<LoadedTable> SqliteCatalog::LoadTable(const TableIdentifier& id) {
  ASSIGN_OR_RETURN(auto location, CurrentLocation(id));
  if (!location) return NoSuchTableError(id);
  return Loaded(*location);
}

Result<bool> SqliteCatalog::TableExists(const TableIdentifier& id) {
  ASSIGN_OR_RETURN(auto location, CurrentLocation(id));
  return location.has_value();
}

Result<SqliteCatalog::Prepared> SqliteCatalog::Prepare(const TableIdentifier& id,
                                                       const std::vector<TableRequirement>& requirements,
                                                       const std::vector<TableUpdate>& updates) {
  RETURN_IF_ERROR(CheckTable(id));
  Prepared p;
  p.id = id;
  ASSIGN_OR_RETURN(auto location, CurrentLocation(id));
  std::shared_ptr<const Cached> base;
  if (location) {
    ASSIGN_OR_RETURN(base, ReadMetadata(*location));
    p.base_location = *location;
  } else {
    bool creates = std::any_of(requirements.begin(), requirements.end(), [](const TableRequirement& r) {
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
  ASSIGN_OR_RETURN(TableMetadata next, ApplyUpdates(base ? &base->metadata : nullptr, all, clock_->NowMillis()));
  if (base) {
    if (next.table_uuid != base->metadata.table_uuid) return InvalidArgument("the table uuid cannot change");
    RecordPreviousMetadata(&next, base->metadata, p.base_location);
  }
  RETURN_IF_ERROR(io_->KeyOf(next.location + "/metadata").status());
  ASSIGN_OR_RETURN(p.new_location, WriteMetadata(next, p.base_location));
  ASSIGN_OR_RETURN(p.next, ReadMetadata(p.new_location));
  return p;
}

Result<LoadedTable> SqliteCatalog::CommitTable(const TableIdentifier& id,
                                               const std::vector<TableRequirement>& requirements,
                                               const std::vector<TableUpdate>& updates) {
  std::lock_guard table_lock(TableLock(id));
  if (updates.empty()) {
    // Nothing to change: no new metadata file (as Iceberg Java's catalogs do).
    RETURN_IF_ERROR(CheckTable(id));
    ASSIGN_OR_RETURN(auto location, CurrentLocation(id));
    if (!location) return NoSuchTableError(id);
    ASSIGN_OR_RETURN(auto base, ReadMetadata(*location));
    RETURN_IF_ERROR(CheckRequirements(&base->metadata, requirements));
    return Loaded(*location);
  }
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(Prepared p, Prepare(id, requirements, updates));
    bool swapped = false;
    Status st = db_->Transaction([&](Database::Tx& tx) -> Status {
      if (p.base_location.empty()) {
        ASSIGN_OR_RETURN(auto rows, tx.Query("SELECT 1 FROM iceberg_tables WHERE warehouse = ?1 AND namespace = ?2 "
                                             "AND name = ?3",
                                             {options_.warehouse, NsKey(id.ns), id.name}));
        if (!rows.empty()) return Status::OK();  // created concurrently: retry re-checks assert-create
        RETURN_IF_ERROR(tx.Exec("INSERT INTO iceberg_tables (warehouse, namespace, name, metadata_location) "
                                "VALUES (?1, ?2, ?3, ?4)",
                                {options_.warehouse, NsKey(id.ns), id.name, p.new_location}));
      } else {
        RETURN_IF_ERROR(tx.Exec("UPDATE iceberg_tables SET metadata_location = ?5, previous_metadata_location = ?4 "
                                "WHERE warehouse = ?1 AND namespace = ?2 AND name = ?3 AND metadata_location = ?4",
                                {options_.warehouse, NsKey(id.ns), id.name, p.base_location, p.new_location}));
        if (tx.changes() == 0) return Status::OK();
      }
      swapped = true;
      return Status::OK();
    });
    if (!st.ok()) {
      // The swap may or may not have reached the disk: never delete the new file.
      return UnknownOutcome("commit of " + TableName(id) + " failed at the pointer swap: " + st.ToString());
    }
    if (swapped) return Loaded(p.new_location);
    DiscardMetadata(p.new_location);  // lost the race to another process
    if (attempt >= options_.cas_retries) {
      return Conflict("Commit failed: the metadata of " + TableName(id) + " kept changing concurrently");
    }
  }
}

Status SqliteCatalog::CommitTransaction(const std::vector<TableCommit>& commits) {
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
  bool all_swapped = true;
  Status st = db_->Transaction([&](Database::Tx& tx) -> Status {
    for (const auto& p : prepared) {
      if (p.base_location.empty()) {
        ASSIGN_OR_RETURN(auto rows, tx.Query("SELECT 1 FROM iceberg_tables WHERE warehouse = ?1 AND namespace = ?2 "
                                             "AND name = ?3",
                                             {options_.warehouse, NsKey(p.id.ns), p.id.name}));
        if (!rows.empty()) {
          all_swapped = false;
          return Conflict("Requirement failed: table " + TableName(p.id) + " was created concurrently");
        }
        RETURN_IF_ERROR(tx.Exec("INSERT INTO iceberg_tables (warehouse, namespace, name, metadata_location) "
                                "VALUES (?1, ?2, ?3, ?4)",
                                {options_.warehouse, NsKey(p.id.ns), p.id.name, p.new_location}));
      } else {
        RETURN_IF_ERROR(tx.Exec("UPDATE iceberg_tables SET metadata_location = ?5, previous_metadata_location = ?4 "
                                "WHERE warehouse = ?1 AND namespace = ?2 AND name = ?3 AND metadata_location = ?4",
                                {options_.warehouse, NsKey(p.id.ns), p.id.name, p.base_location, p.new_location}));
        if (tx.changes() == 0) {
          all_swapped = false;
          return Conflict("Commit failed: " + TableName(p.id) + " changed concurrently");
        }
      }
    }
    return Status::OK();
  });
  if (!st.ok() && all_swapped) {
    return UnknownOutcome("transaction commit failed at the pointer swap: " + st.ToString());
  }
  if (!st.ok()) discard();
  return st;
}

Status SqliteCatalog::DropTable(const TableIdentifier& id, bool purge) {
  std::lock_guard table_lock(TableLock(id));
  ASSIGN_OR_RETURN(auto location, CurrentLocation(id));
  if (!location) return NoSuchTableError(id);
  std::shared_ptr<const Cached> metadata;
  if (purge) {
    auto m = ReadMetadata(*location);
    if (m.ok()) metadata = *m;
  }
  RETURN_IF_ERROR(db_->Query("DELETE FROM iceberg_tables WHERE warehouse = ?1 AND namespace = ?2 AND name = ?3",
                             {options_.warehouse, NsKey(id.ns), id.name})
                      .status());
  if (!purge || !metadata) return Status::OK();
  // Purge what the metadata references (never blindly a prefix: a registered table may
  // share its location with others). Files that cannot be read are skipped, logged.
  const TableMetadata& m = metadata->metadata;
  auto remove = [&](const std::string& f) {
    if (Status st = io_->Delete(f); !st.ok()) spdlog::warn("purge of {}: {}", TableName(id), st.ToString());
  };
  for (const auto& s : m.snapshots) {
    auto files = CollectReachableFiles(*io_, m, {s.snapshot_id}, {}, false);
    if (!files.ok()) {
      spdlog::warn("purge of {}: snapshot {}: {}", TableName(id), s.snapshot_id, files.status().ToString());
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

Status SqliteCatalog::RenameTable(const TableIdentifier& from, const TableIdentifier& to) {
  RETURN_IF_ERROR(CheckTable(to));
  std::lock_guard table_lock(TableLock(from));
  return db_->Transaction([&](Database::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(auto src, tx.Query("SELECT 1 FROM iceberg_tables WHERE warehouse = ?1 AND namespace = ?2 AND name = ?3",
                                        {options_.warehouse, NsKey(from.ns), from.name}));
    if (src.empty()) return NoSuchTableError(from);
    ASSIGN_OR_RETURN(auto ns, tx.Query("SELECT 1 FROM iceberg_namespaces WHERE warehouse = ?1 AND namespace = ?2",
                                       {options_.warehouse, NsKey(to.ns)}));
    if (ns.empty()) return NoSuchNamespaceError(to.ns);
    ASSIGN_OR_RETURN(auto dst, tx.Query("SELECT 1 FROM iceberg_tables WHERE warehouse = ?1 AND namespace = ?2 AND name = ?3",
                                        {options_.warehouse, NsKey(to.ns), to.name}));
    if (!dst.empty()) return AlreadyExists("Table already exists: " + TableName(to));
    return tx.Exec("UPDATE iceberg_tables SET namespace = ?4, name = ?5 WHERE warehouse = ?1 AND namespace = ?2 AND "
                   "name = ?3",
                   {options_.warehouse, NsKey(from.ns), from.name, NsKey(to.ns), to.name});
  });
}

Result<LoadedTable> SqliteCatalog::RegisterTable(const TableIdentifier& id, const std::string& metadata_location,
                                                 bool overwrite) {
  RETURN_IF_ERROR(CheckTable(id));
  RETURN_IF_ERROR(io_->KeyOf(metadata_location).status());
  auto metadata = ReadMetadata(metadata_location);
  if (!metadata.ok()) {
    if (metadata.status().code() == StatusCode::kNotFound) {
      return InvalidArgument("no metadata file at " + metadata_location);
    }
    return InvalidArgument(metadata.status().message());
  }
  std::lock_guard table_lock(TableLock(id));
  RETURN_IF_ERROR(db_->Transaction([&](Database::Tx& tx) -> Status {
    ASSIGN_OR_RETURN(auto ns, tx.Query("SELECT 1 FROM iceberg_namespaces WHERE warehouse = ?1 AND namespace = ?2",
                                       {options_.warehouse, NsKey(id.ns)}));
    if (ns.empty()) return NoSuchNamespaceError(id.ns);
    ASSIGN_OR_RETURN(auto rows, tx.Query("SELECT metadata_location FROM iceberg_tables WHERE warehouse = ?1 AND "
                                         "namespace = ?2 AND name = ?3",
                                         {options_.warehouse, NsKey(id.ns), id.name}));
    if (!rows.empty() && !overwrite) return AlreadyExists("Table already exists: " + TableName(id));
    if (!rows.empty()) {
      return tx.Exec("UPDATE iceberg_tables SET metadata_location = ?4, previous_metadata_location = ?5 WHERE "
                     "warehouse = ?1 AND namespace = ?2 AND name = ?3",
                     {options_.warehouse, NsKey(id.ns), id.name, metadata_location, AsText(rows[0][0])});
    }
    return tx.Exec("INSERT INTO iceberg_tables (warehouse, namespace, name, metadata_location) VALUES (?1, ?2, ?3, ?4)",
                   {options_.warehouse, NsKey(id.ns), id.name, metadata_location});
  }));
  return Loaded(metadata_location);
}

}  // namespace icestream::iceberg
