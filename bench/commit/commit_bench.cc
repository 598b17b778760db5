// Iceberg commit benchmark: append commits per second on tables that already hold 10,
// 1,000 and 100,000 data files (the cost of an append must not grow with the table:
// manifests are reused, not rewritten), directly through the SQLite catalog and through
// the REST catalog over loopback HTTP; and REST LoadTable latency.
//
// Every commit is durable: the manifest, manifest list and metadata file are fsynced by
// the local object store and the pointer swap is a SQLite transaction with
// synchronous=FULL. Usage: commit_bench WORK_DIR [COMMITS_PER_SIZE] [LOADS]
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/sqlite.h"
#include "http/client.h"
#include "http/server.h"
#include "iceberg/file_io.h"
#include "iceberg/rest/rest_catalog.h"
#include "iceberg/rest/rest_server.h"
#include "iceberg/sqlite_catalog.h"
#include "iceberg/table.h"
#include "iceberg/table_files.h"
#include "objectstore/local_store.h"

namespace ice = icestream::iceberg;
using Clock = std::chrono::steady_clock;

namespace {

template <typename T>
T Must(icestream::Result<T> r, const char* what) {
  if (!r.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, r.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}
void Must(const icestream::Status& st, const char* what) {
  if (!st.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, st.ToString().c_str());
    std::exit(1);
  }
}

// A data file with the metrics a real 5-column Parquet file carries.
ice::DataFile FakeFile(ice::Table& t, int64_t n) {
  ice::DataFile f;
  f.partition = {ice::Literal::Date(static_cast<int32_t>(19000 + n % 7))};
  f.file_path = t.NewDataFileLocation(f.partition, "f-" + std::to_string(n) + "-0000-1111-2222-333344445555.parquet");
  f.record_count = 10000 + n % 1000;
  f.file_size_in_bytes = 4 << 20;
  for (int32_t c = 1; c <= 5; ++c) {
    f.column_sizes[c] = 800000 + c;
    f.value_counts[c] = f.record_count;
    f.null_value_counts[c] = c;
    f.lower_bounds[c] = ice::ToBytes(ice::Literal::Long(n * 100));
    f.upper_bounds[c] = ice::ToBytes(ice::Literal::Long(n * 100 + 99));
  }
  f.split_offsets = {4};
  f.sort_order_id = 0;
  return f;
}

// CPU time of the whole process (the REST server runs in-process), in milliseconds.
double CpuMs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: commit_bench WORK_DIR [COMMITS_PER_SIZE] [LOADS]\n");
    return 2;
  }
  std::string root = argv[1];
  int commits = argc > 2 ? std::stoi(argv[2]) : 200;
  int loads = argc > 3 ? std::stoi(argv[3]) : 500;
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  icestream::objectstore::LocalObjectStore store(root + "/buckets");
  ice::FileIO io(&store, "wh");
  auto db = Must(icestream::Database::Open(root + "/meta.db"), "db");
  auto catalog = Must(ice::SqliteCatalog::Open(db.get(), &io, icestream::SystemClock::Default()), "catalog");
  Must(catalog->CreateNamespace({"bench"}, {}), "namespace");

  // The REST catalog over loopback, in front of the same SQLite catalog.
  ice::rest::Warehouses w;
  w.prefix_for = [](const std::string&) -> icestream::Result<std::string> { return std::string("wh"); };
  w.catalog = [&](const std::string&) -> icestream::Result<ice::Catalog*> { return static_cast<ice::Catalog*>(catalog.get()); };
  ice::rest::RestCatalogServer rest_server({}, w);
  icestream::http::ServerOptions ho;
  ho.port = 0;
  auto http = Must(icestream::http::Server::Start(ho, [&](std::shared_ptr<icestream::http::Request> req,
                                                          icestream::http::Responder respond) {
                     respond(rest_server.Handle(*req));
                   }),
                   "http server");
  std::string uri = "http://127.0.0.1:" + std::to_string(http->port()) + "/iceberg";
  ice::rest::RestCatalogOptions ro;
  ro.uri = uri;
  auto rest = Must(ice::rest::RestCatalog::Open(ro), "rest catalog");

  std::printf("append commits (1 new data file each), %d per table size and catalog, history expired to the last\n"
              "10 snapshots before measuring; every commit fsynced (manifest, manifest list, metadata, SQLite).\n"
              "cpu ms = process CPU time per commit (writer + in-process REST server), the part fsync does not hide\n",
              commits);
  std::printf("%-12s %-8s %12s %10s %10s %10s %10s %8s %10s %12s\n", "table files", "catalog", "commits/s", "p50 ms",
              "p99 ms", "max ms", "cpu ms", "merges", "manifests", "list KB");
  icestream::http::HttpClient client;
  for (int64_t size : {10, 1000, 100000}) {
    ice::CreateTableRequest req;
    req.name = "t" + std::to_string(size);
    req.schema.fields = {{1, "a", true, ice::Primitive(ice::TypeId::kLong), ""},
                         {2, "b", false, ice::Primitive(ice::TypeId::kLong), ""},
                         {3, "c", false, ice::Primitive(ice::TypeId::kLong), ""},
                         {4, "d", false, ice::Primitive(ice::TypeId::kLong), ""},
                         {5, "ts", false, ice::Primitive(ice::TypeId::kTimestampTz), ""}};
    ice::PartitionSpec spec;
    spec.fields = {{5, 0, "ts_day", ice::Transform::Day()}};
    req.spec = spec;
    Must(catalog->CreateTable({"bench"}, req), "create");
    ice::TableIdentifier id{{"bench"}, req.name};
    auto table = Must(ice::Table::Load(catalog.get(), &io, id, icestream::SystemClock::Default()), "load");
    // Fill the table in batches of up to 1,000 files per commit.
    int64_t next = 0;
    while (next < size) {
      std::vector<ice::DataFile> batch;
      for (int i = 0; i < 1000 && next < size; ++i) batch.push_back(FakeFile(*table, next++));
      Must(table->AppendFiles(batch), "fill");
    }
    // Warm up past the first manifest merge (every 100 commits), so that the figures
    // are the steady state: one merge of the fill manifests is a one-time cost.
    for (int i = 0; i < 120; ++i) Must(table->AppendFiles({FakeFile(*table, next++)}), "warm up");
    for (int via_rest = 0; via_rest < 2; ++via_rest) {
      // A streaming writer keeps its history short with snapshot expiry (the metadata
      // file every commit rewrites holds every snapshot); start with the last 10 kept.
      ice::ExpireOptions eo;
      eo.older_than_ms = icestream::SystemClock::Default()->NowMillis() + 1;
      eo.retain_last = 10;
      eo.delete_files = false;
      Must(table->ExpireSnapshots(eo), "expire");
      ice::Catalog* cat = via_rest ? static_cast<ice::Catalog*>(rest.get()) : static_cast<ice::Catalog*>(catalog.get());
      auto t = Must(ice::Table::Load(cat, &io, id, icestream::SystemClock::Default()), "load");
      std::vector<double> ms;
      int merges = 0;
      double cpu0 = CpuMs();
      auto start = Clock::now();
      for (int i = 0; i < commits; ++i) {
        auto t0 = Clock::now();
        auto r = Must(t->AppendFiles({FakeFile(*t, next++)}), "append");
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        merges += r.manifests_replaced > 0;
      }
      double secs = std::chrono::duration<double>(Clock::now() - start).count();
      double cpu_per_commit = (CpuMs() - cpu0) / commits;
      const ice::Snapshot* s = t->metadata().CurrentSnapshot();
      auto manifests = Must(ice::SnapshotManifests(io, *s), "manifests");
      auto list_bytes = Must(io.Read(s->manifest_list), "list");
      std::printf("%-12lld %-8s %12.1f %10.2f %10.2f %10.2f %10.2f %8d %10zu %12.1f\n", static_cast<long long>(size),
                  via_rest ? "REST" : "SQLite", commits / secs, Percentile(ms, 0.5), Percentile(ms, 0.99),
                  *std::max_element(ms.begin(), ms.end()), cpu_per_commit, merges, manifests.size(),
                  static_cast<double>(list_bytes.size()) / 1024.0);
    }
    // REST LoadTable latency for this table (metadata with every snapshot so far).
    std::vector<double> ms;
    icestream::http::ClientRequest lr;
    lr.url = uri + "/v1/namespaces/bench/tables/" + req.name;
    size_t bytes = 0;
    for (int i = 0; i < loads; ++i) {
      auto t0 = Clock::now();
      auto res = Must(client.Send(lr), "load table");
      if (res.status != 200) {
        std::fprintf(stderr, "LoadTable answered %d\n", res.status);
        return 1;
      }
      bytes = res.body.size();
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    auto loaded = Must(catalog->LoadTable(id), "load");
    std::printf("%-12s REST LoadTable: p50 %.2f ms, p99 %.2f ms over %d calls (%zu snapshots, %.1f KB response)\n", "",
                Percentile(ms, 0.5), Percentile(ms, 0.99), loads, loaded.metadata.snapshots.size(),
                static_cast<double>(bytes) / 1024.0);
  }
  rest.reset();
  http->Stop();
  std::filesystem::remove_all(root);
  return 0;
}
