// Avro schema JSON parsing (Avro specification, "Schema Declaration" and "Names").
#include "format/avro/schema.h"

#include <map>

#include <nlohmann/json.hpp>

namespace icestream::format::avro {

using nlohmann::json;

std::string_view AvroTypeName(AvroType type) {
  switch (type) {
    case AvroType::kNull: return "null";
    case AvroType::kBoolean: return "boolean";
    case AvroType::kInt: return "int";
    case AvroType::kLong: return "long";
    case AvroType::kFloat: return "float";
    case AvroType::kDouble: return "double";
    case AvroType::kBytes: return "bytes";
    case AvroType::kString: return "string";
    case AvroType::kRecord: return "record";
    case AvroType::kEnum: return "enum";
    case AvroType::kArray: return "array";
    case AvroType::kMap: return "map";
    case AvroType::kUnion: return "union";
    case AvroType::kFixed: return "fixed";
  }
  return "?";
}

int Node::FieldIndex(std::string_view field_name) const {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == field_name) return static_cast<int>(i);
  }
  return -1;
}

namespace {

std::optional<AvroType> PrimitiveByName(std::string_view name) {
  static const std::pair<std::string_view, AvroType> kPrimitives[] = {
      {"null", AvroType::kNull},     {"boolean", AvroType::kBoolean}, {"int", AvroType::kInt},
      {"long", AvroType::kLong},     {"float", AvroType::kFloat},     {"double", AvroType::kDouble},
      {"bytes", AvroType::kBytes},   {"string", AvroType::kString},
  };
  for (const auto& [n, t] : kPrimitives) {
    if (n == name) return t;
  }
  return std::nullopt;
}

std::optional<int32_t> IntAttr(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  int64_t v = it->get<int64_t>();
  if (v < INT32_MIN || v > INT32_MAX) return std::nullopt;
  return static_cast<int32_t>(v);
}

constexpr int kMaxDepth = 64;

}  // namespace

struct Schema::Builder {
  Schema* schema;
  std::map<std::string, const Node*, std::less<>> named;

  Node* NewNode(AvroType type) {
    schema->nodes_.push_back(std::make_unique<Node>());
    schema->nodes_.back()->type = type;
    return schema->nodes_.back().get();
  }

  static std::string FullName(const json& j, const std::string& enclosing_ns) {
    std::string name = j.value("name", "");
    if (name.find('.') != std::string::npos) return name;
    std::string ns = enclosing_ns;
    if (auto it = j.find("namespace"); it != j.end() && it->is_string()) ns = it->get<std::string>();
    return ns.empty() ? name : ns + "." + name;
  }

  Status Register(const std::string& full_name, const Node* node) {
    if (full_name.empty()) return InvalidArgument("avro schema: named type without a name");
    if (!named.emplace(full_name, node).second) {
      return InvalidArgument("avro schema: type '" + full_name + "' is defined twice");
    }
    return Status::OK();
  }

  Result<const Node*> Resolve(const std::string& name, const std::string& ns) {
    if (auto p = PrimitiveByName(name)) return static_cast<const Node*>(NewNode(*p));
    if (auto it = named.find(name); it != named.end()) return it->second;
    if (!ns.empty()) {
      if (auto it = named.find(ns + "." + name); it != named.end()) return it->second;
    }
    return InvalidArgument("avro schema: unknown type '" + name + "'");
  }

  Result<const Node*> Parse(const json& j, const std::string& ns, int depth) {
    if (depth > kMaxDepth) return InvalidArgument("avro schema: nested too deeply");
    if (j.is_string()) return Resolve(j.get<std::string>(), ns);
    if (j.is_array()) {
      Node* u = NewNode(AvroType::kUnion);
      for (const auto& b : j) {
        ASSIGN_OR_RETURN(const Node* branch, Parse(b, ns, depth + 1));
        if (branch->type == AvroType::kUnion) {
          return InvalidArgument("avro schema: a union may not contain a union");
        }
        u->branches.push_back(branch);
      }
      if (u->branches.empty()) return InvalidArgument("avro schema: empty union");
      return static_cast<const Node*>(u);
    }
    if (!j.is_object()) return InvalidArgument("avro schema: a type must be a string, array or object");
    auto t = j.find("type");
    if (t == j.end()) return InvalidArgument("avro schema: object without \"type\"");
    if (!t->is_string()) {
      // {"type": {...}} or {"type": [...]}: a wrapped type.
      return Parse(*t, ns, depth + 1);
    }
    std::string type = t->get<std::string>();
    Node* node = nullptr;
    if (auto p = PrimitiveByName(type)) {
      node = NewNode(*p);
    } else if (type == "record" || type == "error") {
      node = NewNode(AvroType::kRecord);
      node->name = FullName(j, ns);
      RETURN_IF_ERROR(Register(node->name, node));
      std::string inner_ns = node->name.substr(0, node->name.rfind('.') == std::string::npos
                                                      ? 0
                                                      : node->name.rfind('.'));
      auto f = j.find("fields");
      if (f == j.end() || !f->is_array()) {
        return InvalidArgument("avro schema: record '" + node->name + "' needs a \"fields\" array");
      }
      for (const auto& fj : *f) {
        if (!fj.is_object() || !fj.contains("name") || !fj["name"].is_string() ||
            !fj.contains("type")) {
          return InvalidArgument("avro schema: malformed field in record '" + node->name + "'");
        }
        Field field;
        field.name = fj["name"].get<std::string>();
        if (node->FieldIndex(field.name) >= 0) {
          return InvalidArgument("avro schema: duplicate field '" + field.name + "'");
        }
        ASSIGN_OR_RETURN(field.type, Parse(fj["type"], inner_ns, depth + 1));
        field.field_id = IntAttr(fj, "field-id");
        field.has_default = fj.contains("default");
        node->fields.push_back(std::move(field));
      }
    } else if (type == "enum") {
      node = NewNode(AvroType::kEnum);
      node->name = FullName(j, ns);
      RETURN_IF_ERROR(Register(node->name, node));
      auto s = j.find("symbols");
      if (s == j.end() || !s->is_array()) return InvalidArgument("avro schema: enum needs \"symbols\"");
      for (const auto& sym : *s) {
        if (!sym.is_string()) return InvalidArgument("avro schema: enum symbols must be strings");
        node->symbols.push_back(sym.get<std::string>());
      }
    } else if (type == "array") {
      node = NewNode(AvroType::kArray);
      auto it = j.find("items");
      if (it == j.end()) return InvalidArgument("avro schema: array needs \"items\"");
      ASSIGN_OR_RETURN(node->items, Parse(*it, ns, depth + 1));
      node->element_id = IntAttr(j, "element-id");
    } else if (type == "map") {
      node = NewNode(AvroType::kMap);
      auto it = j.find("values");
      if (it == j.end()) return InvalidArgument("avro schema: map needs \"values\"");
      ASSIGN_OR_RETURN(node->values, Parse(*it, ns, depth + 1));
      node->key_id = IntAttr(j, "key-id");
      node->value_id = IntAttr(j, "value-id");
    } else if (type == "fixed") {
      node = NewNode(AvroType::kFixed);
      node->name = FullName(j, ns);
      RETURN_IF_ERROR(Register(node->name, node));
      auto it = j.find("size");
      if (it == j.end() || !it->is_number_integer() || it->get<int64_t>() < 0) {
        return InvalidArgument("avro schema: fixed needs a non-negative \"size\"");
      }
      node->size = it->get<int64_t>();
    } else {
      ASSIGN_OR_RETURN(const Node* ref, Resolve(type, ns));
      return ref;
    }
    if (auto lt = j.find("logicalType"); lt != j.end() && lt->is_string()) {
      node->logical_type = lt->get<std::string>();
    }
    node->precision = IntAttr(j, "precision").value_or(0);
    node->scale = IntAttr(j, "scale").value_or(0);
    if (auto a = j.find("adjust-to-utc"); a != j.end() && a->is_boolean()) {
      node->adjust_to_utc = a->get<bool>();
    }
    return static_cast<const Node*>(node);
  }
};

Result<std::shared_ptr<const Schema>> Schema::Parse(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("avro schema: not valid JSON");
  std::shared_ptr<Schema> schema(new Schema());
  Builder b{schema.get(), {}};
  ASSIGN_OR_RETURN(schema->root_, b.Parse(j, "", 0));
  return std::shared_ptr<const Schema>(std::move(schema));
}

}  // namespace icestream::format::avro
