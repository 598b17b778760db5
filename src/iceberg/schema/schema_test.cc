// Tests of the Iceberg schema model and its JSON codec.
#include "iceberg/schema/schema.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/testing/status_assertions.h"
#include "iceberg/schema/schema_json.h"

namespace icestream::iceberg {
namespace {

// The spec's example shapes (Appendix C): a struct with every kind of node.
constexpr const char* kFull = R"j({
  "type": "struct", "schema-id": 3, "identifier-field-ids": [1],
  "fields": [
    {"id": 1, "name": "id", "required": true, "type": "long", "doc": "primary key"},
    {"id": 2, "name": "price", "required": false, "type": "decimal(9, 2)"},
    {"id": 3, "name": "hash", "required": false, "type": "fixed[16]"},
    {"id": 4, "name": "tags", "required": false,
     "type": {"type": "list", "element-id": 5, "element-required": true, "element": "string"}},
    {"id": 6, "name": "attrs", "required": true,
     "type": {"type": "map", "key-id": 7, "key": "string", "value-id": 8,
              "value-required": false, "value": {"type": "struct", "fields": [
                {"id": 9, "name": "at", "required": true, "type": "timestamptz"},
                {"id": 10, "name": "u", "required": false, "type": "uuid"}]}}},
    {"id": 11, "name": "flags", "required": false, "type": "boolean"},
    {"id": 12, "name": "d", "required": false, "type": "date"},
    {"id": 13, "name": "t", "required": false, "type": "time"},
    {"id": 14, "name": "ts", "required": false, "type": "timestamp"},
    {"id": 15, "name": "b", "required": false, "type": "binary"},
    {"id": 16, "name": "i", "required": false, "type": "int"},
    {"id": 17, "name": "f", "required": false, "type": "float"},
    {"id": 18, "name": "x", "required": false, "type": "double"}
  ]})j";

TEST(SchemaJsonTest, ParsesEveryTypeAndRoundTrips) {
  ASSERT_OK_AND_ASSIGN(auto s, SchemaFromJson(kFull));
  EXPECT_EQ(s.schema_id, 3);
  EXPECT_EQ(s.identifier_field_ids, std::vector<int32_t>{1});
  ASSERT_EQ(s.fields.size(), 13u);
  EXPECT_EQ(s.fields[0].doc, "primary key");
  EXPECT_EQ(s.fields[1].type, Decimal(9, 2));
  EXPECT_EQ(s.fields[2].type, Fixed(16));
  const Type& tags = s.fields[3].type;
  ASSERT_EQ(tags.id, TypeId::kList);
  EXPECT_EQ(tags.element().id, 5);
  EXPECT_TRUE(tags.element().required);
  const Type& attrs = s.fields[4].type;
  ASSERT_EQ(attrs.id, TypeId::kMap);
  EXPECT_EQ(attrs.key().id, 7);
  EXPECT_EQ(attrs.value().id, 8);
  EXPECT_FALSE(attrs.value().required);
  EXPECT_EQ(attrs.value().type.fields[0].type.id, TypeId::kTimestampTz);
  EXPECT_EQ(HighestFieldId(s), 18);
  ASSERT_NE(FindField(s, 10), nullptr);
  EXPECT_EQ(FindField(s, 10)->name, "u");
  EXPECT_EQ(FindField(s, 99), nullptr);

  std::string text = SchemaToJson(s);
  ASSERT_OK_AND_ASSIGN(auto again, SchemaFromJson(text));
  EXPECT_EQ(again, s);
  // Spelling of the members (what other engines parse).
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["fields"][1]["type"], "decimal(9,2)");
  EXPECT_EQ(j["fields"][3]["type"]["element-id"], 5);
  EXPECT_EQ(j["fields"][4]["type"]["value-required"], false);
}

TEST(SchemaJsonTest, RejectsInvalidSchemas) {
  const char* bad[] = {
      R"j({"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"lng"}]})j",
      R"j({"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"long"},
                                    {"id":1,"name":"b","required":true,"type":"long"}]})j",
      R"j({"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"decimal(39,2)"}]})j",
      R"j({"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"decimal(4,5)"}]})j",
      R"j({"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"fixed[0]"}]})j",
      R"j({"type":"struct","fields":[{"id":1,"name":"a","type":"long"}]})j",
      R"j({"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"long"},
                                    {"id":2,"name":"a","required":true,"type":"long"}]})j",
      R"j({"type":"struct","identifier-field-ids":[1],
          "fields":[{"id":1,"name":"a","required":false,"type":"long"}]})j",
      R"j({"type":"struct","fields":[{"id":0,"name":"a","required":true,"type":"long"}]})j",
      R"j({"type":"struct","fields":[{"id":1,"name":"m","required":true,"type":
          {"type":"map","key-id":2,"key":"string","value-id":3,"value":"int"}}]})j",
      R"j([1,2])j",
      R"j({"type":"struct")j",
  };
  for (const char* text : bad) {
    auto s = SchemaFromJson(text);
    EXPECT_STATUS(kInvalidArgument, s) << text;
    if (!s.ok()) {
      EXPECT_STATUS(kInvalidArgument, s);
    }
  }
}

TEST(SchemaJsonTest, PrimitiveNames) {
  for (const char* name : {"boolean", "int", "long", "float", "double", "date", "time", "timestamp",
                           "timestamptz", "string", "uuid", "binary", "fixed[3]", "decimal(38,10)"}) {
    auto t = ParsePrimitiveType(name);
    ASSERT_OK(t) << name;
    EXPECT_EQ(PrimitiveTypeName(*t), name);
  }
  EXPECT_EQ(ParsePrimitiveType(" decimal( 10 , 2 ) ")->scale, 2);
  EXPECT_STATUS(kInvalidArgument, ParsePrimitiveType("decimal(1)"));
  EXPECT_STATUS(kInvalidArgument, ParsePrimitiveType("fixed[x]"));
}

TEST(SchemaJsonTest, DeepTypesAreRefusedNotRecursedInto) {
  auto nested = [](int levels) {
    std::string t;
    for (int i = 0; i < levels; ++i) {
      t += R"({"type":"list","element-id":)" + std::to_string(i + 2) +
           R"(,"element-required":false,"element":)";
    }
    t += "\"int\"";
    for (int i = 0; i < levels; ++i) t += "}";
    return R"({"type":"struct","fields":[{"id":1,"name":"x","required":false,"type":)" + t + "}]}";
  };
  auto deep = SchemaFromJson(nested(10000));
  ASSERT_STATUS(kInvalidArgument, deep);
  EXPECT_NE(deep.status().message().find("deeper than"), std::string::npos)
      << deep.status().message();
  auto fine = SchemaFromJson(nested(50));
  EXPECT_OK(fine);
}

}  // namespace
}  // namespace icestream::iceberg
