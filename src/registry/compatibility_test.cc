// Compatibility rules: JSON Schema changes the Iceberg mapping can express, and Avro
// schema resolution.
#include "registry/compatibility.h"

#include <gtest/gtest.h>

namespace icestream::registry {
namespace {

bool Ok(Compatibility mode, const char* now, const char* before, DataFormat f = DataFormat::kJson) {
  return Incompatibility(f, mode, now, before).empty();
}

const char* kV1 = R"({"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}},"required":["id"]})";

TEST(JsonCompatibilityTest, RequiredFields) {
  // Adding an optional property: fine everywhere.
  const char* add_opt = R"({"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"},
      "extra":{"type":"boolean"}},"required":["id"]})";
  for (auto m : {Compatibility::kBackward, Compatibility::kForward, Compatibility::kFull}) EXPECT_TRUE(Ok(m, add_opt, kV1));
  // Adding a required property: old data lacks it (BACKWARD breaks); old readers cope.
  const char* add_req = R"({"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}},
      "required":["id","name"]})";
  EXPECT_FALSE(Ok(Compatibility::kBackward, add_req, kV1));
  EXPECT_TRUE(Ok(Compatibility::kForward, add_req, kV1));
  EXPECT_FALSE(Ok(Compatibility::kFull, add_req, kV1));
  // Dropping a required property: FORWARD breaks.
  const char* drop_req = R"({"type":"object","properties":{"name":{"type":"string"}}})";
  EXPECT_TRUE(Ok(Compatibility::kBackward, drop_req, kV1));
  EXPECT_FALSE(Ok(Compatibility::kForward, drop_req, kV1));
  EXPECT_TRUE(Ok(Compatibility::kNone, drop_req, kV1));
}

TEST(JsonCompatibilityTest, TypesEnumsAndBounds) {
  // integer -> number widens (reader number reads integers) but not the other way.
  const char* number = R"({"type":"object","properties":{"id":{"type":"number"},"name":{"type":"string"}},"required":["id"]})";
  EXPECT_TRUE(Ok(Compatibility::kBackward, number, kV1));
  EXPECT_FALSE(Ok(Compatibility::kForward, number, kV1));
  const char* str = R"({"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"}},"required":["id"]})";
  EXPECT_FALSE(Ok(Compatibility::kBackward, str, kV1));
  // Nullable widening.
  const char* nullable = R"({"type":"object","properties":{"id":{"type":"integer"},"name":{"type":["string","null"]}},"required":["id"]})";
  EXPECT_TRUE(Ok(Compatibility::kBackward, nullable, kV1));
  EXPECT_FALSE(Ok(Compatibility::kForward, nullable, kV1));
  // An int column (bounded) widened to long (unbounded): backward only.
  const char* bounded = R"({"type":"object","properties":{"n":{"type":"integer","minimum":-2147483648,"maximum":2147483647}}})";
  const char* unbounded = R"({"type":"object","properties":{"n":{"type":"integer"}}})";
  EXPECT_TRUE(Ok(Compatibility::kBackward, unbounded, bounded));
  EXPECT_FALSE(Ok(Compatibility::kBackward, bounded, unbounded));
  EXPECT_FALSE(Ok(Compatibility::kFull, unbounded, bounded));
  // Enums may only grow for readers.
  const char* e1 = R"({"type":"object","properties":{"k":{"type":"string","enum":["a","b"]}}})";
  const char* e2 = R"({"type":"object","properties":{"k":{"type":"string","enum":["a","b","c"]}}})";
  EXPECT_TRUE(Ok(Compatibility::kBackward, e2, e1));
  EXPECT_FALSE(Ok(Compatibility::kForward, e2, e1));
  // Nested objects and arrays are compared too.
  const char* n1 = R"({"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"integer"}}},
      "l":{"type":"array","items":{"type":"integer"}}}})";
  const char* n2 = R"({"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]},
      "l":{"type":"array","items":{"type":"integer"}}}})";
  const char* n3 = R"({"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"integer"}}},
      "l":{"type":"array","items":{"type":"string"}}}})";
  EXPECT_FALSE(Ok(Compatibility::kBackward, n2, n1));
  EXPECT_FALSE(Ok(Compatibility::kBackward, n3, n1));
  // A closed reader cannot read a property the writer has.
  const char* closed = R"({"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],"additionalProperties":false})";
  EXPECT_FALSE(Ok(Compatibility::kBackward, closed, kV1));
  EXPECT_TRUE(Ok(Compatibility::kForward, closed, kV1));
}

TEST(AvroCompatibilityTest, SchemaResolution) {
  auto f = DataFormat::kAvro;
  const char* v1 = R"({"type":"record","name":"U","fields":[{"name":"id","type":"int"}]})";
  const char* with_default = R"({"type":"record","name":"U","fields":[{"name":"id","type":"int"},
      {"name":"n","type":["null","string"],"default":null}]})";
  const char* without_default = R"({"type":"record","name":"U","fields":[{"name":"id","type":"int"},{"name":"n","type":"string"}]})";
  const char* promoted = R"({"type":"record","name":"U","fields":[{"name":"id","type":"long"}]})";
  EXPECT_TRUE(Ok(Compatibility::kBackward, with_default, v1, f));
  EXPECT_TRUE(Ok(Compatibility::kFull, with_default, v1, f));
  EXPECT_FALSE(Ok(Compatibility::kBackward, without_default, v1, f));
  EXPECT_TRUE(Ok(Compatibility::kForward, without_default, v1, f));
  EXPECT_TRUE(Ok(Compatibility::kBackward, promoted, v1, f));
  EXPECT_FALSE(Ok(Compatibility::kForward, promoted, v1, f));
  const char* renamed = R"({"type":"record","name":"V","fields":[{"name":"id","type":"int"}]})";
  EXPECT_FALSE(Ok(Compatibility::kBackward, renamed, v1, f));
  const char* en1 = R"({"type":"enum","name":"E","symbols":["A","B"]})";
  const char* en2 = R"({"type":"enum","name":"E","symbols":["A","B","C"]})";
  EXPECT_TRUE(Ok(Compatibility::kBackward, en2, en1, f));
  EXPECT_FALSE(Ok(Compatibility::kForward, en2, en1, f));
  EXPECT_TRUE(Ok(Compatibility::kBackward, R"(["null","int"])", R"("int")", f));
  EXPECT_FALSE(Ok(Compatibility::kBackward, R"("int")", R"(["null","int"])", f));
  // Recursive types terminate.
  const char* list = R"({"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]})";
  EXPECT_TRUE(Ok(Compatibility::kFull, list, list, f));
  EXPECT_TRUE(Ok(Compatibility::kFull, "message A {}", "message B {}", DataFormat::kProtobuf));
}

}  // namespace
}  // namespace icestream::registry
