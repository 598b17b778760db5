// Copying rows into a later version of the table schema (Iceberg spec "Schema
// Evolution"): added columns read as nulls at the right definition level (top level,
// inside a struct, inside a list's struct, next to deeper lists), promotions int->long,
// float->double, decimal(9,2)->decimal(18,2)->decimal(38,2), required->optional,
// dropped columns, and the changes that must be refused.
#include <gtest/gtest.h>

#include "common/bytes.h"
#include "common/testing/status_assertions.h"
#include "format/parquet/file_reader.h"
#include "format/parquet/file_writer.h"
#include "format/parquet/json_rows.h"
#include "format/parquet/output_stream.h"
#include "format/parquet/test_rows.h"

namespace icestream::format::parquet {
namespace {

using iceberg::NestedField;
using iceberg::TypeId;
using testing::Value;

Value Null() { return Value(); }
Value I(int64_t i) {
  Value v;
  v.null = false;
  v.i = i;
  return v;
}
Value D(double d) {
  Value v;
  v.null = false;
  v.d = d;
  return v;
}
Value S(std::string s) {
  Value v;
  v.null = false;
  v.b = std::move(s);
  return v;
}
Value N(std::vector<Value> items) {
  Value v;
  v.null = false;
  v.items = std::move(items);
  return v;
}

std::string Write(const iceberg::Schema& schema, const std::vector<Value>& rows) {
  std::string bytes;
  StringOutputStream out(&bytes);
  WriterOptions o;
  o.max_row_group_rows = 2;  // several row groups
  auto w = FileWriter::Make(schema, &out, o);
  EXPECT_OK(w);
  for (const Value& r : rows) {
    testing::ShredRow((*w)->schema(), r, **w);
    EXPECT_OK((*w)->EndRecord());
  }
  EXPECT_OK((*w)->Close());
  return bytes;
}

Result<std::string> Copy(const std::string& file, const iceberg::Schema& target) {
  ASSIGN_OR_RETURN(auto reader, ParquetFileReader::Open(file));
  std::string bytes;
  StringOutputStream out(&bytes);
  ASSIGN_OR_RETURN(auto w, FileWriter::Make(target, &out, WriterOptions()));
  RETURN_IF_ERROR(reader->CopyRows(w.get()));
  RETURN_IF_ERROR(w->Close().status());
  return bytes;
}

std::string Json(const std::string& file) {
  auto r = ParquetFileReader::Open(file);
  if (!r.ok()) return r.status().ToString();
  std::string out;
  for (int g = 0; g < (*r)->num_row_groups(); ++g) {
    Status st = AppendJsonRows(**r, g, &out);
    if (!st.ok()) return st.ToString();
  }
  return out;
}

// The definition levels stored for one leaf of a file.
std::vector<int16_t> DefLevels(const std::string& file, int leaf) {
  auto r = ParquetFileReader::Open(file);
  EXPECT_OK(r);
  std::vector<int16_t> out;
  const SourceLeaf& l = (*r)->schema().leaves()[static_cast<size_t>(leaf)];
  for (int g = 0; g < (*r)->num_row_groups(); ++g) {
    ReadBudget budget(1 << 30);
    Decompressor d;
    DecodedColumn c;
    const int64_t footer_start =
        static_cast<int64_t>(file.size() - 8 - GetFixed32(file.data() + file.size() - 8));
    Status st = ReadColumnChunk(
        file, footer_start,
        (*r)->metadata().row_groups[static_cast<size_t>(g)].columns[static_cast<size_t>(leaf)], l,
        true, &d, &budget, &c);
    EXPECT_OK(st);
    out.insert(out.end(), c.def.begin(), c.def.end());
  }
  return out;
}

NestedField F(int32_t id, std::string name, bool required, iceberg::Type t) {
  return NestedField{id, std::move(name), required, std::move(t), ""};
}

TEST(SchemaEvolutionTest, AddedColumnsArePromotedTypesAreConverted) {
  iceberg::Schema v1;
  v1.fields = {
      F(1, "id", true, iceberg::Primitive(TypeId::kLong)),
      F(2, "a", false, iceberg::Primitive(TypeId::kInt)),
      F(3, "f", false, iceberg::Primitive(TypeId::kFloat)),
      F(4, "s", false, iceberg::Struct({F(5, "x", false, iceberg::Primitive(TypeId::kInt))})),
      F(6, "d", false, iceberg::Decimal(9, 2)),
      F(7, "gone", false, iceberg::Primitive(TypeId::kString))};
  std::vector<Value> rows = {
      N({I(1), I(-5), D(1.5), N({I(10)}), I(12345), S("x")}),
      N({I(2), Null(), Null(), Null(), I(-1), Null()}),
      N({I(3), I(2147483647), D(-0.25), N({Null()}), Null(), S("y")}),
  };
  std::string a = Write(v1, rows);

  iceberg::Schema v2;
  v2.fields = {
      F(1, "id", true, iceberg::Primitive(TypeId::kLong)),
      F(2, "a", false, iceberg::Primitive(TypeId::kLong)),
      F(3, "f", false, iceberg::Primitive(TypeId::kDouble)),
      F(4, "s", false,
        iceberg::Struct({F(5, "x", false, iceberg::Primitive(TypeId::kInt)),
                         F(10, "y", false, iceberg::Primitive(TypeId::kString))})),
      F(6, "d", false, iceberg::Decimal(18, 2)),
      F(11, "added", false, iceberg::Primitive(TypeId::kString)),
      F(12, "added_list", false, iceberg::List(13, false, iceberg::Primitive(TypeId::kInt)))};
  ASSERT_OK_AND_ASSIGN(auto b, Copy(a, v2));
  EXPECT_EQ(Json(b),
            "{\"id\":1,\"a\":-5,\"f\":1.5,\"s\":{\"x\":10,\"y\":null},\"d\":\"123.45\",\"added\":"
            "null,\"added_list\":null}\n"
            "{\"id\":2,\"a\":null,\"f\":null,\"s\":null,\"d\":\"-0.01\",\"added\":null,\"added_"
            "list\":null}\n"
            "{\"id\":3,\"a\":2147483647,\"f\":-0.25,\"s\":{\"x\":null,\"y\":null},\"d\":null,"
            "\"added\":null,\"added_list\":null}\n");
  // s.y is null (def 1) where s is present and absent with s (def 0) where s is null.
  ASSERT_OK(ParquetFileReader::Open(b));
  EXPECT_EQ(DefLevels(b, 4), (std::vector<int16_t>{1, 0, 1}));
  EXPECT_EQ(DefLevels(b, 3), (std::vector<int16_t>{2, 0, 1}));

  // decimal(18,2) -> decimal(38,2): INT64 -> FIXED[16].
  iceberg::Schema v3 = v2;
  v3.fields[4].type = iceberg::Decimal(38, 2);
  ASSERT_OK_AND_ASSIGN(auto c, Copy(b, v3));
  EXPECT_EQ(Json(c), Json(b));
  // And straight from decimal(9,2) INT32 to decimal(38,2), and to decimal(12,2) (INT64).
  EXPECT_EQ(Json(*Copy(a, v3)), Json(b));
  iceberg::Schema v4 = v2;
  v4.fields[4].type = iceberg::Decimal(12, 2);
  EXPECT_EQ(Json(*Copy(a, v4)), Json(b));
}

TEST(SchemaEvolutionTest, AddedFieldsInsideListsAndNextToDeeperLists) {
  // list<struct<x int, inner list<int>>> and struct<xs list<int>>.
  iceberg::Schema v1;
  v1.fields = {
      F(1, "l", false,
        iceberg::List(
            2, false,
            iceberg::Struct({F(3, "x", false, iceberg::Primitive(TypeId::kInt)),
                             F(4, "inner", false,
                               iceberg::List(5, false, iceberg::Primitive(TypeId::kInt)))}))),
      F(6, "s", false,
        iceberg::Struct(
            {F(7, "xs", false, iceberg::List(8, true, iceberg::Primitive(TypeId::kInt)))}))};
  std::vector<Value> rows = {
      N({N({N({I(1), N({I(1), I(2), I(3)})}), Null(), N({Null(), N({})})}), N({N({I(4), I(5)})})}),
      N({Null(), Null()}),
      N({N({}), N({N({})})}),
      N({N({N({I(9), Null()})}), N({Null()})}),
  };
  std::string a = Write(v1, rows);
  iceberg::Schema v2 = v1;
  // y next to x in the list's struct; z in s, whose only column is a deeper list.
  v2.fields[0].type.fields[0].type.fields.push_back(
      F(20, "y", false, iceberg::Primitive(TypeId::kString)));
  v2.fields[1].type.fields.push_back(F(21, "z", false, iceberg::Primitive(TypeId::kLong)));
  ASSERT_OK_AND_ASSIGN(auto b, Copy(a, v2));
  EXPECT_EQ(
      Json(b),
      "{\"l\":[{\"x\":1,\"inner\":[1,2,3],\"y\":null},null,{\"x\":null,\"inner\":[],\"y\":null}],"
      "\"s\":{\"xs\":[4,5],\"z\":null}}\n"
      "{\"l\":null,\"s\":null}\n"
      "{\"l\":[],\"s\":{\"xs\":[],\"z\":null}}\n"
      "{\"l\":[{\"x\":9,\"inner\":null,\"y\":null}],\"s\":{\"xs\":null,\"z\":null}}\n");
}

TEST(SchemaEvolutionTest, RequiredBecomesOptionalAndDroppedColumnsAreNotRead) {
  iceberg::Schema v1;
  v1.fields = {
      F(1, "id", true, iceberg::Primitive(TypeId::kLong)),
      F(2, "s", true, iceberg::Struct({F(3, "x", true, iceberg::Primitive(TypeId::kInt))})),
      F(4, "drop", false, iceberg::Primitive(TypeId::kString))};
  std::string a = Write(v1, {N({I(1), N({I(7)}), S("a")}), N({I(2), N({I(8)}), Null()})});
  iceberg::Schema v2;
  v2.fields = {
      F(2, "s", false, iceberg::Struct({F(3, "x", false, iceberg::Primitive(TypeId::kInt))})),
      F(1, "id", false, iceberg::Primitive(TypeId::kLong))};
  ASSERT_OK_AND_ASSIGN(auto b, Copy(a, v2));
  EXPECT_EQ(Json(b), "{\"s\":{\"x\":7},\"id\":1}\n{\"s\":{\"x\":8},\"id\":2}\n");
  EXPECT_EQ(DefLevels(b, 0), (std::vector<int16_t>{2, 2}));
}

TEST(SchemaEvolutionTest, RefusesChangesIcebergDoesNotAllow) {
  iceberg::Schema v1;
  v1.fields = {
      F(1, "a", false, iceberg::Primitive(TypeId::kInt)), F(2, "d", false, iceberg::Decimal(10, 2)),
      F(3, "s", false, iceberg::Struct({F(4, "x", false, iceberg::Primitive(TypeId::kInt))})),
      F(5, "t", false, iceberg::Primitive(TypeId::kTimestamp))};
  std::string a = Write(v1, {N({I(1), I(100), N({I(1)}), I(0)})});
  auto refused = [&](iceberg::Schema target, const std::string& why) {
    auto r = Copy(a, target);
    ASSERT_STATUS(kInvalidArgument, r) << why;
    EXPECT_STATUS(kInvalidArgument, r);
  };
  iceberg::Schema t = v1;
  t.fields[0].required = true;
  refused(t, "optional -> required");
  t = v1;
  t.fields[0].type = iceberg::Primitive(TypeId::kFloat);
  refused(t, "int -> float");
  t = v1;
  t.fields[0].type = iceberg::Primitive(TypeId::kString);
  refused(t, "int -> string");
  t = v1;
  t.fields[1].type = iceberg::Decimal(12, 3);
  refused(t, "decimal scale change");
  t = v1;
  t.fields[1].type = iceberg::Decimal(9, 2);
  refused(t, "decimal narrowing");
  t = v1;
  t.fields[3].type = iceberg::Primitive(TypeId::kTimestampTz);
  refused(t, "timestamp -> timestamptz");
  t = v1;
  t.fields[2].type = iceberg::List(4, false, iceberg::Primitive(TypeId::kInt));
  refused(t, "struct -> list");
  t = v1;
  t.fields.push_back(F(9, "new_required", true, iceberg::Primitive(TypeId::kInt)));
  refused(t, "a required column the file lacks");
  t = v1;
  // x moved out of s to the top level.
  t.fields[2].type.fields[0].id = 8;
  t.fields.push_back(F(4, "x", false, iceberg::Primitive(TypeId::kInt)));
  refused(t, "a field that moved to another parent");
}

}  // namespace
}  // namespace icestream::format::parquet
