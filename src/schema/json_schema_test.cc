// Tests of the JSON Schema -> Iceberg mapping: every row of kds-delivery-spec.md §2.5,
// draft-04 and draft-07 bounds, nullability, field ids and refusals.
#include "schema/json_schema.h"

#include <gtest/gtest.h>

#include "common/testing/status_assertions.h"
#include "iceberg/schema/schema_json.h"

namespace icestream::schema {
namespace {

using iceberg::TypeId;

// Maps {"type":"object","properties":{"f": <prop>}} and returns field f.
iceberg::NestedField One(const std::string& prop, const std::string& required = "[]") {
  std::string text = R"({"type":"object","required":)" + required + R"(,"properties":{"f":)" + prop + "}}";
  auto s = JsonSchemaToIceberg(text);
  EXPECT_OK(s) << prop << " -> ";
  if (!s.ok()) return {};
  return s->schema.fields.at(0);
}

TEST(JsonSchemaTest, EveryRowOfTheMappingTable) {
  EXPECT_EQ(One(R"({"type":"string"})").type.id, TypeId::kString);
  EXPECT_EQ(One(R"({"type":"string","format":"date-time"})").type.id, TypeId::kTimestampTz);
  EXPECT_EQ(One(R"({"type":"string","format":"date"})").type.id, TypeId::kDate);
  EXPECT_EQ(One(R"({"type":"string","format":"time"})").type.id, TypeId::kTime);
  EXPECT_EQ(One(R"({"type":"string","format":"uuid"})").type.id, TypeId::kUuid);
  EXPECT_EQ(One(R"({"type":"string","format":"byte"})").type.id, TypeId::kBinary);
  EXPECT_EQ(One(R"({"type":"string","format":"base64"})").type.id, TypeId::kBinary);
  EXPECT_EQ(One(R"({"type":"string","contentEncoding":"base64"})").type.id, TypeId::kBinary);
  EXPECT_EQ(One(R"({"type":"integer","minimum":0,"maximum":2147483647})").type.id, TypeId::kInt);
  EXPECT_EQ(One(R"({"type":"integer","exclusiveMaximum":2147483648})").type.id, TypeId::kInt);
  EXPECT_EQ(One(R"({"type":"integer","maximum":2147483648})").type.id, TypeId::kLong);
  EXPECT_EQ(One(R"({"type":"integer","minimum":-3000000000,"maximum":10})").type.id, TypeId::kLong);
  EXPECT_EQ(One(R"({"type":"integer"})").type.id, TypeId::kLong);
  EXPECT_EQ(One(R"({"type":"integer","minimum":0})").type.id, TypeId::kLong);
  EXPECT_EQ(One(R"({"type":"number","multipleOf":0.001})").type, iceberg::Decimal(38, 3));
  EXPECT_EQ(One(R"({"type":"number","multipleOf":0.25})").type, iceberg::Decimal(38, 2));
  EXPECT_EQ(One(R"({"type":"number","multipleOf":5})").type, iceberg::Decimal(38, 0));
  EXPECT_EQ(One(R"({"type":"number"})").type.id, TypeId::kDouble);
  EXPECT_EQ(One(R"({"type":"boolean"})").type.id, TypeId::kBoolean);
  auto st = One(R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"boolean"}},"required":["b"]})");
  ASSERT_EQ(st.type.id, TypeId::kStruct);
  ASSERT_EQ(st.type.fields.size(), 2u);
  EXPECT_EQ(st.type.fields[0].name, "a");
  EXPECT_FALSE(st.type.fields[0].required);
  EXPECT_TRUE(st.type.fields[1].required);
  auto m = One(R"({"type":"object","additionalProperties":{"type":"integer"}})");
  ASSERT_EQ(m.type.id, TypeId::kMap);
  EXPECT_EQ(m.type.key().type.id, TypeId::kString);
  EXPECT_EQ(m.type.value().type.id, TypeId::kLong);
  EXPECT_TRUE(m.type.value().required);
  auto l = One(R"({"type":"array","items":{"type":"string"}})");
  ASSERT_EQ(l.type.id, TypeId::kList);
  EXPECT_EQ(l.type.element().type.id, TypeId::kString);
  EXPECT_TRUE(l.type.element().required);
  EXPECT_FALSE(One(R"({"type":"array","items":{"type":["string","null"]}})").type.element().required);
  EXPECT_EQ(One(R"({"enum":["a","b"]})").type.id, TypeId::kString);
  EXPECT_EQ(One(R"({"type":"integer","enum":[1,2]})").type.id, TypeId::kString);
}

TEST(JsonSchemaTest, RequiredAndNullable) {
  EXPECT_TRUE(One(R"({"type":"string"})", R"(["f"])").required);
  EXPECT_FALSE(One(R"({"type":"string"})").required);
  // Listed as required but typed nullable: an optional column whose member must exist.
  auto s = JsonSchemaToIceberg(
      R"({"type":"object","required":["f"],"properties":{"f":{"type":["string","null"]}}})");
  ASSERT_OK(s);
  EXPECT_FALSE(s->schema.fields[0].required);
  EXPECT_TRUE(s->constraints.at(1).must_be_present);
  EXPECT_TRUE(s->constraints.at(1).nullable);
}

TEST(JsonSchemaTest, Bounds) {
  auto s = JsonSchemaToIceberg(R"({"type":"object","properties":{
      "d4":{"type":"integer","minimum":0,"exclusiveMinimum":true,"maximum":10,"exclusiveMaximum":true},
      "d7":{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10},
      "n":{"type":"number","minimum":-1.5,"exclusiveMaximum":2.5}}})");
  ASSERT_OK(s);
  for (int id : {1, 2}) {
    EXPECT_EQ(s->constraints.at(id).min_int, 1);
    EXPECT_EQ(s->constraints.at(id).max_int, 9);
    EXPECT_EQ(s->schema.fields[id - 1].type.id, TypeId::kInt);
  }
  EXPECT_EQ(s->constraints.at(3).min_number, -1.5);
  EXPECT_FALSE(s->constraints.at(3).exclusive_min_number);
  EXPECT_EQ(s->constraints.at(3).max_number, 2.5);
  EXPECT_TRUE(s->constraints.at(3).exclusive_max_number);
}

TEST(JsonSchemaTest, FieldIdsFollowIcebergJava) {
  auto s = JsonSchemaToIceberg(R"({"type":"object","properties":{
      "a":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}}},
      "b":{"type":"array","items":{"type":"string"}},
      "c":{"type":"object","additionalProperties":{"type":"string"}},
      "d":{"type":"string"}}})");
  ASSERT_OK(s);
  const auto& f = s->schema.fields;
  EXPECT_EQ(f[0].id, 1);  // a struct's fields get ids first ...
  EXPECT_EQ(f[1].id, 2);
  EXPECT_EQ(f[2].id, 3);
  EXPECT_EQ(f[3].id, 4);
  EXPECT_EQ(f[0].type.fields[0].id, 5);  // ... then the nested types, in order
  EXPECT_EQ(f[0].type.fields[1].id, 6);
  EXPECT_EQ(f[1].type.element().id, 7);
  EXPECT_EQ(f[2].type.key().id, 8);
  EXPECT_EQ(f[2].type.value().id, 9);
  EXPECT_EQ(iceberg::HighestFieldId(s->schema), 9);
}

TEST(JsonSchemaTest, Refusals) {
  std::string deep = R"({"type":"string"})";
  for (int i = 0; i < 17; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  std::string ok_deep = R"({"type":"string"})";
  for (int i = 0; i < 16; ++i) ok_deep = R"({"type":"array","items":)" + ok_deep + "}";
  EXPECT_OK(JsonSchemaToIceberg(R"({"type":"object","properties":{"f":)" + ok_deep + "}}"));
  auto too_deep = JsonSchemaToIceberg(R"({"type":"object","properties":{"f":)" + deep + "}}");
  EXPECT_STATUS(kInvalidArgument, too_deep);
  EXPECT_NE(too_deep.status().message().find("nesting"), std::string::npos);
  for (const char* bad : {
           R"({"type":"array","items":{"type":"string"}})",
           R"({"type":"object","properties":{"f":{"$ref":"#/x"}}})",
           R"({"type":"object","properties":{"f":{"oneOf":[{"type":"string"}]}}})",
           R"({"type":"object","properties":{"f":{"type":["string","integer"]}}})",
           R"({"type":"object","properties":{"f":{"type":"object"}}})",
           R"({"type":"object","properties":{"f":{"type":"array"}}})",
           R"({"type":"object","properties":{"f":{"type":"null"}}})",
           R"({"type":"object","properties":{"f":{"type":"number","multipleOf":0}}})",
           R"({"type":"object","properties":{}})",
           R"(not json)",
       }) {
    EXPECT_NOT_OK(JsonSchemaToIceberg(bad)) << bad;
  }
}

TEST(JsonSchemaTest, LoadDetectsIcebergSchemas) {
  auto s = LoadConvertibleSchema(
      R"({"type":"struct","schema-id":0,"fields":[{"id":4,"name":"x","required":true,"type":"fixed[3]"}]})");
  ASSERT_OK(s);
  EXPECT_EQ(s->schema.fields[0].id, 4);
  EXPECT_EQ(s->schema.fields[0].type, iceberg::Fixed(3));
  EXPECT_TRUE(s->constraints.at(4).must_be_present);
}

}  // namespace
}  // namespace icestream::schema
