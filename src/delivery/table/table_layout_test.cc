// Streaming-table layouts: the forced-required partition column, the hour spec, every
// refusal CreateChannel reports, and conforming to a table's fresh ids.
#include "delivery/table/table_layout.h"

#include <gtest/gtest.h>

#include "common/testing/status_assertions.h"
#include "iceberg/table_update.h"

namespace icestream::delivery::table {
namespace {

constexpr const char* kSchema = R"({"type":"object","required":["id"],"properties":{
  "id":{"type":"integer"},
  "ts":{"type":"string","format":"date-time"},
  "ctx":{"type":"object","properties":{"at":{"type":"string","format":"date-time"},"n":{"type":"string"}}},
  "tags":{"type":"array","items":{"type":"object","properties":{"t":{"type":"string","format":"date-time"}}}},
  "name":{"type":"string"}}})";

const iceberg::NestedField* Field(const std::vector<iceberg::NestedField>& fields,
                                  const std::string& name) {
  for (const auto& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST(TableLayout, PartitionColumnIsForcedRequiredWithAnHourSpec) {
  ASSERT_OK_AND_ASSIGN(auto l, MakeTableLayout(kSchema, {"ts", "TIME_HOUR"}));
  const auto* ts = Field(l.schema.schema.fields, "ts");
  ASSERT_NE(ts, nullptr);
  EXPECT_TRUE(ts->required);
  EXPECT_TRUE(l.schema.constraints.at(ts->id).must_be_present);
  EXPECT_FALSE(l.schema.constraints.at(ts->id).nullable);
  EXPECT_EQ(l.partition_source_id, ts->id);
  ASSERT_EQ(l.spec.fields.size(), 1u);
  EXPECT_EQ(l.spec.fields[0].name, "ts_hour");
  EXPECT_EQ(l.spec.fields[0].transform, iceberg::Transform::Hour());
  EXPECT_FALSE(Field(l.schema.schema.fields, "name")->required);
}

TEST(TableLayout, NestedSourceMakesItsParentsRequired) {
  ASSERT_OK_AND_ASSIGN(auto l, MakeTableLayout(kSchema, {"ctx.at", "TIME_HOUR"}));
  const auto* ctx = Field(l.schema.schema.fields, "ctx");
  ASSERT_NE(ctx, nullptr);
  EXPECT_TRUE(ctx->required);
  const auto* at = Field(ctx->type.fields, "at");
  EXPECT_TRUE(at->required);
  EXPECT_FALSE(Field(ctx->type.fields, "n")->required);
  EXPECT_EQ(l.spec.fields[0].name, "ctx_at_hour");
}

TEST(TableLayout, Refusals) {
  for (const char* bad : {"nope", "name", "id", "ctx", "tags.t", "ctx.nope"}) {
    auto l = MakeTableLayout(kSchema, {bad, "TIME_HOUR"});
    ASSERT_STATUS(kInvalidArgument, l) << bad;
  }
  EXPECT_NOT_OK(MakeTableLayout(kSchema, {"ts", "TIME_DAY"}));
  EXPECT_NOT_OK(
      MakeTableLayout(R"({"type":"object","properties":{"x":{"oneOf":[]}}})", {"x", "TIME_HOUR"}));
  // 17 levels of objects below the root.
  std::string deep = R"({"type":"string","format":"date-time"})";
  for (int i = 0; i < 17; ++i) deep = R"({"type":"object","properties":{"a":)" + deep + "}}";
  std::string root =
      R"({"type":"object","required":["ts"],"properties":{"ts":{"type":"string","format":"date-time"},"d":)" +
      deep + "}}";
  auto l = MakeTableLayout(root, {"ts", "TIME_HOUR"});
  ASSERT_STATUS(kInvalidArgument, l);
}

TEST(TableLayout, ConformsToATablesFreshIdsAndNoticesChanges) {
  ASSERT_OK_AND_ASSIGN(auto l, MakeTableLayout(kSchema, {"ts", "TIME_HOUR"}));
  ASSERT_OK_AND_ASSIGN(
      auto m, iceberg::NewTableMetadata(l.schema.schema, l.spec, iceberg::SortOrder{}, "memory:/t",
                                        {}, "00000000-0000-0000-0000-000000000001", 0, 2));
  ASSERT_OK_AND_ASSIGN(auto c, ConformLayout(l, *m.CurrentSchema(), *m.DefaultSpec()));
  EXPECT_EQ(c.schema.schema.fields, m.CurrentSchema()->fields);
  EXPECT_EQ(c.schema.constraints.size(), l.schema.constraints.size());
  // A column added outside the channel.
  iceberg::Schema changed = *m.CurrentSchema();
  changed.fields.push_back({999, "extra", false, iceberg::Primitive(iceberg::TypeId::kString), ""});
  EXPECT_STATUS(kInvalidArgument, ConformLayout(l, changed, *m.DefaultSpec()));
  // A different partitioning.
  iceberg::PartitionSpec day = *m.DefaultSpec();
  day.fields[0].transform = iceberg::Transform::Day();
  EXPECT_STATUS(kInvalidArgument, ConformLayout(l, *m.CurrentSchema(), day));
}

}  // namespace
}  // namespace icestream::delivery::table

namespace icestream::delivery::table {
namespace {

using iceberg::NestedField;
using iceberg::Primitive;
using iceberg::TypeId;

iceberg::Schema S(std::vector<NestedField> fields) {
  iceberg::Schema s;
  s.fields = std::move(fields);
  return s;
}

TEST(SchemaEvolution, AddsOptionalColumnsWithFreshIdsAndWidensTypes) {
  auto table =
      S({{1, "id", true, Primitive(TypeId::kInt), ""},
         {2, "ctx", false, iceberg::Struct({{3, "a", false, Primitive(TypeId::kString), ""}}), ""},
         {4, "x", false, Primitive(TypeId::kFloat), ""},
         {5, "d", false, iceberg::Decimal(9, 2), ""}});
  // The version's ids are its own: only names count.
  auto version = S({{10, "id", true, Primitive(TypeId::kLong), ""},
                    {11, "ctx", false,
                     iceberg::Struct({{12, "a", false, Primitive(TypeId::kString), ""},
                                      {13, "b", false, Primitive(TypeId::kBoolean), ""}}),
                     ""},
                    {14, "x", false, Primitive(TypeId::kDouble), ""},
                    {15, "d", false, iceberg::Decimal(18, 2), ""},
                    {16, "tags", false, iceberg::List(17, false, Primitive(TypeId::kString)), ""}});
  int32_t last = 5;
  ASSERT_OK_AND_ASSIGN(auto e, EvolveSchema(table, version, &last));
  EXPECT_EQ(last, 8);
  EXPECT_EQ(e.fields[0].id, 1);
  EXPECT_EQ(e.fields[0].type.id, TypeId::kLong);
  ASSERT_EQ(e.fields[1].type.fields.size(), 2u);
  EXPECT_EQ(e.fields[1].type.fields[1].name, "b");
  EXPECT_EQ(e.fields[1].type.fields[1].id, 6);
  EXPECT_EQ(e.fields[2].type.id, TypeId::kDouble);
  EXPECT_EQ(e.fields[3].type.precision, 18);
  ASSERT_EQ(e.fields.size(), 5u);
  EXPECT_EQ(e.fields[4].name, "tags");
  EXPECT_EQ(e.fields[4].id, 7);
  EXPECT_EQ(e.fields[4].type.fields[0].id, 8);
  // The evolved table holds both versions without another change.
  int32_t again = last;
  ASSERT_OK_AND_ASSIGN(auto same, EvolveSchema(e, version, &again));
  EXPECT_EQ(same.fields, e.fields);
  auto old = EvolveSchema(e, table, &again);  // an older version's records still fit
  ASSERT_OK(old);
  EXPECT_EQ(old->fields, e.fields);
  EXPECT_EQ(again, last);
}

TEST(SchemaEvolution, IncompatibleVersionsAreRefusedWithTheReason) {
  auto table = S({{1, "id", true, Primitive(TypeId::kLong), ""},
                  {2, "name", false, Primitive(TypeId::kString), ""}});
  int32_t last = 2;
  struct Case {
    iceberg::Schema version;
    const char* reason;
  };
  std::vector<Case> cases = {
      {S({{1, "id", true, Primitive(TypeId::kLong), ""},
          {3, "new", true, Primitive(TypeId::kString), ""}}),
       "adds column new as required"},
      {S({{2, "name", false, Primitive(TypeId::kString), ""}}), "column id is required"},
      {S({{1, "id", false, Primitive(TypeId::kLong), ""}}), "optional in the version"},
      {S({{1, "id", true, Primitive(TypeId::kString), ""}}), "changes type from long to string"},
      {S({{1, "id", true, Primitive(TypeId::kLong), ""},
          {2, "name", false, iceberg::Struct({{5, "a", false, Primitive(TypeId::kInt), ""}}), ""}}),
       "changes type"},
  };
  for (const auto& c : cases) {
    auto e = EvolveSchema(table, c.version, &last);
    ASSERT_STATUS(kInvalidArgument, e) << c.reason;
    EXPECT_NE(e.status().message().find(c.reason), std::string::npos) << e.status().message();
  }
  EXPECT_EQ(last, 2);
}

TEST(SchemaEvolution, LayoutForMovesTheVersionsConstraintsToTheTablesIds) {
  auto v1 = MakeTableLayout(R"({"type":"object","required":["ts"],"properties":{
      "ts":{"type":"string","format":"date-time"},"n":{"type":"integer","minimum":0,"maximum":10}}})",
                            {"ts", "TIME_HOUR"});
  ASSERT_OK(v1);
  auto v2 = MakeTableLayout(R"({"type":"object","required":["ts"],"properties":{
      "extra":{"type":"string"},"ts":{"type":"string","format":"date-time"},
      "n":{"type":"integer","minimum":0,"maximum":1000}}})",
                            {"ts", "TIME_HOUR"});
  ASSERT_OK(v2);
  int32_t last = iceberg::HighestFieldId(v1->schema.schema);
  auto table = EvolveSchema(v1->schema.schema, v2->schema.schema, &last);
  ASSERT_OK(table);
  ASSERT_OK_AND_ASSIGN(auto l2, LayoutFor(*v2, *table, v1->spec));
  const auto* n = Field(table->fields, "n");
  EXPECT_EQ(l2.schema.constraints.at(n->id).max_int, 1000);
  EXPECT_EQ(l2.partition_source_id, Field(table->fields, "ts")->id);
  auto l1 = LayoutFor(*v1, *table, v1->spec);  // v1's records into the evolved table
  ASSERT_OK(l1);
  EXPECT_EQ(l1->schema.constraints.at(n->id).max_int, 10);
  EXPECT_EQ(l1->schema.constraints.count(Field(table->fields, "extra")->id), 0u);
  // A table that does not hold v2 yet.
  EXPECT_NOT_OK(LayoutFor(*v2, v1->schema.schema, v1->spec));
}

}  // namespace
}  // namespace icestream::delivery::table
