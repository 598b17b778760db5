// Table scans over a table built here with the project's writers: projection of an
// older file onto an evolved schema, position and equality deletes with their sequence
// number rules, filters, limits and time travel.
#include "iceberg/parquet/table_scan.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"
#include "format/parquet/file_reader.h"
#include "format/parquet/file_writer.h"
#include "format/parquet/output_stream.h"
#include "iceberg/manifest_avro.h"
#include "objectstore/local_store.h"
#include "schema/json_schema.h"
#include "schema/record_converter.h"

namespace icestream::iceberg {
namespace {

namespace pq = format::parquet;
using nlohmann::json;

Schema V0() {
  Schema s;
  s.schema_id = 0;
  s.fields = {{1, "id", true, Primitive(TypeId::kLong), ""},
              {2, "name", false, Primitive(TypeId::kString), ""}};
  return s;
}
Schema V1() {
  Schema s = V0();
  s.schema_id = 1;
  s.fields.push_back({3, "score", false, Primitive(TypeId::kDouble), ""});
  return s;
}
Schema PositionDeleteSchema() {
  Schema s;
  s.fields = {{2147483546, "file_path", true, Primitive(TypeId::kString), ""},
              {2147483545, "pos", true, Primitive(TypeId::kLong), ""}};
  return s;
}

class TableScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_unique<objectstore::LocalObjectStore>(root_.Path());
    io_ = std::make_unique<FileIO>(store_.get(), "wh");
  }

  // Writes `rows` (JSON objects) as a Parquet file of `schema` at table key `name`.
  DataFile Write(const Schema& schema, const std::string& name, const std::vector<json>& rows,
                 FileContent content = FileContent::kData, pq::WriterOptions options = {}) {
    std::string bytes;
    pq::StringOutputStream out(&bytes);
    auto writer = pq::FileWriter::Make(schema, &out, options);
    EXPECT_OK(writer);
    schema::ConvertibleSchema cs{schema, {}};
    auto converter = schema::RecordConverter::Make(cs, writer->get());
    EXPECT_OK(converter);
    for (const auto& r : rows) {
      schema::RecordError err;
      auto ok = (*converter)->Convert(r.dump(), &err);
      EXPECT_OK(ok) << err.message;
      if (ok.ok()) {
        EXPECT_TRUE(*ok) << err.message;
      }
    }
    auto m = (*writer)->Close();
    EXPECT_OK(m);
    DataFile f;
    f.content = content;
    f.file_path = io_->Location("t/data/" + name);
    f.record_count = static_cast<int64_t>(rows.size());
    f.file_size_in_bytes = static_cast<int64_t>(bytes.size());
    EXPECT_OK(io_->Write(f.file_path, bytes));
    return f;
  }

  // One manifest of `files` (all ADDED by `snapshot`), with a fixed sequence number.
  ManifestFile Manifest(const Schema& schema, ManifestContent content, int64_t snapshot,
                        int64_t sequence, const std::vector<DataFile>& files,
                        const std::string& name) {
    auto w = ManifestWriter::Make(schema, PartitionSpec{}, content, snapshot);
    EXPECT_OK(w);
    for (const auto& f : files) EXPECT_OK((*w)->AddAdded(f));
    ManifestFile mf;
    auto bytes = (*w)->Finish(&mf);
    EXPECT_OK(bytes);
    mf.manifest_path = io_->Location("t/metadata/" + name);
    mf.manifest_length = static_cast<int64_t>(bytes->size());
    mf.sequence_number = sequence;
    mf.min_sequence_number = sequence;
    EXPECT_OK(io_->Write(mf.manifest_path, *bytes));
    return mf;
  }

  Snapshot Snap(int64_t id, int64_t seq, int32_t schema_id,
                const std::vector<ManifestFile>& manifests) {
    auto list = WriteManifestList(id, std::nullopt, seq, manifests);
    EXPECT_OK(list);
    Snapshot s;
    s.snapshot_id = id;
    s.sequence_number = seq;
    s.schema_id = schema_id;
    s.manifest_list = io_->Location("t/metadata/snap-" + std::to_string(id) + ".avro");
    s.summary = {{"operation", "append"}};
    EXPECT_OK(io_->Write(s.manifest_list, *list));
    return s;
  }

  // The table of the file comment: snapshot 1 holds A (ids 1-5, schema v0); snapshot 3
  // adds B (ids 6-8, schema v1), a position delete of A pos 0 and B pos 1, an equality
  // delete of id 3 (sequence 3) and one of id 2 written at A's own sequence number 1,
  // which must not apply to A.
  TableMetadata Build() {
    std::vector<json> a;
    for (int i = 1; i <= 5; ++i) a.push_back({{"id", i}, {"name", "n" + std::to_string(i)}});
    DataFile fa = Write(V0(), "a.parquet", a);
    DataFile fb = Write(V1(), "b.parquet",
                        {{{"id", 6}, {"name", "n6"}, {"score", 0.5}},
                         {{"id", 7}, {"name", "n7"}, {"score", 1.5}},
                         {{"id", 8}, {"name", nullptr}, {"score", 2.5}}});
    DataFile pos = Write(
        PositionDeleteSchema(), "pos-del.parquet",
        {{{"file_path", fa.file_path}, {"pos", 0}}, {{"file_path", fb.file_path}, {"pos", 1}}},
        FileContent::kPositionDeletes);
    Schema ids;
    ids.fields = {V0().fields[0]};
    DataFile eq3 = Write(ids, "eq3.parquet", {{{"id", 3}}}, FileContent::kEqualityDeletes);
    eq3.equality_ids = {1};
    DataFile eq2 = Write(ids, "eq2.parquet", {{{"id", 2}}}, FileContent::kEqualityDeletes);
    eq2.equality_ids = {1};
    ManifestFile m1 = Manifest(V0(), ManifestContent::kData, 1, 1, {fa}, "m1.avro");
    ManifestFile m2 = Manifest(V1(), ManifestContent::kData, 3, 2, {fb}, "m2.avro");
    ManifestFile d3 = Manifest(V1(), ManifestContent::kDeletes, 3, 3, {pos, eq3}, "d3.avro");
    ManifestFile d1 = Manifest(V1(), ManifestContent::kDeletes, 3, 1, {eq2}, "d1.avro");
    TableMetadata md;
    md.location = io_->Location("t");
    md.schemas = {V0(), V1()};
    md.current_schema_id = 1;
    md.partition_specs = {PartitionSpec{}};
    md.snapshots = {Snap(1, 1, 0, {m1}), Snap(3, 3, 1, {m1, m2, d3, d1})};
    md.current_snapshot_id = 3;
    md.last_sequence_number = 3;
    return md;
  }

  std::vector<json> Rows(const ScanPlan& plan, const ScanFilter& filter = {}) {
    std::vector<json> out;
    Status st = ScanRows(*io_, plan, filter, [&](std::string_view row) {
      out.push_back(json::parse(row));
      return true;
    });
    EXPECT_OK(st);
    return out;
  }

  testing::TempDir root_;  // first: removed after everything that writes into it
  std::unique_ptr<objectstore::LocalObjectStore> store_;
  std::unique_ptr<FileIO> io_;
};

TEST_F(TableScanTest, AppliesDeletesAndProjectsOntoTheSnapshotSchema) {
  TableMetadata md = Build();
  ASSERT_OK_AND_ASSIGN(auto plan, PlanScan(*io_, md));
  EXPECT_EQ(plan.data_files.size(), 2u);
  EXPECT_EQ(plan.delete_files.size(), 3u);
  std::vector<json> rows = Rows(plan);
  std::vector<json> want = {
      {{"id", 2}, {"name", "n2"}, {"score", nullptr}},  // the id=2 delete is not newer than A
      {{"id", 4}, {"name", "n4"}, {"score", nullptr}},
      {{"id", 5}, {"name", "n5"}, {"score", nullptr}},
      {{"id", 6}, {"name", "n6"}, {"score", 0.5}},
      {{"id", 8}, {"name", nullptr}, {"score", 2.5}},
  };
  EXPECT_EQ(json(rows), json(want));
  ASSERT_OK_AND_ASSIGN(auto n, CountRows(*io_, plan, {}));
  EXPECT_EQ(n, 5);
}

TEST_F(TableScanTest, FiltersAndLimits) {
  TableMetadata md = Build();
  ASSERT_OK_AND_ASSIGN(auto plan, PlanScan(*io_, md));
  ScanFilter f;
  f.equals = {{"name", "n4"}};
  EXPECT_EQ(json(Rows(plan, f)), json({{{"id", 4}, {"name", "n4"}, {"score", nullptr}}}));
  f.equals = {{"score", "null"}, {"id", "5"}};
  EXPECT_EQ(Rows(plan, f).size(), 1u);
  f.equals = {};
  f.limit = 2;
  EXPECT_EQ(Rows(plan, f).size(), 2u);
  f.equals = {{"nope", "1"}};
  Status st = ScanRows(*io_, plan, f, [](std::string_view) { return true; });
  EXPECT_STATUS(kInvalidArgument, st);
  EXPECT_NE(st.message().find("id, name, score"), std::string::npos) << st.message();
  EXPECT_NOT_OK(ParseEqualsFilter("novalue"));
  ASSERT_OK_AND_ASSIGN(auto p, ParseEqualsFilter("a=b=c"));
  EXPECT_EQ(p.second, "b=c");
}

// A limit reached inside a file of several row groups ends the scan there (the rows of
// the file's later row groups are not emitted).
TEST_F(TableScanTest, ALimitHoldsAcrossTheRowGroupsOfAFile) {
  std::vector<json> rows;
  for (int i = 1; i <= 12; ++i) rows.push_back({{"id", i}, {"name", "n" + std::to_string(i)}});
  pq::WriterOptions small;
  small.row_group_size = 1;  // a row group per row
  DataFile f = Write(V0(), "many.parquet", rows, FileContent::kData, small);
  ASSERT_OK_AND_ASSIGN(std::string bytes, io_->Read(f.file_path));
  ASSERT_OK_AND_ASSIGN(auto reader, pq::ParquetFileReader::Open(bytes));
  ASSERT_GT(reader->num_row_groups(), 3);
  TableMetadata md;
  md.location = io_->Location("t");
  md.schemas = {V0()};
  md.current_schema_id = 0;
  md.partition_specs = {PartitionSpec{}};
  md.snapshots = {Snap(1, 1, 0, {Manifest(V0(), ManifestContent::kData, 1, 1, {f}, "m.avro")})};
  md.current_snapshot_id = 1;
  md.last_sequence_number = 1;
  ASSERT_OK_AND_ASSIGN(auto plan, PlanScan(*io_, md));
  for (int64_t limit : {1, 2, 5, 12, 20}) {
    ScanFilter filter;
    filter.limit = limit;
    EXPECT_EQ(static_cast<int64_t>(Rows(plan, filter).size()), std::min<int64_t>(limit, 12))
        << "limit " << limit;
  }
}

TEST_F(TableScanTest, TimeTravelReadsTheSnapshotWithItsSchema) {
  TableMetadata md = Build();
  ASSERT_OK_AND_ASSIGN(auto plan, PlanScan(*io_, md, 1));
  EXPECT_EQ(plan.schema.schema_id, 0);
  std::vector<json> rows = Rows(plan);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0], json({{"id", 1}, {"name", "n1"}}));
  auto count = CountRows(*io_, plan, {});  // no delete files: from the manifests
  ASSERT_OK(count);
  EXPECT_EQ(*count, 5);
  EXPECT_STATUS(kNotFound, PlanScan(*io_, md, 2));
}

TEST_F(TableScanTest, ATableWithoutSnapshotsHasNoRows) {
  TableMetadata md;
  md.schemas = {V0()};
  ASSERT_OK_AND_ASSIGN(auto plan, PlanScan(*io_, md));
  EXPECT_FALSE(plan.snapshot.has_value());
  EXPECT_TRUE(Rows(plan).empty());
}

}  // namespace
}  // namespace icestream::iceberg
