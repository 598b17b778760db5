// Manifests and manifest lists: write, read back, inheritance of snapshot ids and
// sequence numbers, partition summaries, header metadata and schema attributes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/testing/status_assertions.h"
#include "format/avro/container.h"
#include "iceberg/manifest_avro.h"

namespace icestream::iceberg {
namespace {

Schema TestSchema() {
  Schema s;
  s.schema_id = 3;
  s.fields = {{1, "id", true, Primitive(TypeId::kLong), ""},
              {2, "ts", false, Primitive(TypeId::kTimestampTz), ""},
              {3, "kind", false, Primitive(TypeId::kString), ""},
              {4, "price", false, Decimal(9, 2), ""}};
  return s;
}

PartitionSpec TestSpec() {
  PartitionSpec p;
  p.spec_id = 2;
  p.fields = {{2, 1000, "ts_day", Transform::Day()},
              {3, 1001, "kind", Transform::Identity()},
              {4, 1002, "price", Transform::Identity()}};
  return p;
}

DataFile File(const std::string& path, int32_t day, std::optional<std::string> kind, int64_t rows) {
  DataFile f;
  f.file_path = path;
  f.partition = {Literal::Date(day), kind ? std::optional<Literal>(Literal::String(*kind)) : std::nullopt,
                 Literal::DecimalValue(9, 2, -1234)};
  f.record_count = rows;
  f.file_size_in_bytes = rows * 10;
  f.column_sizes = {{1, 100}, {2, 200}};
  f.value_counts = {{1, rows}};
  f.null_value_counts = {{1, 0}, {3, 2}};
  f.lower_bounds = {{1, ToBytes(Literal::Long(-5))}};
  f.upper_bounds = {{1, ToBytes(Literal::Long(99))}};
  f.split_offsets = {4, 1000};
  f.sort_order_id = 0;
  f.spec_id = 2;
  return f;
}

TEST(ManifestTest, WritesAndReadsEveryField) {
  ASSERT_OK_AND_ASSIGN(auto w,
                       ManifestWriter::Make(TestSchema(), TestSpec(), ManifestContent::kData, 77));
  ASSERT_OK(w->AddAdded(File("s3://b/t/data/a.parquet", 19000, "x", 10)));
  ManifestEntry existing;
  existing.status = EntryStatus::kExisting;
  existing.snapshot_id = 55;
  existing.sequence_number = 4;
  existing.file_sequence_number = 5;
  existing.data_file = File("s3://b/t/data/b.parquet", 18999, std::nullopt, 7);
  ASSERT_OK(w->Add(existing));
  ManifestEntry deleted = existing;
  deleted.status = EntryStatus::kDeleted;
  deleted.snapshot_id = 77;
  deleted.sequence_number = 2;
  deleted.data_file = File("s3://b/t/data/c.parquet", 19005, "a", 3);
  ASSERT_OK(w->Add(deleted));
  ManifestFile mf;
  ASSERT_OK_AND_ASSIGN(auto bytes, w->Finish(&mf));
  mf.manifest_path = "s3://b/t/metadata/m0.avro";

  EXPECT_EQ(mf.manifest_length, static_cast<int64_t>(bytes.size()));
  EXPECT_EQ(mf.partition_spec_id, 2);
  EXPECT_EQ(mf.added_snapshot_id, 77);
  EXPECT_EQ(mf.added_files_count, 1);
  EXPECT_EQ(mf.existing_files_count, 1);
  EXPECT_EQ(mf.deleted_files_count, 1);
  EXPECT_EQ(mf.added_rows_count, 10);
  EXPECT_EQ(mf.existing_rows_count, 7);
  EXPECT_EQ(mf.deleted_rows_count, 3);
  EXPECT_EQ(mf.sequence_number, kUnassignedSequenceNumber);
  EXPECT_EQ(mf.min_sequence_number, 4);  // the live EXISTING entry; deleted ones do not count
  ASSERT_EQ(mf.partitions.size(), 3u);
  EXPECT_FALSE(mf.partitions[0].contains_null);
  EXPECT_EQ(mf.partitions[0].lower_bound, ToBytes(Literal::Date(18999)));
  EXPECT_EQ(mf.partitions[0].upper_bound, ToBytes(Literal::Date(19005)));
  EXPECT_TRUE(mf.partitions[1].contains_null);
  EXPECT_EQ(mf.partitions[1].lower_bound, "a");
  EXPECT_EQ(mf.partitions[1].upper_bound, "x");

  // Through a manifest list: the unassigned sequence number becomes the snapshot's.
  ASSERT_OK_AND_ASSIGN(auto list, WriteManifestList(77, 55, 9, {mf}));
  ASSERT_OK_AND_ASSIGN(auto files, ReadManifestList(list));
  ASSERT_EQ(files.size(), 1u);
  ManifestFile expected = mf;
  expected.sequence_number = 9;
  expected.min_sequence_number = 4;
  expected.partitions[0].contains_nan = false;
  expected.partitions[1].contains_nan = false;
  expected.partitions[2].contains_nan = false;
  EXPECT_EQ(files[0], expected);

  ASSERT_OK_AND_ASSIGN(auto contents, ReadManifest(bytes, &files[0]));
  EXPECT_EQ(contents.format_version, 2);
  EXPECT_EQ(contents.spec_id, 2);
  ASSERT_EQ(contents.entries.size(), 3u);
  const ManifestEntry& a = contents.entries[0];
  EXPECT_EQ(a.status, EntryStatus::kAdded);
  EXPECT_EQ(a.snapshot_id, 77);
  EXPECT_EQ(a.sequence_number, 9);  // inherited
  EXPECT_EQ(a.file_sequence_number, 9);
  EXPECT_EQ(a.data_file, File("s3://b/t/data/a.parquet", 19000, "x", 10));
  EXPECT_EQ(contents.entries[1], existing);
  EXPECT_EQ(contents.entries[2], deleted);
}

TEST(ManifestTest, HeaderAndSchemaKeepIcebergAttributes) {
  ASSERT_OK_AND_ASSIGN(auto w,
                       ManifestWriter::Make(TestSchema(), TestSpec(), ManifestContent::kData, 1));
  ManifestFile mf;
  ASSERT_OK_AND_ASSIGN(auto bytes, w->Finish(&mf));
  ASSERT_OK_AND_ASSIGN(auto r, format::avro::ContainerReader::Open(bytes));
  EXPECT_EQ(r->Meta("format-version"), "2");
  EXPECT_EQ(r->Meta("content"), "data");
  EXPECT_EQ(r->Meta("partition-spec-id"), "2");
  EXPECT_EQ(r->Meta("schema-id"), "3");
  EXPECT_EQ(nlohmann::json::parse(r->Meta("partition-spec"))[0]["field-id"], 1000);
  auto schema = nlohmann::json::parse(r->schema_json());
  EXPECT_EQ(schema["name"], "manifest_entry");
  const auto& df = schema["fields"][4];
  EXPECT_EQ(df["field-id"], 2);
  const auto& partition = df["type"]["fields"][3];
  EXPECT_EQ(partition["field-id"], 102);
  EXPECT_EQ(partition["type"]["fields"][0]["field-id"], 1000);
  EXPECT_EQ(partition["type"]["fields"][0]["type"][1]["logicalType"], "date");
  EXPECT_EQ(partition["type"]["fields"][2]["type"][1]["logicalType"], "decimal");
  EXPECT_EQ(partition["type"]["fields"][2]["type"][1]["size"], 4);
  const auto& lower = df["type"]["fields"][10];
  EXPECT_EQ(lower["name"], "lower_bounds");
  EXPECT_EQ(lower["type"][1]["logicalType"], "map");
  EXPECT_EQ(lower["type"][1]["items"]["fields"][0]["field-id"], 126);
  EXPECT_EQ(df["type"]["fields"][13]["type"][1]["element-id"], 133);
}

TEST(ManifestTest, RefusesMismatchedEntries) {
  ASSERT_OK_AND_ASSIGN(auto w,
                       ManifestWriter::Make(TestSchema(), TestSpec(), ManifestContent::kData, 1));
  DataFile f = File("p", 1, "k", 1);
  f.partition.pop_back();
  EXPECT_STATUS(kInvalidArgument, w->AddAdded(f));
  f = File("p", 1, "k", 1);
  f.partition[0] = Literal::Long(3);  // long where the day transform gives a date
  EXPECT_STATUS(kInvalidArgument, w->AddAdded(f));
  // Some writers store day partitions as plain ints: accepted when rewriting them.
  f.partition[0] = Literal::Int(3);
  EXPECT_OK(w->AddAdded(f));
  f = File("p", 1, "k", 1);
  f.partition[1] = Literal::Int(3);  // int where identity of a string needs a string
  EXPECT_STATUS(kInvalidArgument, w->AddAdded(f));
  f = File("p", 1, "k", 1);
  f.content = FileContent::kPositionDeletes;
  EXPECT_STATUS(kInvalidArgument, w->AddAdded(f));
  ManifestEntry e;
  e.status = EntryStatus::kExisting;
  e.data_file = File("p", 1, "k", 1);
  EXPECT_STATUS(kInvalidArgument, w->Add(e));  // no sequence numbers
  EXPECT_EQ(w->entry_count(), 1);
}

TEST(ManifestTest, AvroSchemaOfNestedTypes) {
  std::vector<NestedField> fields = {
      {1, "a-b", false, Struct({{2, "x", true, Primitive(TypeId::kUuid), ""},
                                {3, "y", true, Primitive(TypeId::kUuid), ""}}), ""},
      {4, "l", true, List(5, false, Primitive(TypeId::kTimestamp)), ""},
      {6, "m", true, Map(7, Primitive(TypeId::kString), 8, true, Primitive(TypeId::kInt)), ""},
      {9, "n", true, Map(10, Primitive(TypeId::kInt), 11, false, Primitive(TypeId::kDate)), ""}};
  auto j = nlohmann::json::parse(AvroSchemaForStruct(fields, "root"));
  EXPECT_EQ(j["fields"][0]["name"], "a_x2Db");
  EXPECT_EQ(j["fields"][0]["iceberg-field-name"], "a-b");
  EXPECT_EQ(j["fields"][0]["type"][1]["name"], "r1");
  EXPECT_EQ(j["fields"][0]["type"][1]["fields"][1]["type"], "uuid_fixed");  // second use by name
  EXPECT_EQ(j["fields"][1]["type"]["element-id"], 5);
  EXPECT_EQ(j["fields"][1]["type"]["items"][1]["adjust-to-utc"], false);
  EXPECT_EQ(j["fields"][2]["type"]["type"], "map");
  EXPECT_EQ(j["fields"][2]["type"]["key-id"], 7);
  EXPECT_EQ(j["fields"][3]["type"]["logicalType"], "map");
  EXPECT_EQ(j["fields"][3]["type"]["items"]["name"], "k10_v11");
  EXPECT_OK(format::avro::Schema::Parse(j.dump()));
}

}  // namespace
}  // namespace icestream::iceberg
