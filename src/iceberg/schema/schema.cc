// Iceberg schema model helpers: constructors, type names, validation, id lookups.
#include "iceberg/schema/schema.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <unordered_set>

namespace icestream::iceberg {

const NestedField& Type::element() const { return fields.at(0); }
const NestedField& Type::key() const { return fields.at(0); }
const NestedField& Type::value() const { return fields.at(1); }

bool Type::operator==(const Type& other) const {
  return id == other.id && precision == other.precision && scale == other.scale &&
         length == other.length && fields == other.fields;
}

Type Primitive(TypeId id) {
  Type t;
  t.id = id;
  return t;
}

Type Decimal(int32_t precision, int32_t scale) {
  Type t = Primitive(TypeId::kDecimal);
  t.precision = precision;
  t.scale = scale;
  return t;
}

Type Fixed(int32_t length) {
  Type t = Primitive(TypeId::kFixed);
  t.length = length;
  return t;
}

Type Struct(std::vector<NestedField> fields) {
  Type t = Primitive(TypeId::kStruct);
  t.fields = std::move(fields);
  return t;
}

Type List(int32_t element_id, bool element_required, Type element) {
  Type t = Primitive(TypeId::kList);
  t.fields.push_back(NestedField{element_id, "element", element_required, std::move(element), ""});
  return t;
}

Type Map(int32_t key_id, Type key, int32_t value_id, bool value_required, Type value) {
  Type t = Primitive(TypeId::kMap);
  t.fields.push_back(NestedField{key_id, "key", true, std::move(key), ""});
  t.fields.push_back(NestedField{value_id, "value", value_required, std::move(value), ""});
  return t;
}

std::string PrimitiveTypeName(const Type& type) {
  switch (type.id) {
    case TypeId::kBoolean: return "boolean";
    case TypeId::kInt: return "int";
    case TypeId::kLong: return "long";
    case TypeId::kFloat: return "float";
    case TypeId::kDouble: return "double";
    case TypeId::kDecimal:
      return "decimal(" + std::to_string(type.precision) + "," + std::to_string(type.scale) + ")";
    case TypeId::kDate: return "date";
    case TypeId::kTime: return "time";
    case TypeId::kTimestamp: return "timestamp";
    case TypeId::kTimestampTz: return "timestamptz";
    case TypeId::kString: return "string";
    case TypeId::kUuid: return "uuid";
    case TypeId::kFixed: return "fixed[" + std::to_string(type.length) + "]";
    case TypeId::kBinary: return "binary";
    case TypeId::kStruct: return "struct";
    case TypeId::kList: return "list";
    case TypeId::kMap: return "map";
  }
  return "?";
}

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::optional<int32_t> ParseInt(std::string_view s) {
  s = Trim(s);
  int32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

Result<Type> ParsePrimitiveType(std::string_view name) {
  static const std::pair<std::string_view, TypeId> kSimple[] = {
      {"boolean", TypeId::kBoolean},     {"int", TypeId::kInt},
      {"long", TypeId::kLong},           {"float", TypeId::kFloat},
      {"double", TypeId::kDouble},       {"date", TypeId::kDate},
      {"time", TypeId::kTime},           {"timestamp", TypeId::kTimestamp},
      {"timestamptz", TypeId::kTimestampTz}, {"string", TypeId::kString},
      {"uuid", TypeId::kUuid},           {"binary", TypeId::kBinary},
  };
  std::string_view n = Trim(name);
  for (const auto& [text, id] : kSimple) {
    if (n == text) return Primitive(id);
  }
  if (n.starts_with("decimal(") && n.ends_with(")")) {
    std::string_view args = n.substr(8, n.size() - 9);
    size_t comma = args.find(',');
    if (comma != std::string_view::npos) {
      auto p = ParseInt(args.substr(0, comma));
      auto s = ParseInt(args.substr(comma + 1));
      if (p && s) return Decimal(*p, *s);
    }
  }
  if (n.starts_with("fixed[") && n.ends_with("]")) {
    if (auto l = ParseInt(n.substr(6, n.size() - 7))) return Fixed(*l);
  }
  return InvalidArgument("unknown Iceberg type \"" + std::string(name) + "\"");
}

namespace {

struct Validator {
  std::unordered_set<int32_t> ids;

  Status Field(const NestedField& f, const std::string& path) {
    if (f.id <= 0) return InvalidArgument("field " + path + " has a non-positive id");
    if (!ids.insert(f.id).second) {
      return InvalidArgument("field id " + std::to_string(f.id) + " is used twice (" + path + ")");
    }
    return TypeOf(f.type, path);
  }

  Status TypeOf(const Type& t, const std::string& path) {
    switch (t.id) {
      case TypeId::kDecimal:
        if (t.precision < 1 || t.precision > 38 || t.scale < 0 || t.scale > t.precision) {
          return InvalidArgument(path + ": invalid " + PrimitiveTypeName(t));
        }
        return Status::OK();
      case TypeId::kFixed:
        if (t.length <= 0) return InvalidArgument(path + ": fixed length must be positive");
        return Status::OK();
      case TypeId::kStruct: {
        std::set<std::string_view> names;
        for (const auto& f : t.fields) {
          if (!names.insert(f.name).second) {
            return InvalidArgument(path + ": duplicate field name \"" + f.name + "\"");
          }
          RETURN_IF_ERROR(Field(f, path.empty() ? f.name : path + "." + f.name));
        }
        return Status::OK();
      }
      case TypeId::kList:
        if (t.fields.size() != 1) return InvalidArgument(path + ": list needs one element");
        return Field(t.element(), path + ".element");
      case TypeId::kMap:
        if (t.fields.size() != 2) return InvalidArgument(path + ": map needs key and value");
        if (!t.key().required) return InvalidArgument(path + ": map keys must be required");
        RETURN_IF_ERROR(Field(t.key(), path + ".key"));
        return Field(t.value(), path + ".value");
      default:
        return Status::OK();
    }
  }
};

// Identifier fields (spec "Identifier Field IDs"): primitive, required, not float or
// double, reachable through required structs only.
bool IsValidIdentifier(const std::vector<NestedField>& fields, int32_t id) {
  for (const auto& f : fields) {
    if (f.id == id) {
      return f.required && f.type.is_primitive() && f.type.id != TypeId::kFloat &&
             f.type.id != TypeId::kDouble;
    }
    if (f.type.id == TypeId::kStruct && f.required && IsValidIdentifier(f.type.fields, id)) {
      return true;
    }
  }
  return false;
}

const NestedField* FindIn(const std::vector<NestedField>& fields, int32_t id) {
  for (const auto& f : fields) {
    if (f.id == id) return &f;
    if (const NestedField* inner = FindIn(f.type.fields, id)) return inner;
  }
  return nullptr;
}

int32_t MaxIdIn(const std::vector<NestedField>& fields) {
  int32_t m = 0;
  for (const auto& f : fields) m = std::max({m, f.id, MaxIdIn(f.type.fields)});
  return m;
}

}  // namespace

Status Validate(const Schema& schema) {
  Validator v;
  RETURN_IF_ERROR(v.TypeOf(Struct(schema.fields), ""));
  for (int32_t id : schema.identifier_field_ids) {
    if (!IsValidIdentifier(schema.fields, id)) {
      return InvalidArgument("identifier field " + std::to_string(id) +
                             " is not a required primitive (non-float) field");
    }
  }
  return Status::OK();
}

int32_t HighestFieldId(const Schema& schema) { return MaxIdIn(schema.fields); }

const NestedField* FindField(const Schema& schema, int32_t id) { return FindIn(schema.fields, id); }

}  // namespace icestream::iceberg
