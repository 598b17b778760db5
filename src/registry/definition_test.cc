// Syntax checks of registry definitions and their canonical forms.
#include "registry/definition.h"

#include <gtest/gtest.h>

#include "common/testing/status_assertions.h"

namespace icestream::registry {
namespace {

TEST(DefinitionTest, JsonSchema) {
  EXPECT_OK(
      CheckDefinition(DataFormat::kJson, R"({"$schema":"http://json-schema.org/draft-07/schema#",
      "type":"object","properties":{"a":{"type":["integer","null"],"minimum":0},"b":{"type":"array","items":{"type":"string","pattern":"^x+$"}}},
      "required":["a"],"additionalProperties":false,"definitions":{"d":true}})"));
  EXPECT_OK(CheckDefinition(DataFormat::kJson, "true"));
  const char* bad[] = {
      "{", "[]", R"({"type":"strng"})", R"({"type":[]})", R"({"type":["string","string"]})",
      R"({"properties":[]})", R"({"properties":{"a":5}})", R"({"required":"a"})", R"({"required":["a","a"]})",
      R"({"items":3})", R"({"anyOf":[]})", R"({"enum":[]})", R"({"multipleOf":0})", R"({"minLength":-1})",
      R"({"pattern":"("})", R"({"not":"x"})", R"({"properties":{"a":{"properties":{"b":{"type":1}}}}})"};
  for (const char* b : bad) {
    Status st = CheckDefinition(DataFormat::kJson, b);
    EXPECT_STATUS(kInvalidArgument, st) << b;
    EXPECT_EQ(st.message().rfind("Schema definition of JSON data format is invalid: ", 0), 0u) << st.message();
  }
  EXPECT_NE(CheckDefinition(DataFormat::kJson, R"({"properties":{"a":{"properties":{"b":{"type":1}}}}})")
                .message()
                .find("#/properties/a/properties/b/type"),
            std::string::npos);
}

TEST(DefinitionTest, Avro) {
  EXPECT_OK(CheckDefinition(DataFormat::kAvro, R"({"type":"record","name":"ns.User","fields":[
      {"name":"id","type":"long"},{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
      {"name":"opt","type":["null","string"],"default":null}]})"));
  EXPECT_OK(CheckDefinition(DataFormat::kAvro, R"("string")"));
  const char* bad[] = {
      R"({"type":"nonsense"})", R"({"type":"record","name":"1x","fields":[]})",
      R"({"type":"record","name":"r","fields":[{"name":"a-b","type":"int"}]})",
      R"({"type":"enum","name":"E","symbols":["A","A"]})", R"(["int","int"])",
      R"({"type":"record","name":"r","fields":[{"name":"a","type":"int"},{"name":"a","type":"int"}]})"};
  for (const char* b : bad)
    EXPECT_STATUS(kInvalidArgument, CheckDefinition(DataFormat::kAvro, b)) << b;
}

TEST(DefinitionTest, Protobuf) {
  EXPECT_OK(CheckDefinition(DataFormat::kProtobuf,
                            "syntax = \"proto3\";\n// {\nmessage Foo { int32 a = 1; }"));
  EXPECT_STATUS(kInvalidArgument,
                CheckDefinition(DataFormat::kProtobuf, "message Foo { int32 a = 1;"));
  EXPECT_STATUS(kInvalidArgument, CheckDefinition(DataFormat::kProtobuf, "hello"));
  EXPECT_STATUS(kInvalidArgument, CheckDefinition(DataFormat::kProtobuf, "messages Foo {}"));
}

TEST(DefinitionTest, CanonicalForms) {
  EXPECT_EQ(CanonicalDefinition(DataFormat::kJson, R"({ "type" : "object", "a" : 1 })"),
            CanonicalDefinition(DataFormat::kJson, R"({"a":1,"type":"object"})"));
  EXPECT_NE(CanonicalDefinition(DataFormat::kProtobuf, "message A {}"), CanonicalDefinition(DataFormat::kProtobuf, "message A{}"));
}

}  // namespace
}  // namespace icestream::registry
