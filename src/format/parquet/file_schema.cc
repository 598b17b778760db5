// Parquet file schema -> Iceberg schema (LogicalTypes.md, Iceberg spec Appendix A).
#include "format/parquet/file_schema.h"

#include <algorithm>
#include <optional>

#include "common/utf8.h"

namespace icestream::format::parquet {

using iceberg::NestedField;
using iceberg::Type;
using iceberg::TypeId;

namespace {

constexpr int kMaxDepth = 64;

bool Is(const SchemaElement& e, ConvertedType c) {
  return e.converted_type && *e.converted_type == c;
}

// The Iceberg type of a leaf (LogicalTypes.md; the logical type wins over the converted
// type). Returns false with *why set when there is none.
bool LeafType(const SchemaElement& e, SourceLeaf* leaf, std::string* why) {
  using K = LogicalType::Kind;
  const LogicalType& lt = e.logical_type;
  const PhysicalType p = *e.type;
  auto prim = [&](TypeId id) {
    leaf->type = iceberg::Primitive(id);
    return true;
  };
  auto no = [&](std::string reason) {
    *why = std::move(reason);
    return false;
  };
  // Decimal: logical or converted, on INT32 / INT64 / FIXED (<= 16 bytes) / BYTE_ARRAY.
  if (lt.kind == K::kDecimal || (lt.kind == K::kNone && Is(e, ConvertedType::kDecimal))) {
    int32_t precision = lt.kind == K::kDecimal ? lt.precision : e.precision.value_or(0);
    int32_t scale = lt.kind == K::kDecimal ? lt.scale : e.scale.value_or(0);
    if (precision < 1 || precision > 38 || scale < 0 || scale > precision) {
      return no("decimal(" + std::to_string(precision) + "," + std::to_string(scale) +
                ") is outside Iceberg's range");
    }
    if (p == PhysicalType::kFixedLenByteArray && leaf->type_length > 16)
      return no("decimal wider than 16 bytes");
    if (p != PhysicalType::kInt32 && p != PhysicalType::kInt64 &&
        p != PhysicalType::kFixedLenByteArray && p != PhysicalType::kByteArray) {
      return no("decimal stored as " + PhysicalTypeName(p));
    }
    leaf->type = iceberg::Decimal(precision, scale);
    return true;
  }
  switch (p) {
    case PhysicalType::kBoolean:
      return lt.kind == K::kNone ? prim(TypeId::kBoolean) : no("annotated BOOLEAN");
    case PhysicalType::kFloat:
      return lt.kind == K::kNone ? prim(TypeId::kFloat) : no("annotated FLOAT");
    case PhysicalType::kDouble:
      return lt.kind == K::kNone ? prim(TypeId::kDouble) : no("annotated DOUBLE");
    case PhysicalType::kInt96:
      return no("INT96 is not supported");
    case PhysicalType::kInt32: {
      if (lt.kind == K::kDate || (lt.kind == K::kNone && Is(e, ConvertedType::kDate)))
        return prim(TypeId::kDate);
      if ((lt.kind == K::kTime && lt.unit == LogicalType::Unit::kMillis) ||
          (lt.kind == K::kNone && Is(e, ConvertedType::kTimeMillis))) {
        leaf->interp = SourceLeaf::Interp::kMillis;
        return prim(TypeId::kTime);
      }
      int bits = 32;
      bool is_signed = true;
      if (lt.kind == K::kInteger) {
        bits = lt.bit_width;
        is_signed = lt.is_signed;
      } else if (lt.kind != K::kNone) {
        return no("INT32 with an unsupported logical type");
      } else if (e.converted_type) {
        switch (*e.converted_type) {
          case ConvertedType::kInt8:
            bits = 8;
            break;
          case ConvertedType::kInt16:
            bits = 16;
            break;
          case ConvertedType::kInt32:
            bits = 32;
            break;
          case ConvertedType::kUint8:
            bits = 8, is_signed = false;
            break;
          case ConvertedType::kUint16:
            bits = 16, is_signed = false;
            break;
          case ConvertedType::kUint32:
            bits = 32, is_signed = false;
            break;
          default:
            return no("INT32 with an unsupported converted type");
        }
      }
      if (bits != 8 && bits != 16 && bits != 32)
        return no("INT32 holding " + std::to_string(bits) + "-bit integers");
      if (!is_signed && bits == 32) {
        leaf->interp = SourceLeaf::Interp::kUnsigned32;
        return prim(TypeId::kLong);
      }
      return prim(TypeId::kInt);
    }
    case PhysicalType::kInt64: {
      if (lt.kind == K::kTime || lt.kind == K::kTimestamp) {
        if (lt.unit == LogicalType::Unit::kNanos) return no("nanosecond times are not supported");
        if (lt.unit == LogicalType::Unit::kMillis) leaf->interp = SourceLeaf::Interp::kMillis;
        if (lt.kind == K::kTime) return prim(TypeId::kTime);
        return prim(lt.adjusted_to_utc ? TypeId::kTimestampTz : TypeId::kTimestamp);
      }
      if (lt.kind == K::kNone && e.converted_type) {
        switch (*e.converted_type) {
          case ConvertedType::kTimeMicros:
            return prim(TypeId::kTime);
          case ConvertedType::kTimestampMillis:
            leaf->interp = SourceLeaf::Interp::kMillis;
            return prim(TypeId::kTimestampTz);
          case ConvertedType::kTimestampMicros:
            return prim(TypeId::kTimestampTz);
          case ConvertedType::kInt64:
            return prim(TypeId::kLong);
          case ConvertedType::kUint64:
            return no("UINT_64 (unsigned 64-bit) has no Iceberg type");
          default:
            return no("INT64 with an unsupported converted type");
        }
      }
      if (lt.kind == K::kInteger) {
        if (lt.bit_width != 64 || !lt.is_signed)
          return no("INT64 holding unsigned (UINT_64) or narrow integers");
        return prim(TypeId::kLong);
      }
      return lt.kind == K::kNone ? prim(TypeId::kLong)
                                 : no("INT64 with an unsupported logical type");
    }
    case PhysicalType::kByteArray: {
      if (lt.kind == K::kString || lt.kind == K::kEnum || lt.kind == K::kJson)
        return prim(TypeId::kString);
      if (lt.kind == K::kBson) return prim(TypeId::kBinary);
      if (lt.kind != K::kNone) return no("BYTE_ARRAY with an unsupported logical type");
      if (!e.converted_type) return prim(TypeId::kBinary);
      switch (*e.converted_type) {
        case ConvertedType::kUtf8:
        case ConvertedType::kEnum:
        case ConvertedType::kJson:
          return prim(TypeId::kString);
        case ConvertedType::kBson:
          return prim(TypeId::kBinary);
        default:
          return no("BYTE_ARRAY with an unsupported converted type");
      }
    }
    case PhysicalType::kFixedLenByteArray: {
      if (lt.kind == K::kUuid) {
        if (leaf->type_length != 16) return no("UUID not 16 bytes wide");
        return prim(TypeId::kUuid);
      }
      if (lt.kind == K::kFloat16) return no("FLOAT16 has no Iceberg type");
      if (Is(e, ConvertedType::kInterval)) return no("INTERVAL has no Iceberg type");
      if (lt.kind != K::kNone || e.converted_type)
        return no("FIXED_LEN_BYTE_ARRAY with an unsupported annotation");
      leaf->type = iceberg::Fixed(leaf->type_length);
      return true;
    }
  }
  return no("unknown physical type " + PhysicalTypeName(p));
}

struct Walker {
  std::vector<SchemaElement>& elements;  // a private copy (RepeatedAsElement edits it)
  std::vector<SourceLeaf>* leaves;
  std::vector<std::string>* skipped;
  std::vector<int32_t>* skipped_ids;
  std::vector<int> file_leaf;  // derived leaf -> file leaf, in order
  int32_t next_id = 0;
  size_t pos = 0;
  std::vector<std::string> path;

  Status Bad(const std::string& what) const {
    return Corruption("parquet schema: " + what + " (element " + std::to_string(pos) + ")");
  }
  // Iceberg ids are positive: a missing, zero or negative field_id gets a synthetic one.
  int32_t IdOf(const SchemaElement& e) {
    return e.field_id && *e.field_id > 0 ? *e.field_id : next_id++;
  }
  std::string Dotted() const {
    std::string s;
    for (const auto& p : path) s += (s.empty() ? "" : ".") + p;
    return s;
  }
  // Records the ids of the elements [begin, end) as skipped.
  void SkipIds(size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      if (elements[i].field_id && *elements[i].field_id > 0)
        skipped_ids->push_back(*elements[i].field_id);
    }
  }

  // Reads the subtree at elements[pos]. `def`/`rep` are the parent's levels. *out is
  // unset when the subtree has nothing readable.
  Status Node(int16_t def, int16_t rep, int depth, std::optional<NestedField>* out) {
    if (depth > kMaxDepth) return Bad("nesting deeper than " + std::to_string(kMaxDepth));
    if (pos >= elements.size()) return Bad("fewer elements than num_children announce");
    const size_t begin = pos;
    const SchemaElement& e = elements[pos++];
    if (!IsValidUtf8(e.name)) return Bad("a name that is not UTF-8");
    Repetition repetition = e.repetition_type.value_or(Repetition::kOptional);
    if (repetition != Repetition::kRequired && repetition != Repetition::kOptional &&
        repetition != Repetition::kRepeated) {
      return Bad("unknown repetition type");
    }
    const int16_t my_def =
        static_cast<int16_t>(def + (repetition == Repetition::kRequired ? 0 : 1));
    const int16_t my_rep =
        static_cast<int16_t>(rep + (repetition == Repetition::kRepeated ? 1 : 0));
    path.push_back(e.name);
    struct PopPath {
      std::vector<std::string>* p;
      ~PopPath() { p->pop_back(); }
    } pop{&path};

    if (!e.num_children) {
      if (!e.type) return Bad("leaf " + Dotted() + " has no type");
      SourceLeaf leaf;
      leaf.index = static_cast<int>(leaves->size());
      leaf.path = Dotted();
      leaf.physical = *e.type;
      leaf.type_length = e.type_length.value_or(0);
      if (leaf.physical == PhysicalType::kFixedLenByteArray && leaf.type_length <= 0) {
        return Bad("FIXED_LEN_BYTE_ARRAY " + leaf.path + " without a positive type_length");
      }
      leaf.max_def = my_def;
      leaf.max_rep = my_rep;
      leaf.field_id = IdOf(e);
      std::string why;
      leaf.supported = LeafType(e, &leaf, &why);
      if (leaf.supported && repetition == Repetition::kRepeated) {
        leaf.supported = false;
        why = "repeated field outside a LIST group";
      }
      leaf.unsupported = why;
      if (leaf.supported) {
        file_leaf.push_back(leaf.index);
        *out =
            NestedField{leaf.field_id, e.name, repetition == Repetition::kRequired, leaf.type, ""};
      } else {
        skipped->push_back(leaf.path + ": " + why);
        SkipIds(begin, pos);
      }
      leaves->push_back(std::move(leaf));
      return Status::OK();
    }

    if (*e.num_children <= 0) return Bad("group " + Dotted() + " has no children");
    if (static_cast<size_t>(*e.num_children) > elements.size() - pos) {
      return Bad("group " + Dotted() + " announces more children than the schema holds");
    }
    const int32_t id = IdOf(e);
    const bool is_list =
        e.logical_type.kind == LogicalType::Kind::kList || Is(e, ConvertedType::kList);
    const bool is_map = e.logical_type.kind == LogicalType::Kind::kMap ||
                        Is(e, ConvertedType::kMap) || Is(e, ConvertedType::kMapKeyValue);
    const bool required = repetition == Repetition::kRequired;
    const size_t derived_leaves_before = file_leaf.size();
    auto drop = [&](const std::string& why) {
      skipped->push_back(Dotted() + ": " + why);
      SkipIds(begin, pos);
      file_leaf.resize(derived_leaves_before);
      out->reset();
      return Status::OK();
    };

    if (repetition == Repetition::kRepeated) {
      // Skip the subtree, then drop it.
      for (int32_t i = 0; i < *e.num_children; ++i) {
        std::optional<NestedField> ignored;
        RETURN_IF_ERROR(Node(my_def, my_rep, depth + 1, &ignored));
      }
      return drop("repeated group outside a LIST or MAP");
    }

    if (is_list || is_map) {
      if (*e.num_children != 1) {
        for (int32_t i = 0; i < *e.num_children; ++i) {
          std::optional<NestedField> ignored;
          RETURN_IF_ERROR(Node(my_def, my_rep, depth + 1, &ignored));
        }
        return drop(std::string(is_list ? "LIST" : "MAP") + " group without exactly one child");
      }
      const SchemaElement& r = elements[pos];
      if (r.repetition_type.value_or(Repetition::kOptional) != Repetition::kRepeated) {
        std::optional<NestedField> ignored;
        RETURN_IF_ERROR(Node(my_def, my_rep, depth + 1, &ignored));
        return drop(std::string(is_list ? "LIST" : "MAP") + " group whose child is not repeated");
      }
      const int16_t r_def = static_cast<int16_t>(my_def + 1);
      const int16_t r_rep = static_cast<int16_t>(my_rep + 1);
      if (is_list) {
        // Backward-compatibility rules (LogicalTypes.md "Lists").
        bool r_is_element = !r.num_children || *r.num_children > 1 || r.name == "array" ||
                            r.name == e.name + "_tuple";
        if (!r_is_element && pos + 1 < elements.size() &&
            elements[pos + 1].repetition_type.value_or(Repetition::kOptional) ==
                Repetition::kRepeated) {
          r_is_element = true;
        }
        std::optional<NestedField> element;
        if (r_is_element) {
          // R is the element (required): read it as a non-repeated node at R's levels.
          RETURN_IF_ERROR(RepeatedAsElement(my_def, my_rep, depth + 1, &element));
        } else {
          // The middle group is no Iceberg field (an id on it is ignored).
          ++pos;
          path.push_back(r.name);
          Status st = Node(r_def, r_rep, depth + 2, &element);
          path.pop_back();
          RETURN_IF_ERROR(st);
        }
        if (!element) return drop("list element not readable");
        element->name = "element";
        *out = NestedField{id, e.name, required,
                           iceberg::List(element->id, element->required, element->type), ""};
        return Status::OK();
      }
      // MAP: repeated group key_value { required key; value }.
      if (!r.num_children || *r.num_children != 2) {
        std::optional<NestedField> ignored;
        RETURN_IF_ERROR(Node(my_def, my_rep, depth + 1, &ignored));
        return drop("MAP without both a key and a value");
      }
      ++pos;
      path.push_back(r.name);
      std::optional<NestedField> key, value;
      Status st = Node(r_def, r_rep, depth + 2, &key);
      if (st.ok()) st = Node(r_def, r_rep, depth + 2, &value);
      path.pop_back();
      RETURN_IF_ERROR(st);
      if (!key || !value) return drop("map key or value not readable");
      if (!key->required) return drop("map key is optional");
      *out = NestedField{id, e.name, required,
                         iceberg::Map(key->id, key->type, value->id, value->required, value->type),
                         ""};
      return Status::OK();
    }

    // A struct.
    std::vector<NestedField> fields;
    for (int32_t i = 0; i < *e.num_children; ++i) {
      std::optional<NestedField> f;
      RETURN_IF_ERROR(Node(my_def, my_rep, depth + 1, &f));
      if (f) fields.push_back(std::move(*f));
    }
    if (fields.empty()) return drop("no readable field");
    *out = NestedField{id, e.name, required, iceberg::Struct(std::move(fields)), ""};
    return Status::OK();
  }

  // elements[pos] is a repeated node that is itself a list's element: read as a
  // required node whose parent levels are one deeper, it gets the levels the file gives
  // it (a repeated node adds one to both).
  Status RepeatedAsElement(int16_t list_def, int16_t list_rep, int depth,
                           std::optional<NestedField>* out) {
    elements[pos].repetition_type = Repetition::kRequired;
    return Node(static_cast<int16_t>(list_def + 1), static_cast<int16_t>(list_rep + 1), depth, out);
  }
};

}  // namespace

Result<FileSchema> FileSchema::Make(const std::vector<SchemaElement>& elements_in) {
  if (elements_in.empty()) return Corruption("parquet schema: no elements");
  // A private copy: list elements stored as repeated nodes are re-read as required ones.
  std::vector<SchemaElement> elements = elements_in;
  FileSchema fs;
  for (const auto& e : elements) {
    if (e.field_id) fs.max_file_id_ = std::max(fs.max_file_id_, *e.field_id);
  }
  if (fs.max_file_id_ >
      INT32_MAX - static_cast<int32_t>(std::min<size_t>(elements.size(), INT32_MAX / 2))) {
    return Corruption("parquet schema: field ids too large");
  }
  const SchemaElement& root = elements[0];
  if (!root.num_children || *root.num_children < 0 ||
      static_cast<size_t>(*root.num_children) > elements.size() - 1) {
    return Corruption("parquet schema: root announces " +
                      std::to_string(root.num_children.value_or(-1)) + " children for " +
                      std::to_string(elements.size() - 1) + " elements");
  }
  Walker w{elements, &fs.leaves_, &fs.skipped_, &fs.skipped_ids_, {}, fs.max_file_id_ + 1, 1, {}};
  iceberg::Schema schema;
  for (int32_t i = 0; i < *root.num_children; ++i) {
    std::optional<NestedField> f;
    RETURN_IF_ERROR(w.Node(0, 0, 1, &f));
    if (f) schema.fields.push_back(std::move(*f));
  }
  if (w.pos != elements.size()) {
    return Corruption("parquet schema: " + std::to_string(elements.size() - w.pos) +
                      " elements outside the tree");
  }
  fs.file_leaf_ = std::move(w.file_leaf);
  fs.iceberg_ = std::make_unique<iceberg::Schema>(schema);
  if (!schema.fields.empty()) {
    auto ps = ParquetSchema::Make(schema);
    if (!ps.ok()) return Corruption("parquet schema: " + ps.status().message());
    fs.parquet_ = std::make_unique<ParquetSchema>(std::move(*ps));
    const auto& cols = fs.parquet_->columns();
    if (cols.size() != fs.file_leaf_.size())
      return Internal("parquet schema: derived leaves differ");
    for (size_t i = 0; i < cols.size(); ++i) {
      const SourceLeaf& leaf = fs.leaves_[static_cast<size_t>(fs.file_leaf_[i])];
      if (cols[i].max_def != leaf.max_def || cols[i].max_rep != leaf.max_rep) {
        return Unimplemented("parquet schema: the levels of " + leaf.path +
                             " do not follow the LIST/MAP rules");
      }
    }
    fs.Index(fs.parquet_->root(), nullptr);
  }
  return fs;
}

void FileSchema::Index(const ShredNode& node, const ShredNode* parent) {
  for (const auto& child : node.children) {
    nodes_[child.field_id] = {&child, parent};
    Index(child, &child);
  }
}

const ShredNode* FileSchema::FindNode(int32_t field_id) const {
  auto it = nodes_.find(field_id);
  return it == nodes_.end() ? nullptr : it->second.first;
}

const ShredNode* FileSchema::Parent(int32_t field_id) const {
  auto it = nodes_.find(field_id);
  return it == nodes_.end() ? nullptr : it->second.second;
}

bool FileSchema::is_skipped_id(int32_t field_id) const {
  return std::find(skipped_ids_.begin(), skipped_ids_.end(), field_id) != skipped_ids_.end();
}

}  // namespace icestream::format::parquet
