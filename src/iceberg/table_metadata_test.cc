// Table metadata JSON: hand-written fixtures in the shapes of the spec's examples
// (Appendix C), v1 and v2, read, written and read again; invalid documents refused.
#include <gtest/gtest.h>
#include <zlib.h>

#include <nlohmann/json.hpp>

#include "common/testing/status_assertions.h"
#include "iceberg/table_metadata_json.h"

namespace icestream::iceberg {
namespace {

// v2, as the spec's Appendix C examples spell the fields.
const char* kV2 = R"json({
  "format-version": 2,
  "table-uuid": "fb072c92-a02b-11e9-ae9c-1bb7bc9eca94",
  "location": "s3://b/wh/data.db/table",
  "last-sequence-number": 34,
  "last-updated-ms": 1515100955770,
  "last-column-id": 5,
  "current-schema-id": 1,
  "schemas": [
    {"type": "struct", "schema-id": 0, "fields": [
      {"id": 1, "name": "id", "required": true, "type": "long"}]},
    {"type": "struct", "schema-id": 1, "identifier-field-ids": [1], "fields": [
      {"id": 1, "name": "id", "required": true, "type": "long"},
      {"id": 2, "name": "ts", "required": false, "type": "timestamptz", "doc": "event time"},
      {"id": 3, "name": "tags", "required": false, "type": {
        "type": "list", "element-id": 4, "element-required": true, "element": "string"}},
      {"id": 5, "name": "price", "required": false, "type": "decimal(9, 2)"}]}],
  "default-spec-id": 1,
  "partition-specs": [
    {"spec-id": 0, "fields": []},
    {"spec-id": 1, "fields": [
      {"source-id": 2, "field-id": 1000, "name": "ts_day", "transform": "day"},
      {"source-id": 1, "field-id": 1001, "name": "id_bucket", "transform": "bucket[16]"}]}],
  "last-partition-id": 1001,
  "default-sort-order-id": 1,
  "sort-orders": [
    {"order-id": 0, "fields": []},
    {"order-id": 1, "fields": [
      {"transform": "identity", "source-id": 2, "direction": "asc", "null-order": "nulls-first"},
      {"transform": "bucket[4]", "source-id": 1, "direction": "desc", "null-order": "nulls-last"}]}],
  "properties": {"write.format.default": "parquet", "commit.retry.num-retries": "4"},
  "current-snapshot-id": 3055729675574597004,
  "refs": {
    "main": {"snapshot-id": 3055729675574597004, "type": "branch", "max-snapshot-age-ms": 86400000},
    "test": {"snapshot-id": 3051729675574597004, "type": "tag", "max-ref-age-ms": 10000000}},
  "snapshots": [
    {"snapshot-id": 3051729675574597004, "timestamp-ms": 1515100955770, "sequence-number": 0,
     "summary": {"operation": "append"}, "manifest-list": "s3://b/wh/.../s1.avro"},
    {"snapshot-id": 3055729675574597004, "parent-snapshot-id": 3051729675574597004,
     "timestamp-ms": 1555100955770, "sequence-number": 1,
     "summary": {"operation": "append", "added-data-files": "4", "total-records": "120"},
     "manifest-list": "s3://b/wh/.../s2.avro", "schema-id": 1}],
  "statistics": [
    {"snapshot-id": 3055729675574597004, "statistics-path": "s3://a/b/stats.puffin",
     "file-size-in-bytes": 413, "file-footer-size-in-bytes": 42,
     "blob-metadata": [{"type": "ndv", "snapshot-id": 3055729675574597004,
                        "sequence-number": 1, "fields": [1]}]}],
  "snapshot-log": [
    {"snapshot-id": 3051729675574597004, "timestamp-ms": 1515100955770},
    {"snapshot-id": 3055729675574597004, "timestamp-ms": 1555100955770}],
  "metadata-log": [
    {"metadata-file": "s3://bucket/.../v1.json", "timestamp-ms": 1515100}]
})json";

// v1: the deprecated single "schema" and "partition-spec", inline snapshot
// "manifests", no table-uuid, no sequence numbers, no sort orders.
const char* kV1 = R"json({
  "format-version": 1,
  "location": "s3://bucket/test/location",
  "last-updated-ms": 1602638573874,
  "last-column-id": 3,
  "schema": {"type": "struct", "fields": [
    {"id": 1, "name": "x", "required": true, "type": "long"},
    {"id": 2, "name": "y", "required": true, "type": "long", "doc": "comment"},
    {"id": 3, "name": "z", "required": true, "type": "long"}]},
  "partition-spec": [{"name": "x", "transform": "identity", "source-id": 1}],
  "properties": {},
  "current-snapshot-id": 2,
  "snapshots": [
    {"snapshot-id": 1, "timestamp-ms": 1602638573822, "manifests": ["s3://b/m1.avro"]},
    {"snapshot-id": 2, "parent-snapshot-id": 1, "timestamp-ms": 1602638573874,
     "summary": {"operation": "overwrite"}, "manifest-list": "s3://b/snap-2.avro"}]
})json";

TEST(TableMetadataJsonTest, ReadsV2FromTheSpecExamples) {
  ASSERT_OK_AND_ASSIGN(auto m, TableMetadataFromJson(kV2));
  EXPECT_EQ(m.format_version, 2);
  EXPECT_EQ(m.last_sequence_number, 34);
  EXPECT_EQ(m.CurrentSchema()->fields.size(), 4u);
  EXPECT_EQ(m.CurrentSchema()->identifier_field_ids, std::vector<int32_t>{1});
  EXPECT_EQ(m.DefaultSpec()->fields[1].transform, Transform::Bucket(16));
  EXPECT_EQ(m.SortOrderById(1)->fields[1].direction, SortDirection::kDesc);
  EXPECT_EQ(m.CurrentSnapshot()->parent_snapshot_id, 3051729675574597004);
  EXPECT_EQ(m.CurrentSnapshot()->operation(), "append");
  EXPECT_EQ(m.CurrentSnapshot()->schema_id, 1);
  EXPECT_EQ(m.refs.at("test").type, RefType::kTag);
  EXPECT_EQ(m.refs.at("main").max_snapshot_age_ms, 86400000);
  EXPECT_EQ(m.SnapshotForRef("test")->snapshot_id, 3051729675574597004);
  EXPECT_EQ(m.statistics.size(), 1u);
  EXPECT_EQ(m.metadata_log[0].metadata_file, "s3://bucket/.../v1.json");
  EXPECT_EQ(PropertyAsInt(m, "commit.retry.num-retries", 0), 4);
}

TEST(TableMetadataJsonTest, ReadsV1WithDeprecatedFields) {
  ASSERT_OK_AND_ASSIGN(auto m, TableMetadataFromJson(kV1));
  EXPECT_EQ(m.format_version, 1);
  EXPECT_EQ(m.schemas.size(), 1u);
  EXPECT_EQ(m.CurrentSchema()->fields[1].doc, "comment");
  ASSERT_EQ(m.DefaultSpec()->fields.size(), 1u);
  EXPECT_EQ(m.DefaultSpec()->fields[0].field_id, 1000);  // v1: assigned from 1000
  EXPECT_EQ(m.last_partition_id, 1000);
  EXPECT_EQ(m.sort_orders.size(), 1u);
  EXPECT_TRUE(m.sort_orders[0].is_unsorted());
  EXPECT_EQ(m.snapshots[0].manifests, std::vector<std::string>{"s3://b/m1.avro"});
  EXPECT_EQ(m.snapshots[0].operation(), "append");
  EXPECT_EQ(m.snapshots[1].sequence_number, 0);
  EXPECT_EQ(m.refs.at("main").snapshot_id, 2);  // implied by current-snapshot-id
}

TEST(TableMetadataJsonTest, RoundTripsV1AndV2) {
  for (const char* text : {kV1, kV2}) {
    ASSERT_OK_AND_ASSIGN(auto a, TableMetadataFromJson(text));
    std::string written = TableMetadataToJson(a);
    auto b = TableMetadataFromJson(written);
    ASSERT_OK(b) << "\n" << written;
    EXPECT_EQ(a, *b);
    EXPECT_EQ(TableMetadataToJson(*b), written);
  }
  // Written v1 keeps the fields a v1 reader requires.
  auto v1 = nlohmann::json::parse(TableMetadataToJson(*TableMetadataFromJson(kV1)));
  EXPECT_TRUE(v1.contains("schema"));
  EXPECT_TRUE(v1.contains("partition-spec"));
  EXPECT_FALSE(v1.contains("last-sequence-number"));
  auto v2 = nlohmann::json::parse(TableMetadataToJson(*TableMetadataFromJson(kV2)));
  EXPECT_EQ(v2["current-snapshot-id"].get<int64_t>(), 3055729675574597004);
  EXPECT_EQ(v2["statistics"][0]["file-footer-size-in-bytes"], 42);
  EXPECT_FALSE(v2.contains("schema"));
}

TEST(TableMetadataJsonTest, ReadsGzipAndMinusOneSnapshot) {
  auto j = nlohmann::json::parse(kV2);
  j["current-snapshot-id"] = -1;
  j["refs"] = nlohmann::json::object();
  std::string text = j.dump();
  std::string gz(compressBound(text.size()) + 64, '\0');
  z_stream zs{};
  ASSERT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(text.data());
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(gz.data());
  zs.avail_out = static_cast<uInt>(gz.size());
  ASSERT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  gz.resize(zs.total_out);
  deflateEnd(&zs);
  ASSERT_OK_AND_ASSIGN(auto m, TableMetadataFromJson(gz));
  EXPECT_FALSE(m.current_snapshot_id.has_value());
  EXPECT_EQ(m.CurrentSnapshot(), nullptr);
  EXPECT_EQ(m.refs.count("main"), 0u);
}

TEST(TableMetadataJsonTest, RefusesBrokenDocuments) {
  auto with = [](auto edit) {
    auto j = nlohmann::json::parse(kV2);
    edit(j);
    return TableMetadataFromJson(j.dump()).status();
  };
  using J = nlohmann::json;
  EXPECT_STATUS(kInvalidArgument, with([](J& j) { j["format-version"] = 3; }));
  EXPECT_STATUS(kInvalidArgument, with([](J& j) { j.erase("table-uuid"); }));
  EXPECT_STATUS(kInvalidArgument, with([](J& j) { j.erase("last-sequence-number"); }));
  EXPECT_STATUS(kInvalidArgument, with([](J& j) { j["current-schema-id"] = 7; }));
  EXPECT_STATUS(kInvalidArgument, with([](J& j) { j["default-spec-id"] = 7; }));
  EXPECT_STATUS(kInvalidArgument, with([](J& j) { j["current-snapshot-id"] = 12; }));
  EXPECT_STATUS(kInvalidArgument, with([](J& j) {
                  j["refs"]["x"] = {{"snapshot-id", 99}, {"type", "tag"}};
                }));
  EXPECT_STATUS(kInvalidArgument,
                with([](J& j) { j["refs"]["main"]["snapshot-id"] = 3051729675574597004; }));
  EXPECT_STATUS(kInvalidArgument, with([](J& j) { j["snapshots"][1] = j["snapshots"][0]; }));
  EXPECT_STATUS(kInvalidArgument, with([](J& j) { j["last-column-id"] = 2; }));
  EXPECT_STATUS(kInvalidArgument, with([](J& j) { j["last-partition-id"] = 1000; }));
  EXPECT_STATUS(kInvalidArgument, with([](J& j) { j["location"] = 5; }));
  EXPECT_STATUS(kInvalidArgument,
                with([](J& j) { j["sort-orders"][1]["fields"][0]["direction"] = "up"; }));
  EXPECT_STATUS(kInvalidArgument, with([](J& j) { j["snapshots"][0].erase("manifest-list"); }));
  EXPECT_STATUS(kInvalidArgument, with([](J& j) {
                  j["partition-specs"][1]["fields"][0]["transform"] = "bucket[0]";
                }));
  EXPECT_OK(with([](J& j) { j["unknown-member"] = {1, 2}; }));
  EXPECT_STATUS(kInvalidArgument, TableMetadataFromJson("{"));
  EXPECT_STATUS(kInvalidArgument, TableMetadataFromJson("[]"));
}

}  // namespace
}  // namespace icestream::iceberg
