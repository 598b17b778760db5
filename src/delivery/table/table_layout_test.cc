// Streaming-table layouts: the forced-required partition column, the hour spec, every
// refusal CreateChannel reports, and conforming to a table's fresh ids.
#include "delivery/table/table_layout.h"

#include <gtest/gtest.h>

#include "iceberg/table_update.h"

namespace icestream::delivery::table {
namespace {

constexpr const char* kSchema = R"({"type":"object","required":["id"],"properties":{
  "id":{"type":"integer"},
  "ts":{"type":"string","format":"date-time"},
  "ctx":{"type":"object","properties":{"at":{"type":"string","format":"date-time"},"n":{"type":"string"}}},
  "tags":{"type":"array","items":{"type":"object","properties":{"t":{"type":"string","format":"date-time"}}}},
  "name":{"type":"string"}}})";

const iceberg::NestedField* Field(const std::vector<iceberg::NestedField>& fields, const std::string& name) {
  for (const auto& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST(TableLayout, PartitionColumnIsForcedRequiredWithAnHourSpec) {
  auto l = MakeTableLayout(kSchema, {"ts", "TIME_HOUR"});
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  const auto* ts = Field(l->schema.schema.fields, "ts");
  ASSERT_NE(ts, nullptr);
  EXPECT_TRUE(ts->required);
  EXPECT_TRUE(l->schema.constraints.at(ts->id).must_be_present);
  EXPECT_FALSE(l->schema.constraints.at(ts->id).nullable);
  EXPECT_EQ(l->partition_source_id, ts->id);
  ASSERT_EQ(l->spec.fields.size(), 1u);
  EXPECT_EQ(l->spec.fields[0].name, "ts_hour");
  EXPECT_EQ(l->spec.fields[0].transform, iceberg::Transform::Hour());
  EXPECT_FALSE(Field(l->schema.schema.fields, "name")->required);
}

TEST(TableLayout, NestedSourceMakesItsParentsRequired) {
  auto l = MakeTableLayout(kSchema, {"ctx.at", "TIME_HOUR"});
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  const auto* ctx = Field(l->schema.schema.fields, "ctx");
  ASSERT_NE(ctx, nullptr);
  EXPECT_TRUE(ctx->required);
  const auto* at = Field(ctx->type.fields, "at");
  EXPECT_TRUE(at->required);
  EXPECT_FALSE(Field(ctx->type.fields, "n")->required);
  EXPECT_EQ(l->spec.fields[0].name, "ctx_at_hour");
}

TEST(TableLayout, Refusals) {
  for (const char* bad : {"nope", "name", "id", "ctx", "tags.t", "ctx.nope"}) {
    auto l = MakeTableLayout(kSchema, {bad, "TIME_HOUR"});
    ASSERT_FALSE(l.ok()) << bad;
    EXPECT_EQ(l.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(MakeTableLayout(kSchema, {"ts", "TIME_DAY"}).ok());
  EXPECT_FALSE(MakeTableLayout(R"({"type":"object","properties":{"x":{"oneOf":[]}}})", {"x", "TIME_HOUR"}).ok());
  // 17 levels of objects below the root.
  std::string deep = R"({"type":"string","format":"date-time"})";
  for (int i = 0; i < 17; ++i) deep = R"({"type":"object","properties":{"a":)" + deep + "}}";
  std::string root = R"({"type":"object","required":["ts"],"properties":{"ts":{"type":"string","format":"date-time"},"d":)" + deep + "}}";
  auto l = MakeTableLayout(root, {"ts", "TIME_HOUR"});
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), StatusCode::kInvalidArgument);
}

TEST(TableLayout, ConformsToATablesFreshIdsAndNoticesChanges) {
  auto l = MakeTableLayout(kSchema, {"ts", "TIME_HOUR"});
  ASSERT_TRUE(l.ok());
  auto m = iceberg::NewTableMetadata(l->schema.schema, l->spec, iceberg::SortOrder{}, "memory:/t", {},
                                     "00000000-0000-0000-0000-000000000001", 0, 2);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto c = ConformLayout(*l, *m->CurrentSchema(), *m->DefaultSpec());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->schema.schema.fields, m->CurrentSchema()->fields);
  EXPECT_EQ(c->schema.constraints.size(), l->schema.constraints.size());
  // A column added outside the channel.
  iceberg::Schema changed = *m->CurrentSchema();
  changed.fields.push_back({999, "extra", false, iceberg::Primitive(iceberg::TypeId::kString), ""});
  EXPECT_EQ(ConformLayout(*l, changed, *m->DefaultSpec()).status().code(), StatusCode::kInvalidArgument);
  // A different partitioning.
  iceberg::PartitionSpec day = *m->DefaultSpec();
  day.fields[0].transform = iceberg::Transform::Day();
  EXPECT_EQ(ConformLayout(*l, *m->CurrentSchema(), day).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace icestream::delivery::table
