// Iceberg schema <-> JSON (Iceberg spec Appendix C). Field order in the output follows
// the spec's examples so that files diff cleanly against the Java implementation's.
#include "iceberg/schema/schema_json.h"

#include <nlohmann/json.hpp>

namespace icestream::iceberg {

using nlohmann::json;

namespace {

json FieldToJson(const NestedField& f) {
  json j = json::object();
  j["id"] = f.id;
  j["name"] = f.name;
  j["required"] = f.required;
  j["type"] = TypeToJsonValue(f.type);
  if (!f.doc.empty()) j["doc"] = f.doc;
  return j;
}

json FieldsToJson(const std::vector<NestedField>& fields) {
  json arr = json::array();
  for (const auto& f : fields) arr.push_back(FieldToJson(f));
  return arr;
}

// Typed member access that turns a missing or mistyped member into a Status.
template <typename T>
Result<T> Member(const json& j, const char* name, std::string_view where) {
  auto it = j.find(name);
  if (it == j.end()) {
    return InvalidArgument(std::string(where) + ": missing \"" + name + "\"");
  }
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) return InvalidArgument(std::string(where) + ": \"" + name + "\" must be a boolean");
  } else if constexpr (std::is_integral_v<T>) {
    if (!it->is_number_integer()) {
      return InvalidArgument(std::string(where) + ": \"" + name + "\" must be an integer");
    }
    auto v = it->get<int64_t>();
    if (v < INT32_MIN || v > INT32_MAX) {
      return InvalidArgument(std::string(where) + ": \"" + name + "\" is out of range");
    }
    return static_cast<T>(v);
  } else {
    if (!it->is_string()) return InvalidArgument(std::string(where) + ": \"" + name + "\" must be a string");
  }
  return it->get<T>();
}

Result<NestedField> FieldFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("schema field must be an object");
  NestedField f;
  ASSIGN_OR_RETURN(f.id, Member<int32_t>(j, "id", "field"));
  std::string where = "field " + std::to_string(f.id);
  ASSIGN_OR_RETURN(f.name, Member<std::string>(j, "name", where));
  ASSIGN_OR_RETURN(f.required, Member<bool>(j, "required", where));
  auto t = j.find("type");
  if (t == j.end()) return InvalidArgument(where + ": missing \"type\"");
  ASSIGN_OR_RETURN(f.type, TypeFromJsonValue(*t));
  if (auto d = j.find("doc"); d != j.end() && d->is_string()) f.doc = d->get<std::string>();
  return f;
}

Result<std::vector<NestedField>> FieldsFromJson(const json& j) {
  auto it = j.find("fields");
  if (it == j.end() || !it->is_array()) return InvalidArgument("struct: \"fields\" must be an array");
  std::vector<NestedField> fields;
  fields.reserve(it->size());
  for (const auto& f : *it) {
    ASSIGN_OR_RETURN(auto field, FieldFromJson(f));
    fields.push_back(std::move(field));
  }
  return fields;
}

}  // namespace

json TypeToJsonValue(const Type& t) {
  switch (t.id) {
    case TypeId::kStruct: {
      json j = json::object();
      j["type"] = "struct";
      j["fields"] = FieldsToJson(t.fields);
      return j;
    }
    case TypeId::kList: {
      json j = json::object();
      j["type"] = "list";
      j["element-id"] = t.element().id;
      j["element"] = TypeToJsonValue(t.element().type);
      j["element-required"] = t.element().required;
      return j;
    }
    case TypeId::kMap: {
      json j = json::object();
      j["type"] = "map";
      j["key-id"] = t.key().id;
      j["key"] = TypeToJsonValue(t.key().type);
      j["value-id"] = t.value().id;
      j["value"] = TypeToJsonValue(t.value().type);
      j["value-required"] = t.value().required;
      return j;
    }
    default:
      return PrimitiveTypeName(t);
  }
}

json SchemaToJsonValue(const Schema& s) {
  json j = json::object();
  j["type"] = "struct";
  j["schema-id"] = s.schema_id;
  if (!s.identifier_field_ids.empty()) j["identifier-field-ids"] = s.identifier_field_ids;
  j["fields"] = FieldsToJson(s.fields);
  return j;
}

std::string SchemaToJson(const Schema& schema) { return SchemaToJsonValue(schema).dump(); }

// Types arrive in untrusted requests (create, add-schema, register) and each nesting level
// costs stack here and in every walker of the result. The spec sets no limit; no real
// schema comes near this one.
constexpr int kMaxTypeDepth = 100;
static thread_local int type_depth = 0;

Result<Type> TypeFromJsonValue(const json& j) {
  if (j.is_string()) return ParsePrimitiveType(j.get<std::string>());
  if (type_depth >= kMaxTypeDepth) {
    return InvalidArgument("type nests deeper than " + std::to_string(kMaxTypeDepth) + " levels");
  }
  ++type_depth;
  struct Leave {
    ~Leave() { --type_depth; }
  } leave;
  if (!j.is_object()) return InvalidArgument("type must be a string or an object");
  ASSIGN_OR_RETURN(std::string kind, Member<std::string>(j, "type", "type"));
  if (kind == "struct") {
    ASSIGN_OR_RETURN(auto fields, FieldsFromJson(j));
    return Struct(std::move(fields));
  }
  if (kind == "list") {
    ASSIGN_OR_RETURN(int32_t id, Member<int32_t>(j, "element-id", "list"));
    ASSIGN_OR_RETURN(bool required, Member<bool>(j, "element-required", "list"));
    auto e = j.find("element");
    if (e == j.end()) return InvalidArgument("list: missing \"element\"");
    ASSIGN_OR_RETURN(Type element, TypeFromJsonValue(*e));
    return List(id, required, std::move(element));
  }
  if (kind == "map") {
    ASSIGN_OR_RETURN(int32_t key_id, Member<int32_t>(j, "key-id", "map"));
    ASSIGN_OR_RETURN(int32_t value_id, Member<int32_t>(j, "value-id", "map"));
    ASSIGN_OR_RETURN(bool value_required, Member<bool>(j, "value-required", "map"));
    auto k = j.find("key");
    auto v = j.find("value");
    if (k == j.end() || v == j.end()) return InvalidArgument("map: missing \"key\" or \"value\"");
    ASSIGN_OR_RETURN(Type key, TypeFromJsonValue(*k));
    ASSIGN_OR_RETURN(Type value, TypeFromJsonValue(*v));
    return Map(key_id, std::move(key), value_id, value_required, std::move(value));
  }
  return InvalidArgument("unknown nested type \"" + kind + "\"");
}

Result<Schema> SchemaFromJsonValue(const json& j) {
  if (!j.is_object()) return InvalidArgument("schema must be a JSON object");
  if (auto t = j.find("type"); t != j.end() && *t != "struct") {
    return InvalidArgument("schema \"type\" must be \"struct\"");
  }
  Schema s;
  if (j.contains("schema-id")) {
    ASSIGN_OR_RETURN(s.schema_id, Member<int32_t>(j, "schema-id", "schema"));
  }
  if (auto ids = j.find("identifier-field-ids"); ids != j.end()) {
    if (!ids->is_array()) return InvalidArgument("schema: \"identifier-field-ids\" must be an array");
    for (const auto& id : *ids) {
      if (!id.is_number_integer()) return InvalidArgument("schema: identifier field ids must be integers");
      s.identifier_field_ids.push_back(id.get<int32_t>());
    }
  }
  ASSIGN_OR_RETURN(s.fields, FieldsFromJson(j));
  RETURN_IF_ERROR(Validate(s));
  return s;
}

Result<Schema> SchemaFromJson(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("schema is not valid JSON");
  return SchemaFromJsonValue(j);
}

}  // namespace icestream::iceberg
