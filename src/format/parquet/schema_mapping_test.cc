// Tests of the Iceberg -> Parquet schema mapping: element layout, annotations, field
// ids and the definition / repetition levels of the spec's examples.
#include "format/parquet/schema_mapping.h"

#include <gtest/gtest.h>

#include "common/testing/status_assertions.h"

namespace icestream::format::parquet {
namespace {

using iceberg::TypeId;

TEST(SchemaMappingTest, LevelsOfTheSpecExamples) {
  iceberg::Schema s;
  s.fields.push_back({1, "tags", false, iceberg::List(2, false, iceberg::Primitive(TypeId::kInt)), ""});
  s.fields.push_back({3, "m", false,
                      iceberg::Map(4, iceberg::Primitive(TypeId::kString), 5, false,
                                   iceberg::Primitive(TypeId::kInt)),
                      ""});
  s.fields.push_back({6, "s", false, iceberg::Struct({{7, "a", false, iceberg::Primitive(TypeId::kInt), ""}}), ""});
  s.fields.push_back({8, "r", true, iceberg::Primitive(TypeId::kLong), ""});
  ASSERT_OK_AND_ASSIGN(auto ps, ParquetSchema::Make(s));
  const auto& c = ps.columns();
  ASSERT_EQ(c.size(), 5u);
  // parquet-format LogicalTypes.md / formats.md A.8.
  EXPECT_EQ(c[0].path, (std::vector<std::string>{"tags", "list", "element"}));
  EXPECT_EQ(c[0].max_def, 3);
  EXPECT_EQ(c[0].max_rep, 1);
  EXPECT_TRUE(c[0].inside_repeated);
  EXPECT_EQ(c[1].path, (std::vector<std::string>{"m", "key_value", "key"}));
  EXPECT_EQ(c[1].max_def, 2);
  EXPECT_EQ(c[1].max_rep, 1);
  EXPECT_EQ(c[2].max_def, 3);
  EXPECT_EQ(c[3].path, (std::vector<std::string>{"s", "a"}));
  EXPECT_EQ(c[3].max_def, 2);
  EXPECT_EQ(c[3].max_rep, 0);
  EXPECT_FALSE(c[3].inside_repeated);
  EXPECT_EQ(c[4].max_def, 0);

  const auto& e = ps.elements();
  ASSERT_EQ(e.size(), 11u);  // root, tags, list, element, m, key_value, key, value, s, a, r
  EXPECT_EQ(e[0].num_children, 4);
  EXPECT_FALSE(e[0].field_id.has_value());
  EXPECT_EQ(e[1].name, "tags");
  EXPECT_EQ(e[1].field_id, 1);
  EXPECT_EQ(e[1].converted_type, ConvertedType::kList);
  EXPECT_EQ(e[2].name, "list");
  EXPECT_EQ(e[2].repetition_type, Repetition::kRepeated);
  EXPECT_FALSE(e[2].field_id.has_value());
  EXPECT_EQ(e[3].name, "element");
  EXPECT_EQ(e[3].field_id, 2);
  EXPECT_EQ(e[4].converted_type, ConvertedType::kMap);
  EXPECT_EQ(e[5].name, "key_value");
  EXPECT_EQ(e[6].name, "key");
  EXPECT_EQ(e[6].repetition_type, Repetition::kRequired);
  EXPECT_EQ(e[6].converted_type, ConvertedType::kUtf8);
  EXPECT_EQ(e[7].field_id, 5);
  EXPECT_EQ(e[10].repetition_type, Repetition::kRequired);

  // The shredding tree: levels at which nulls and empty lists are recorded.
  const ShredNode& tags = ps.root().children[0];
  EXPECT_EQ(tags.def, 1);
  EXPECT_EQ(tags.rep, 1);
  EXPECT_EQ(tags.children[0].def, 3);
  EXPECT_EQ(ps.root().children[2].leaf_begin, 3);
  EXPECT_EQ(ps.root().children[2].leaf_end, 4);
}

TEST(SchemaMappingTest, PhysicalTypesAndAnnotations) {
  struct Case {
    iceberg::Type type;
    PhysicalType physical;
    int32_t length;
    LogicalType::Kind logical;
  };
  Case cases[] = {
      {iceberg::Primitive(TypeId::kBoolean), PhysicalType::kBoolean, 0, LogicalType::Kind::kNone},
      {iceberg::Decimal(9, 2), PhysicalType::kInt32, 0, LogicalType::Kind::kDecimal},
      {iceberg::Decimal(18, 2), PhysicalType::kInt64, 0, LogicalType::Kind::kDecimal},
      {iceberg::Decimal(19, 2), PhysicalType::kFixedLenByteArray, 9, LogicalType::Kind::kDecimal},
      {iceberg::Decimal(38, 0), PhysicalType::kFixedLenByteArray, 16, LogicalType::Kind::kDecimal},
      {iceberg::Primitive(TypeId::kDate), PhysicalType::kInt32, 0, LogicalType::Kind::kDate},
      {iceberg::Primitive(TypeId::kTime), PhysicalType::kInt64, 0, LogicalType::Kind::kTime},
      {iceberg::Primitive(TypeId::kTimestamp), PhysicalType::kInt64, 0, LogicalType::Kind::kTimestamp},
      {iceberg::Primitive(TypeId::kUuid), PhysicalType::kFixedLenByteArray, 16, LogicalType::Kind::kUuid},
      {iceberg::Fixed(5), PhysicalType::kFixedLenByteArray, 5, LogicalType::Kind::kNone},
      {iceberg::Primitive(TypeId::kBinary), PhysicalType::kByteArray, 0, LogicalType::Kind::kNone},
      {iceberg::Primitive(TypeId::kString), PhysicalType::kByteArray, 0, LogicalType::Kind::kString},
  };
  for (const auto& k : cases) {
    iceberg::Schema s;
    s.fields.push_back({1, "c", false, k.type, ""});
    ASSERT_OK_AND_ASSIGN(auto ps, ParquetSchema::Make(s));
    EXPECT_EQ(ps.columns()[0].physical, k.physical) << iceberg::PrimitiveTypeName(k.type);
    EXPECT_EQ(ps.columns()[0].type_length, k.length) << iceberg::PrimitiveTypeName(k.type);
    EXPECT_EQ(ps.elements()[1].logical_type.kind, k.logical) << iceberg::PrimitiveTypeName(k.type);
  }
}

TEST(SchemaMappingTest, DecimalWidths) {
  // formats.md A.5: P 1-2 -> 1, 3-4 -> 2, 5-6 -> 3, 7-9 -> 4, 10-11 -> 5, ..., 36-38 -> 16.
  int expect[39] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4, 5, 5, 6, 6, 6, 7, 7, 8, 8, 9,
                    9, 9, 10, 10, 11, 11, 11, 12, 12, 13, 13, 13, 14, 14, 15, 15, 16, 16, 16};
  for (int p = 1; p <= 38; ++p) EXPECT_EQ(DecimalByteWidth(p), expect[p]) << p;
}

}  // namespace
}  // namespace icestream::format::parquet
