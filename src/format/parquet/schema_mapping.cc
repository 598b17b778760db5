// Iceberg -> Parquet schema mapping and level computation.
#include "format/parquet/schema_mapping.h"

#include <cmath>

namespace icestream::format::parquet {

using iceberg::NestedField;
using iceberg::Type;
using iceberg::TypeId;

int32_t DecimalByteWidth(int32_t precision) {
  // Smallest n with 2^(8n-1) - 1 >= 10^precision - 1.
  for (int32_t n = 1; n <= 16; ++n) {
    if (std::floor(std::log10(std::pow(2.0, 8.0 * n - 1) - 1)) >= precision) return n;
  }
  return 16;
}

namespace {

struct Builder {
  std::vector<SchemaElement>* elements;
  std::vector<ColumnDescriptor>* columns;
  std::vector<std::string> path;

  void Primitive(const NestedField& f, const Type& t, Repetition rep, ShredNode* node,
                 int16_t max_rep, bool inside_repeated) {
    SchemaElement e;
    e.name = f.name;
    e.repetition_type = rep;
    e.field_id = f.id;
    ColumnDescriptor c;
    c.type = t;
    c.order = SortOrder::kSigned;
    using LK = LogicalType::Kind;
    switch (t.id) {
      case TypeId::kBoolean: c.physical = PhysicalType::kBoolean; break;
      case TypeId::kInt: c.physical = PhysicalType::kInt32; break;
      case TypeId::kLong: c.physical = PhysicalType::kInt64; break;
      case TypeId::kFloat: c.physical = PhysicalType::kFloat; break;
      case TypeId::kDouble: c.physical = PhysicalType::kDouble; break;
      case TypeId::kDecimal:
        // Iceberg spec Appendix A: INT32 for P <= 9, INT64 for P <= 18, else a
        // fixed of the minimum width.
        if (t.precision <= 9) {
          c.physical = PhysicalType::kInt32;
        } else if (t.precision <= 18) {
          c.physical = PhysicalType::kInt64;
        } else {
          c.physical = PhysicalType::kFixedLenByteArray;
          c.type_length = DecimalByteWidth(t.precision);
        }
        e.converted_type = ConvertedType::kDecimal;
        e.scale = t.scale;
        e.precision = t.precision;
        e.logical_type = {LK::kDecimal, t.scale, t.precision, false};
        break;
      case TypeId::kDate:
        c.physical = PhysicalType::kInt32;
        e.converted_type = ConvertedType::kDate;
        e.logical_type.kind = LK::kDate;
        break;
      case TypeId::kTime:
        c.physical = PhysicalType::kInt64;
        e.converted_type = ConvertedType::kTimeMicros;
        e.logical_type.kind = LK::kTime;
        break;
      case TypeId::kTimestamp:
      case TypeId::kTimestampTz:
        c.physical = PhysicalType::kInt64;
        e.converted_type = ConvertedType::kTimestampMicros;
        e.logical_type.kind = LK::kTimestamp;
        e.logical_type.adjusted_to_utc = t.id == TypeId::kTimestampTz;
        break;
      case TypeId::kString:
        c.physical = PhysicalType::kByteArray;
        c.order = SortOrder::kUnsigned;
        e.converted_type = ConvertedType::kUtf8;
        e.logical_type.kind = LK::kString;
        break;
      case TypeId::kUuid:
        c.physical = PhysicalType::kFixedLenByteArray;
        c.type_length = 16;
        c.order = SortOrder::kUnsigned;
        e.logical_type.kind = LK::kUuid;
        break;
      case TypeId::kFixed:
        c.physical = PhysicalType::kFixedLenByteArray;
        c.type_length = t.length;
        c.order = SortOrder::kUnsigned;
        break;
      case TypeId::kBinary:
        c.physical = PhysicalType::kByteArray;
        c.order = SortOrder::kUnsigned;
        break;
      default: break;
    }
    e.type = c.physical;
    if (c.physical == PhysicalType::kFixedLenByteArray) e.type_length = c.type_length;
    elements->push_back(std::move(e));

    c.index = static_cast<int>(columns->size());
    c.path = path;
    c.field_id = f.id;
    c.max_def = node->def;
    c.max_rep = max_rep;
    c.inside_repeated = inside_repeated;
    node->leaf_begin = c.index;
    node->leaf_end = c.index + 1;
    columns->push_back(std::move(c));
  }

  // Adds the subtree of field f. `def` / `rep` are the levels of the parent context.
  Status Field(const NestedField& f, ShredNode* node, int16_t def, int16_t rep,
               bool inside_repeated) {
    const Type& t = f.type;
    node->field_id = f.id;
    node->name = f.name;
    node->optional = !f.required;
    node->def = static_cast<int16_t>(def + (f.required ? 0 : 1));
    node->type = &t;
    Repetition repetition = f.required ? Repetition::kRequired : Repetition::kOptional;
    path.push_back(f.name);
    node->leaf_begin = static_cast<int>(columns->size());
    switch (t.id) {
      case TypeId::kStruct: {
        if (t.fields.empty()) return InvalidArgument("struct " + f.name + " has no fields (Parquet forbids empty groups)");
        node->kind = ShredNode::Kind::kStruct;
        SchemaElement e;
        e.name = f.name;
        e.repetition_type = repetition;
        e.num_children = static_cast<int32_t>(t.fields.size());
        e.field_id = f.id;
        elements->push_back(std::move(e));
        node->children.resize(t.fields.size());
        for (size_t i = 0; i < t.fields.size(); ++i) {
          RETURN_IF_ERROR(Field(t.fields[i], &node->children[i], node->def, rep, inside_repeated));
        }
        break;
      }
      case TypeId::kList:
      case TypeId::kMap: {
        bool is_list = t.id == TypeId::kList;
        node->kind = is_list ? ShredNode::Kind::kList : ShredNode::Kind::kMap;
        node->rep = static_cast<int16_t>(rep + 1);
        SchemaElement outer;
        outer.name = f.name;
        outer.repetition_type = repetition;
        outer.num_children = 1;
        outer.field_id = f.id;
        outer.converted_type = is_list ? ConvertedType::kList : ConvertedType::kMap;
        outer.logical_type.kind = is_list ? LogicalType::Kind::kList : LogicalType::Kind::kMap;
        elements->push_back(std::move(outer));
        SchemaElement middle;
        middle.name = is_list ? "list" : "key_value";
        middle.repetition_type = Repetition::kRepeated;
        middle.num_children = static_cast<int32_t>(t.fields.size());
        elements->push_back(std::move(middle));
        path.push_back(is_list ? "list" : "key_value");
        node->children.resize(t.fields.size());
        for (size_t i = 0; i < t.fields.size(); ++i) {
          // Entries of the repeated group live one definition level deeper.
          RETURN_IF_ERROR(Field(t.fields[i], &node->children[i],
                                static_cast<int16_t>(node->def + 1), node->rep, true));
        }
        path.pop_back();
        break;
      }
      default:
        node->kind = ShredNode::Kind::kPrimitive;
        Primitive(f, t, repetition, node, rep, inside_repeated);
        break;
    }
    node->leaf_end = static_cast<int>(columns->size());
    path.pop_back();
    return Status::OK();
  }
};

}  // namespace

Result<ParquetSchema> ParquetSchema::Make(const iceberg::Schema& schema) {
  RETURN_IF_ERROR(iceberg::Validate(schema));
  if (schema.fields.empty()) return InvalidArgument("schema has no fields");
  ParquetSchema ps;
  ps.iceberg_ = std::make_unique<iceberg::Schema>(schema);
  SchemaElement root;
  root.name = "table";
  root.num_children = static_cast<int32_t>(schema.fields.size());
  ps.elements_.push_back(std::move(root));
  Builder b{&ps.elements_, &ps.columns_, {}};
  ps.root_.kind = ShredNode::Kind::kStruct;
  ps.root_.children.resize(ps.iceberg_->fields.size());
  for (size_t i = 0; i < ps.iceberg_->fields.size(); ++i) {
    RETURN_IF_ERROR(b.Field(ps.iceberg_->fields[i], &ps.root_.children[i], 0, 0, false));
  }
  ps.root_.leaf_end = static_cast<int>(ps.columns_.size());
  return ps;
}

}  // namespace icestream::format::parquet
