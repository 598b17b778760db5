// `icestream table cat|count|files [--warehouse W] NAMESPACE.TABLE`: a table's rows, row
// count and live files, read through the Iceberg REST catalog of a running server (the
// table's metadata) and from the table's files with the project's own Parquet reader
// (iceberg/parquet/table_scan.h: delete files applied, older files projected onto the
// snapshot's schema). The way to see rows that needs no engine and no network.
//
//   cat    one JSON object per row (json_rows.h's value forms); --limit, --where col=value
//   count  the number of live rows (from the manifests when no delete file applies)
//   files  the snapshot's data and delete files; --format text | json | duckdb (a DuckDB
//          statement over exactly these files, position and equality deletes applied)
//
// Files at file:// locations are read where they are (the command runs on the server's
// machine, or where its data directory is mounted); s3:// ones through --s3-endpoint (or
// AWS_ENDPOINT_URL_S3) with the AWS_* credentials.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "iceberg/parquet/table_scan.h"
#include "iceberg/partition_spec.h"
#include "iceberg/rest/rest_json.h"
#include "objectstore/local_store.h"
#include "objectstore/s3/s3_store.h"
#include "server/cli_client.h"
#include "server/commands.h"

namespace icestream::server {
namespace {

struct TableFlags {
  ClientFlags client;
  std::string warehouse;
  std::string table;
  std::optional<int64_t> snapshot;
  int64_t limit = -1;
  std::vector<std::string> where;
  std::string format = "text";
  std::string s3_endpoint;
};

// What the table's files are read through.
struct Files {
  std::unique_ptr<objectstore::ObjectStore> store;
  std::unique_ptr<iceberg::FileIO> io;
};

Result<Files> OpenFiles(const std::string& location, const std::string& bucket,
                        const TableFlags& f) {
  Files out;
  if (location.rfind("file://", 0) == 0 || location.rfind("file:/", 0) == 0) {
    std::string path = location.substr(location.rfind("file://", 0) == 0 ? 7 : 5);
    size_t at = path.find("/" + bucket + "/");
    if (at == std::string::npos) {
      return InvalidArgument("the table's location " + location +
                             " is not inside a folder named after its warehouse " + bucket);
    }
    out.store = std::make_unique<objectstore::LocalObjectStore>(path.substr(0, at));
  } else if (location.rfind("s3://", 0) == 0) {
    objectstore::s3::S3Options o;
    o.endpoint = f.s3_endpoint;
    if (o.endpoint.empty() && std::getenv("AWS_ENDPOINT_URL_S3"))
      o.endpoint = std::getenv("AWS_ENDPOINT_URL_S3");
    if (o.endpoint.empty()) {
      return InvalidArgument("the table lives in S3 (" + location +
                             "): give the S3 endpoint with --s3-endpoint or AWS_ENDPOINT_URL_S3");
    }
    o.credentials = objectstore::s3::CredentialsFromEnvironment();
    const char* region = std::getenv("AWS_REGION");
    if (region) o.region = region;
    out.store = std::make_unique<objectstore::s3::S3ObjectStore>(o);
  } else {
    return Unimplemented("cannot read table files at " + location + " (file:// and s3:// only)");
  }
  out.io = std::make_unique<iceberg::FileIO>(out.store.get(), bucket);
  return out;
}

struct Loaded {
  std::string bucket;
  iceberg::LoadedTable table;
};

// The table's metadata from the catalog; prints the server's error and sets the exit
// code itself when the catalog refuses.
Result<Loaded> Load(ApiClient& client, const TableFlags& f) {
  size_t dot = f.table.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == f.table.size()) {
    return InvalidArgument("name the table as NAMESPACE.TABLE, not '" + f.table + "'");
  }
  iceberg::Namespace ns;
  std::string nstext = f.table.substr(0, dot);
  for (size_t at = 0; at <= nstext.size();) {
    size_t d = nstext.find('.', at);
    if (d == std::string::npos) d = nstext.size();
    ns.push_back(nstext.substr(at, d - at));
    at = d + 1;
  }
  auto check = [](const Result<http::ClientResponse>& r, const std::string& what) -> Status {
    if (!r.ok()) return r.status();
    if (r->status != 200) return FailedPrecondition(what + ": " + ErrorText(*r));
    return Status::OK();
  };
  auto cfg = client.Get("/iceberg/v1/config",
                        f.warehouse.empty() ? "" : "warehouse=" + UriEncode(f.warehouse));
  RETURN_IF_ERROR(check(cfg, "GET /iceberg/v1/config"));
  auto cj = nlohmann::json::parse(cfg->body, nullptr, false);
  std::string prefix;
  for (const char* part : {"defaults", "overrides"}) {
    if (cj.is_object() && cj.contains(part) && cj[part].contains("prefix"))
      prefix = cj[part]["prefix"];
  }
  std::string path = "/iceberg/v1/" + (prefix.empty() ? "" : UriEncode(prefix) + "/") +
                     "namespaces/" + iceberg::rest::EncodeNamespace(ns) + "/tables/" +
                     UriEncode(f.table.substr(dot + 1));
  auto r = client.Get(path, "");
  RETURN_IF_ERROR(check(r, "GET " + path));
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (!j.is_object()) return Corruption("the catalog's LoadTable answer is not JSON");
  ASSIGN_OR_RETURN(iceberg::LoadedTable t, iceberg::rest::LoadTableResultFromJson(j));
  Loaded out;
  out.bucket = prefix.empty() ? (f.warehouse.empty() ? "default" : f.warehouse) : prefix;
  out.table = std::move(t);
  return out;
}

std::string LocalPath(const std::string& location) {
  if (location.rfind("file://", 0) == 0) return location.substr(7);
  if (location.rfind("file:/", 0) == 0) return location.substr(5);
  return location;
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string List(const std::vector<std::string>& paths) {
  std::string out = "[";
  for (size_t i = 0; i < paths.size(); ++i) out += (i ? ", " : "") + Quote(paths[i]);
  return out + "]";
}

std::string QuoteIdent(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// A DuckDB statement that returns the snapshot's rows: the data files without deletes in
// one read_parquet, every data file with deletes in its own branch that drops deleted
// positions (file_row_number) and equality-deleted values, all UNION ALL BY NAME.
std::string DuckDbStatement(const iceberg::ScanPlan& plan, const iceberg::TableMetadata& md) {
  if (plan.data_files.empty()) return "-- the snapshot has no data files: the table has no rows\n";
  std::vector<std::string> plain;
  std::vector<std::string> branches;
  for (const auto& e : plan.data_files) {
    const auto& f = e.data_file;
    int64_t seq = e.sequence_number.value_or(0);
    std::vector<std::string> pos_files;
    std::vector<const iceberg::ManifestEntry*> eq_files;
    for (const auto& d : plan.delete_files) {
      int64_t dseq = d.sequence_number.value_or(0);
      if (d.data_file.content == iceberg::FileContent::kPositionDeletes && dseq >= seq) {
        pos_files.push_back(LocalPath(d.data_file.file_path));
      } else if (d.data_file.content == iceberg::FileContent::kEqualityDeletes && dseq > seq) {
        const iceberg::PartitionSpec* spec = md.SpecById(d.data_file.spec_id);
        bool global = spec == nullptr || spec->is_unpartitioned();
        if (global || (d.data_file.spec_id == f.spec_id && d.data_file.partition == f.partition))
          eq_files.push_back(&d);
      }
    }
    if (pos_files.empty() && eq_files.empty()) {
      plain.push_back(LocalPath(f.file_path));
      continue;
    }
    std::string b = "SELECT * EXCLUDE (file_row_number) FROM read_parquet(" +
                    Quote(LocalPath(f.file_path)) + ", file_row_number = true) AS t WHERE true";
    if (!pos_files.empty()) {
      b += " AND file_row_number NOT IN (SELECT pos FROM read_parquet(" + List(pos_files) +
           ") WHERE file_path = " + Quote(f.file_path) + ")";
    }
    for (const auto* d : eq_files) {
      std::string cond;
      for (int32_t id : d->data_file.equality_ids) {
        std::string col;
        for (const auto& top : plan.schema.fields) {
          if (top.id == id) col = QuoteIdent(top.name);
        }
        if (col.empty()) continue;
        cond += (cond.empty() ? "" : " AND ") + ("d." + col + " IS NOT DISTINCT FROM t." + col);
      }
      if (cond.empty()) continue;
      b += " AND NOT EXISTS (SELECT 1 FROM read_parquet(" +
           Quote(LocalPath(d->data_file.file_path)) + ") AS d WHERE " + cond + ")";
    }
    branches.push_back(b);
  }
  if (!plain.empty())
    branches.insert(branches.begin(),
                    "SELECT * FROM read_parquet(" + List(plain) + ", union_by_name = true)");
  std::string out;
  for (size_t i = 0; i < branches.size(); ++i)
    out += (i ? "\nUNION ALL BY NAME\n" : "") + branches[i];
  return out + ";\n";
}

const char* ContentName(iceberg::FileContent c) {
  switch (c) {
    case iceberg::FileContent::kData:
      return "data";
    case iceberg::FileContent::kPositionDeletes:
      return "position-deletes";
    case iceberg::FileContent::kEqualityDeletes:
      return "equality-deletes";
  }
  return "data";
}

int Run(const std::string& what, const TableFlags& f) {
  auto fail = [&](const Status& st) {
    std::cerr << "icestream table " << what << ": " << st.message() << "\n";
    return 1;
  };
  ApiClient client(f.client);
  auto loaded = Load(client, f);
  if (!loaded.ok()) return fail(loaded.status());
  const iceberg::TableMetadata& md = loaded->table.metadata;
  auto files = OpenFiles(md.location, loaded->bucket, f);
  if (!files.ok()) return fail(files.status());
  auto plan = iceberg::PlanScan(*files->io, md, f.snapshot);
  if (!plan.ok()) return fail(plan.status());
  iceberg::ScanFilter filter;
  filter.limit = f.limit;
  for (const auto& w : f.where) {
    auto eq = iceberg::ParseEqualsFilter(w);
    if (!eq.ok()) return fail(eq.status());
    filter.equals.push_back(*eq);
  }
  if (what == "cat") {
    std::string buf;
    Status st = iceberg::ScanRows(*files->io, *plan, filter, [&](std::string_view row) {
      buf.append(row);
      buf.push_back('\n');
      if (buf.size() > (1 << 20)) {
        std::cout << buf;
        buf.clear();
      }
      return static_cast<bool>(std::cout);
    });
    std::cout << buf << std::flush;
    return st.ok() ? 0 : fail(st);
  }
  if (what == "count") {
    auto n = iceberg::CountRows(*files->io, *plan, filter);
    if (!n.ok()) return fail(n.status());
    std::cout << *n << "\n";
    return 0;
  }
  if (f.format == "duckdb") {
    std::cout << DuckDbStatement(*plan, md);
    return 0;
  }
  for (const auto* list : {&plan->data_files, &plan->delete_files}) {
    for (const auto& e : *list) {
      const auto& df = e.data_file;
      const iceberg::PartitionSpec* spec = md.SpecById(df.spec_id);
      std::string partition = spec ? iceberg::PartitionPath(*spec, df.partition) : "";
      if (f.format == "json") {
        std::cout << nlohmann::json{{"path", df.file_path},
                                    {"content", ContentName(df.content)},
                                    {"partition", partition},
                                    {"record_count", df.record_count},
                                    {"file_size_in_bytes", df.file_size_in_bytes},
                                    {"sequence_number", e.sequence_number.value_or(0)}}
                         .dump()
                  << "\n";
      } else {
        std::cout << fmt::format("{:<16} {:>10} {:>12}  {:<28} {}\n", ContentName(df.content),
                                 df.record_count, df.file_size_in_bytes, partition, df.file_path);
      }
    }
  }
  return 0;
}

}  // namespace

void AddTableCommand(CLI::App* app) {
  auto* cmd =
      app->add_subcommand("table", "Read an Iceberg table of a running server: cat, count, files");
  cmd->require_subcommand(1);
  for (const char* what : {"cat", "count", "files"}) {
    auto f = std::make_shared<TableFlags>();
    std::string w = what;
    auto* sub = cmd->add_subcommand(what, w == "cat"     ? "Print the rows as JSON lines"
                                          : w == "count" ? "Print the number of rows"
                                                         : "List the live data and delete files");
    sub->add_option("table", f->table, "NAMESPACE.TABLE")->required();
    sub->add_option("--warehouse", f->warehouse,
                    "Table bucket name or ARN (default: the catalog's default warehouse)");
    sub->add_option("--snapshot", f->snapshot, "Snapshot id (default: the current snapshot)");
    sub->add_option("--s3-endpoint", f->s3_endpoint,
                    "S3 endpoint for tables in S3 (default $AWS_ENDPOINT_URL_S3)");
    AddClientFlags(sub, &f->client, true);
    if (w != "files") {
      sub->add_option("--where", f->where,
                      "column=value on a top-level column (repeatable; all must hold)");
    }
    if (w == "cat") sub->add_option("--limit", f->limit, "At most this many rows");
    if (w == "files") {
      sub->add_option("--format", f->format,
                      "text, json or duckdb (a DuckDB read_parquet statement)")
          ->check(CLI::IsMember({"text", "json", "duckdb"}));
    }
    sub->callback([f, w] { SetExitCode(Run(w, *f)); });
  }
}

}  // namespace icestream::server
