// Table scans: planning, delete files and projected JSON rows.
#include "iceberg/parquet/table_scan.h"

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "format/parquet/file_reader.h"
#include "format/parquet/json_rows.h"
#include "iceberg/partition_spec.h"
#include "iceberg/table_files.h"

namespace icestream::iceberg {
namespace {

namespace pq = format::parquet;

// Reserved field ids of position delete files (spec "Position Delete Files").
constexpr int32_t kDeleteFilePathId = 2147483546;
constexpr int32_t kDeletePosId = 2147483545;

int64_t DataSequence(const ManifestEntry& e) { return e.sequence_number.value_or(0); }

// The schema a file is read into: every field optional (map keys excepted). A reader
// only needs the values; other writers (DuckDB, for one) mark columns optional that the
// table declares required, and the projection refuses optional-into-required.
Schema ReadingSchema(Schema schema) {
  std::function<void(std::vector<NestedField>*, bool)> relax = [&](std::vector<NestedField>* fields,
                                                                   bool map) {
    for (size_t i = 0; i < fields->size(); ++i) {
      if (!(map && i == 0)) (*fields)[i].required = false;
      relax(&(*fields)[i].type.fields, (*fields)[i].type.id == TypeId::kMap);
    }
  };
  relax(&schema.fields, false);
  return schema;
}

// Every row of the Parquet file at `location`, projected onto `target`, one JSON line
// each (newline-terminated) per call of `rows` (one call per row group).
Status ReadFileRows(const FileIO& io, const std::string& location, const pq::ParquetSchema& target,
                    const std::function<Status(const std::string& lines)>& rows) {
  ASSIGN_OR_RETURN(std::string bytes, io.Read(location));
  auto reader = pq::ParquetFileReader::Open(bytes);
  if (!reader.ok()) return reader.status().WithContext(location);
  for (int g = 0; g < (*reader)->num_row_groups(); ++g) {
    std::string out;
    Status st = pq::AppendJsonRows(**reader, g, target, &out);
    if (!st.ok()) return st.WithContext(location);
    RETURN_IF_ERROR(rows(out));
  }
  return Status::OK();
}

template <typename F>
void ForEachLine(const std::string& lines, F&& f) {
  size_t at = 0;
  while (at < lines.size()) {
    size_t nl = lines.find('\n', at);
    if (nl == std::string::npos) nl = lines.size();
    if (!f(std::string_view(lines).substr(at, nl - at))) return;
    at = nl + 1;
  }
}

struct EqualityDelete {
  int64_t sequence_number = 0;
  bool global = false;  // an unpartitioned delete file applies to every partition
  int32_t spec_id = 0;
  PartitionTuple partition;
  std::vector<std::string> names;  // the equality columns, by the read schema's names
  std::set<std::string> keys;      // JSON arrays of the deleted values
};

struct Deletes {
  // data file path -> (position, sequence number of the delete file)
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> positions;
  std::vector<EqualityDelete> equality;
};

Result<Deletes> LoadDeletes(const FileIO& io, const ScanPlan& plan) {
  Deletes d;
  if (plan.delete_files.empty()) return d;
  Schema pos_schema;
  pos_schema.fields = {{kDeleteFilePathId, "file_path", true, Primitive(TypeId::kString), ""},
                       {kDeletePosId, "pos", true, Primitive(TypeId::kLong), ""}};
  ASSIGN_OR_RETURN(pq::ParquetSchema pos_target,
                   pq::ParquetSchema::Make(ReadingSchema(pos_schema)));
  for (const auto& e : plan.delete_files) {
    const DataFile& f = e.data_file;
    int64_t seq = DataSequence(e);
    if (f.file_format != "PARQUET" && f.file_format != "parquet") {
      return Unimplemented("delete file " + f.file_path + " is " + f.file_format + ", not Parquet");
    }
    if (f.content == FileContent::kPositionDeletes) {
      RETURN_IF_ERROR(ReadFileRows(io, f.file_path, pos_target, [&](const std::string& lines) {
        Status st;
        ForEachLine(lines, [&](std::string_view line) {
          auto j = nlohmann::json::parse(line, nullptr, false);
          if (!j.is_object() || !j["file_path"].is_string() || !j["pos"].is_number_integer()) {
            st =
                Corruption("position delete file " + f.file_path + ": a row without file_path/pos");
            return false;
          }
          d.positions[j["file_path"].get<std::string>()].emplace_back(j["pos"].get<int64_t>(), seq);
          return true;
        });
        return st;
      }));
      continue;
    }
    EqualityDelete eq;
    eq.sequence_number = seq;
    eq.spec_id = f.spec_id;
    eq.partition = f.partition;
    const PartitionSpec* spec = nullptr;
    for (const auto& s : plan.specs) {
      if (s.spec_id == f.spec_id) spec = &s;
    }
    eq.global = spec == nullptr || spec->is_unpartitioned();
    Schema eq_schema;
    for (int32_t id : f.equality_ids) {
      const NestedField* field = nullptr;
      for (const auto& top : plan.schema.fields) {
        if (top.id == id) field = &top;
      }
      if (field == nullptr) {
        return Unimplemented("equality delete file " + f.file_path + " names field id " +
                             std::to_string(id) +
                             ", which is not a top-level column of the read schema");
      }
      eq_schema.fields.push_back(*field);
      eq.names.push_back(field->name);
    }
    if (eq.names.empty())
      return Corruption("equality delete file " + f.file_path + " has no equality_ids");
    ASSIGN_OR_RETURN(pq::ParquetSchema eq_target,
                     pq::ParquetSchema::Make(ReadingSchema(eq_schema)));
    RETURN_IF_ERROR(ReadFileRows(io, f.file_path, eq_target, [&](const std::string& lines) {
      ForEachLine(lines, [&](std::string_view line) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        nlohmann::json key = nlohmann::json::array();
        for (const auto& n : eq.names) key.push_back(j.is_object() ? j[n] : nullptr);
        eq.keys.insert(key.dump());
        return true;
      });
      return Status::OK();
    }));
    d.equality.push_back(std::move(eq));
  }
  return d;
}

bool Matches(const nlohmann::json& row, const ScanFilter& filter) {
  for (const auto& [column, value] : filter.equals) {
    auto it = row.find(column);
    if (it == row.end()) return false;
    if (it->is_string() ? it->get<std::string>() != value : it->dump() != value) return false;
  }
  return true;
}

Status CheckFilter(const ScanPlan& plan, const ScanFilter& filter) {
  for (const auto& [column, value] : filter.equals) {
    bool found = false;
    std::string names;
    for (const auto& f : plan.schema.fields) {
      found |= f.name == column;
      names += (names.empty() ? "" : ", ") + f.name;
    }
    if (!found) return InvalidArgument("no column " + column + " (columns: " + names + ")");
  }
  return Status::OK();
}

}  // namespace

Result<ScanPlan> PlanScan(const FileIO& io, const TableMetadata& metadata,
                          std::optional<int64_t> snapshot_id) {
  ScanPlan plan;
  const Snapshot* s =
      snapshot_id ? metadata.SnapshotById(*snapshot_id) : metadata.CurrentSnapshot();
  if (snapshot_id && s == nullptr) {
    return NotFound("snapshot " + std::to_string(*snapshot_id) + " is not in the table's metadata");
  }
  const Schema* schema = s && s->schema_id ? metadata.SchemaById(*s->schema_id) : nullptr;
  if (schema == nullptr) schema = metadata.CurrentSchema();
  if (schema == nullptr) return InvalidArgument("the table metadata has no current schema");
  plan.schema = *schema;
  plan.specs = metadata.partition_specs;
  if (s == nullptr) return plan;
  plan.snapshot = *s;
  ASSIGN_OR_RETURN(auto entries, LiveEntries(io, *s));
  for (auto& e : entries) {
    (e.data_file.content == FileContent::kData ? plan.data_files : plan.delete_files)
        .push_back(std::move(e));
  }
  return plan;
}

Status ScanRows(const FileIO& io, const ScanPlan& plan, const ScanFilter& filter,
                const std::function<bool(std::string_view row)>& row) {
  RETURN_IF_ERROR(CheckFilter(plan, filter));
  ASSIGN_OR_RETURN(Deletes deletes, LoadDeletes(io, plan));
  ASSIGN_OR_RETURN(pq::ParquetSchema target, pq::ParquetSchema::Make(ReadingSchema(plan.schema)));
  int64_t emitted = 0;
  bool stop = filter.limit == 0;
  for (const auto& e : plan.data_files) {
    if (stop) break;
    const DataFile& f = e.data_file;
    if (f.file_format != "PARQUET" && f.file_format != "parquet") {
      return Unimplemented("data file " + f.file_path + " is " + f.file_format + ", not Parquet");
    }
    int64_t seq = DataSequence(e);
    std::set<int64_t> deleted;
    if (auto it = deletes.positions.find(f.file_path); it != deletes.positions.end()) {
      for (const auto& [pos, delete_seq] : it->second) {
        if (delete_seq >= seq) deleted.insert(pos);
      }
    }
    std::vector<const EqualityDelete*> eq;
    for (const auto& d : deletes.equality) {
      if (d.sequence_number > seq &&
          (d.global || (d.spec_id == f.spec_id && d.partition == f.partition))) {
        eq.push_back(&d);
      }
    }
    bool parse = !eq.empty() || !filter.equals.empty();
    int64_t pos = 0;
    RETURN_IF_ERROR(ReadFileRows(io, f.file_path, target, [&](const std::string& lines) {
      ForEachLine(lines, [&](std::string_view line) {
        if (stop) return false;  // the limit was reached in an earlier row group of the file
        int64_t p = pos++;
        if (deleted.count(p)) return true;
        if (parse) {
          auto j = nlohmann::json::parse(line, nullptr, false);
          for (const EqualityDelete* d : eq) {
            nlohmann::json key = nlohmann::json::array();
            for (const auto& n : d->names) key.push_back(j[n]);
            if (d->keys.count(key.dump())) return true;
          }
          if (!Matches(j, filter)) return true;
        }
        ++emitted;
        if (!row(line) || (filter.limit >= 0 && emitted >= filter.limit)) {
          stop = true;
          return false;
        }
        return true;
      });
      return Status::OK();
    }));
  }
  return Status::OK();
}

Result<int64_t> CountRows(const FileIO& io, const ScanPlan& plan, const ScanFilter& filter) {
  if (plan.delete_files.empty() && filter.equals.empty()) {
    int64_t n = 0;
    for (const auto& e : plan.data_files) n += e.data_file.record_count;
    return filter.limit >= 0 ? std::min(n, filter.limit) : n;
  }
  int64_t n = 0;
  RETURN_IF_ERROR(ScanRows(io, plan, filter, [&](std::string_view) {
    ++n;
    return true;
  }));
  return n;
}

Result<std::pair<std::string, std::string>> ParseEqualsFilter(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return InvalidArgument("a filter is column=value, not '" + std::string(text) + "'");
  }
  return std::make_pair(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
}

}  // namespace icestream::iceberg
