// Test tool for the Iceberg interop suite (tests/interop/iceberg_interop.mjs): writes a
// real table with the icestream Iceberg library and Parquet writer, or reads a table
// written by another implementation, and prints JSON describing what it did / found so
// that independent readers (icebird, DuckDB, avsc) can be checked against it.
//
//   iceberg_tool write ROOT SEED   a partitioned table in ROOT (SQLite catalog in
//                                  ROOT/meta.db, bucket folder ROOT/buckets/wh): four
//                                  appends, a replace (compaction of one partition),
//                                  one more append. Prints rows, live files, snapshots.
//   iceberg_tool read METADATA     every snapshot of the table at METADATA (a file://
//                                  location) with its live entries.
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/crypto.h"
#include "common/sqlite.h"
#include "format/parquet/file_writer.h"
#include "format/parquet/output_stream.h"
#include "iceberg/file_io.h"
#include "iceberg/schema/schema_json.h"
#include "iceberg/sqlite_catalog.h"
#include "iceberg/table.h"
#include "iceberg/table_files.h"
#include "iceberg/table_metadata_json.h"
#include "objectstore/local_store.h"
#include "schema/json_schema.h"
#include "schema/record_converter.h"

namespace ice = icestream::iceberg;
namespace pq = icestream::format::parquet;
using icestream::Result;
using icestream::Status;
using nlohmann::json;

namespace {

struct Row {
  int64_t id;
  int64_t ts_micros;
  std::optional<std::string> kind;
  double amount;  // two decimals
  std::vector<std::string> tags;
  int32_t day() const { return static_cast<int32_t>(ts_micros / 86400000000LL); }
};

std::string Iso(int64_t micros) {
  int64_t ms = micros / 1000;
  std::time_t secs = ms / 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

json RowJson(const Row& r) {
  json j = {{"id", r.id}, {"ts", Iso(r.ts_micros)}, {"amount", r.amount}, {"tags", r.tags}};
  j["kind"] = r.kind ? json(*r.kind) : json(nullptr);
  return j;
}

void Check(const Status& st, const char* what) {
  if (!st.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, st.ToString().c_str());
    std::exit(1);
  }
}
template <typename T>
T Must(Result<T> r, const char* what) {
  Check(r.status(), what);
  return std::move(r).value();
}

// Writes rows as one Parquet file and describes it as an Iceberg data file, with the
// metrics the manifest needs (Iceberg spec "Data File Fields"; formats.md §C.9).
ice::DataFile WriteDataFile(ice::Table& table, const icestream::schema::ConvertibleSchema& cs,
                            const std::vector<Row>& rows, const std::string& name, const ice::FileIO& io) {
  std::string bytes;
  pq::StringOutputStream out(&bytes);
  auto writer = Must(pq::FileWriter::Make(cs.schema, &out, pq::WriterOptions{}), "parquet writer");
  auto converter = Must(icestream::schema::RecordConverter::Make(cs, writer.get()), "converter");
  for (const Row& r : rows) {
    icestream::schema::RecordError err;
    bool ok = Must(converter->Convert(RowJson(r).dump(), &err), "convert");
    if (!ok) {
      std::fprintf(stderr, "record rejected: %s\n", err.message.c_str());
      std::exit(1);
    }
  }
  pq::FileMetrics m = Must(writer->Close(), "parquet close");
  ice::DataFile f;
  f.partition = {ice::Literal::Date(rows[0].day()),
                 rows[0].kind ? std::optional<ice::Literal>(ice::Literal::String(*rows[0].kind)) : std::nullopt};
  f.file_path = table.NewDataFileLocation(f.partition, name);
  f.file_format = "PARQUET";
  f.record_count = m.record_count;
  f.file_size_in_bytes = static_cast<int64_t>(bytes.size());
  for (const auto& c : m.columns) {
    f.column_sizes[c.field_id] += c.column_size;
    if (c.value_count) f.value_counts[c.field_id] = *c.value_count;
    if (c.null_count) f.null_value_counts[c.field_id] = *c.null_count;
    if (c.nan_count) f.nan_value_counts[c.field_id] = *c.nan_count;
    if (c.lower_bound) f.lower_bounds[c.field_id] = *c.lower_bound;
    if (c.upper_bound) f.upper_bounds[c.field_id] = *c.upper_bound;
  }
  f.split_offsets = m.split_offsets;
  f.sort_order_id = 0;
  f.spec_id = table.metadata().default_spec_id;
  Check(io.Write(f.file_path, bytes), "write data file");
  return f;
}

std::string Hex(const std::string& b) {
  return icestream::crypto::Hex(reinterpret_cast<const uint8_t*>(b.data()), b.size());
}

json DataFileJson(const ice::DataFile& f) {
  json j = {{"file_path", f.file_path}, {"content", static_cast<int>(f.content)}, {"file_format", f.file_format},
            {"record_count", f.record_count}, {"file_size_in_bytes", f.file_size_in_bytes},
            {"split_offsets", f.split_offsets}, {"spec_id", f.spec_id}};
  json part = json::array();
  for (const auto& v : f.partition) {
    if (!v) {
      part.push_back(nullptr);
    } else if (auto* i = std::get_if<int32_t>(&v->value)) {
      part.push_back(*i);
    } else if (auto* s = std::get_if<std::string>(&v->value)) {
      part.push_back(*s);
    } else if (auto* l = std::get_if<int64_t>(&v->value)) {
      part.push_back(*l);
    } else {
      part.push_back(ice::ToHumanString(*v));
    }
  }
  j["partition"] = part;
  auto longs = [](const std::map<int32_t, int64_t>& m) {
    json o = json::object();
    for (const auto& [k, v] : m) o[std::to_string(k)] = v;
    return o;
  };
  auto hexes = [](const std::map<int32_t, std::string>& m) {
    json o = json::object();
    for (const auto& [k, v] : m) o[std::to_string(k)] = Hex(v);
    return o;
  };
  j["column_sizes"] = longs(f.column_sizes);
  j["value_counts"] = longs(f.value_counts);
  j["null_value_counts"] = longs(f.null_value_counts);
  j["nan_value_counts"] = longs(f.nan_value_counts);
  j["lower_bounds"] = hexes(f.lower_bounds);
  j["upper_bounds"] = hexes(f.upper_bounds);
  return j;
}

int Write(const std::string& root, uint32_t seed) {
  std::filesystem::create_directories(root);
  icestream::objectstore::LocalObjectStore store(root + "/buckets");
  ice::FileIO io(&store, "wh");
  auto db = Must(icestream::Database::Open(root + "/meta.db"), "open db");
  auto catalog = Must(ice::SqliteCatalog::Open(db.get(), &io, icestream::SystemClock::Default()), "catalog");
  Check(catalog->CreateNamespace({"db"}, {}), "create namespace");
  ice::CreateTableRequest req;
  req.name = "events";
  req.schema = Must(ice::SchemaFromJson(R"json({"type":"struct","fields":[
      {"id":1,"name":"id","required":true,"type":"long"},
      {"id":2,"name":"ts","required":true,"type":"timestamptz"},
      {"id":3,"name":"kind","required":false,"type":"string"},
      {"id":4,"name":"amount","required":false,"type":"decimal(10,2)"},
      {"id":5,"name":"tags","required":false,"type":{"type":"list","element-id":6,"element-required":true,"element":"string"}}]})json"),
                    "schema");
  ice::PartitionSpec spec;
  spec.fields = {{2, 0, "ts_day", ice::Transform::Day()}, {3, 0, "kind", ice::Transform::Identity()}};
  req.spec = spec;
  req.properties = {{"write.format.default", "parquet"}};
  Must(catalog->CreateTable({"db"}, req), "create table");
  auto table = Must(ice::Table::Load(catalog.get(), &io, {{"db"}, "events"}, icestream::SystemClock::Default()), "load");
  auto cs = Must(icestream::schema::IcebergSchemaToConvertible(ice::SchemaToJson(*table->metadata().CurrentSchema())),
                 "convertible schema");

  std::mt19937 rng(seed);
  int64_t next_id = 1;
  const int64_t base_ts = 1704067200000000LL;  // 2024-01-01T00:00:00Z
  const char* kinds[] = {"click", "view", "buy"};
  std::map<std::string, std::vector<Row>> rows_by_file;  // path -> rows
  std::map<std::string, ice::DataFile> files;
  std::map<std::string, int64_t> added_in;  // path -> sequence number of the adding commit
  json commits = json::array();
  auto make_rows = [&](int n) {
    std::vector<Row> rows;
    int day = static_cast<int>(rng() % 3);
    int k = static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) {
      Row r;
      r.id = next_id++;
      r.ts_micros = base_ts + day * 86400000000LL + static_cast<int64_t>(rng() % 86400000) * 1000;
      if (k < 3) r.kind = kinds[k];
      r.amount = static_cast<double>(static_cast<int64_t>(rng() % 200000) - 100000) / 100.0;
      for (int t = 0; t < static_cast<int>(rng() % 3); ++t) r.tags.push_back("t" + std::to_string(rng() % 10));
      rows.push_back(r);
    }
    return rows;
  };
  auto append = [&](int nfiles) {
    std::vector<ice::DataFile> batch;
    for (int i = 0; i < nfiles; ++i) {
      auto rows = make_rows(20 + static_cast<int>(rng() % 200));
      std::string name = fmt::format("{:05}-{}-{}.parquet", commits.size(), i, icestream::SystemClock::Default()->NowMicros());
      ice::DataFile f = WriteDataFile(*table, cs, rows, name, io);
      rows_by_file[f.file_path] = rows;
      files[f.file_path] = f;
      batch.push_back(f);
    }
    auto r = Must(table->AppendFiles(batch), "append");
    for (const auto& f : batch) added_in[f.file_path] = r.sequence_number;
    commits.push_back({{"operation", "append"}, {"snapshot_id", std::to_string(r.snapshot_id)}, {"sequence_number", r.sequence_number}});
  };
  for (int c = 0; c < 4; ++c) append(1 + static_cast<int>(rng() % 3));

  // Compaction: the two smallest files... of one partition, or any two files when no
  // partition has two; rows are rewritten from memory into one file.
  std::map<std::string, std::vector<std::string>> by_partition;
  for (const auto& [path, f] : files) by_partition[path.substr(0, path.rfind('/'))].push_back(path);
  std::vector<std::string> victims;
  for (const auto& [dir, paths] : by_partition) {
    if (paths.size() >= 2) victims = {paths[0], paths[1]};
  }
  if (!victims.empty()) {
    std::vector<Row> merged;
    for (const auto& p : victims) merged.insert(merged.end(), rows_by_file[p].begin(), rows_by_file[p].end());
    ice::DataFile f = WriteDataFile(*table, cs, merged, fmt::format("compacted-{}.parquet", seed), io);
    auto r = Must(table->ReplaceFiles(victims, {f}), "replace");
    for (const auto& p : victims) {
      rows_by_file.erase(p);
      files.erase(p);
    }
    rows_by_file[f.file_path] = merged;
    files[f.file_path] = f;
    added_in[f.file_path] = r.sequence_number;
    commits.push_back({{"operation", "replace"}, {"snapshot_id", std::to_string(r.snapshot_id)}, {"sequence_number", r.sequence_number}});
  }
  append(2);

  json out;
  out["table_location"] = table->metadata().location;
  out["metadata_location"] = table->metadata_location();
  out["current_snapshot_id"] = std::to_string(*table->metadata().current_snapshot_id);  // exact in JS
  out["commits"] = commits;
  out["schema"] = ice::SchemaToJsonValue(*table->metadata().CurrentSchema());
  json rows = json::array();
  json live = json::array();
  for (const auto& [path, rs] : rows_by_file) {
    for (const auto& r : rs) {
      json j = RowJson(r);
      j["ts_ms"] = r.ts_micros / 1000;
      j["file"] = path;
      rows.push_back(j);
    }
    json f = DataFileJson(files[path]);
    f["added_sequence_number"] = added_in[path];
    live.push_back(f);
  }
  out["rows"] = rows;
  out["live_files"] = live;
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

int Read(const std::string& metadata_location) {
  // The store root is "/" so that any file:// location is inside bucket "" ... use the
  // parent folder of the table as the bucket instead.
  std::string path = metadata_location.substr(std::string("file://").size());
  std::filesystem::path p(path);
  std::string bucket_dir = p.parent_path().parent_path().parent_path().string();  // <wh>/db/t1/metadata/x -> <wh>/db
  std::string root = std::filesystem::path(bucket_dir).parent_path().string();
  std::string bucket = std::filesystem::path(bucket_dir).filename().string();
  icestream::objectstore::LocalObjectStore store(root);
  ice::FileIO io(&store, bucket);
  auto text = Must(io.Read(metadata_location), "read metadata");
  auto m = Must(ice::TableMetadataFromJson(text), "parse metadata");
  json out;
  out["format_version"] = m.format_version;
  out["table_uuid"] = m.table_uuid;
  out["current_snapshot_id"] = m.current_snapshot_id ? json(std::to_string(*m.current_snapshot_id)) : json(nullptr);
  out["last_sequence_number"] = m.last_sequence_number;
  out["schema"] = ice::SchemaToJsonValue(*m.CurrentSchema());
  json snaps = json::array();
  for (const auto& s : m.snapshots) {
    json js = {{"snapshot_id", std::to_string(s.snapshot_id)}, {"sequence_number", s.sequence_number}, {"operation", s.operation()}};
    auto entries = Must(ice::LiveEntries(io, s), "live entries");
    json je = json::array();
    for (const auto& e : entries) {
      json d = DataFileJson(e.data_file);
      d["status"] = static_cast<int>(e.status);
      d["snapshot_id"] = std::to_string(*e.snapshot_id);
      d["sequence_number"] = *e.sequence_number;
      d["file_sequence_number"] = *e.file_sequence_number;
      je.push_back(d);
    }
    js["entries"] = je;
    snaps.push_back(js);
  }
  out["snapshots"] = snaps;
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "write") return Write(argv[2], static_cast<uint32_t>(std::stoul(argv[3])));
  if (argc == 3 && std::string(argv[1]) == "read") return Read(argv[2]);
  std::fprintf(stderr, "usage: iceberg_tool write ROOT SEED | read METADATA_LOCATION\n");
  return 2;
}
