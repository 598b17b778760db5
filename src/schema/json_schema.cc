// JSON Schema -> Iceberg schema mapping (kds-delivery-spec.md §2.5).
#include "schema/json_schema.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "iceberg/schema/schema_json.h"

namespace icestream::schema {

using iceberg::NestedField;
using iceberg::Type;
using iceberg::TypeId;
using json = nlohmann::ordered_json;

namespace {

constexpr int64_t kInt32Min = INT32_MIN;
constexpr int64_t kInt32Max = INT32_MAX;

// A node waiting for ids: the Iceberg type is built after all ids are known.
struct Pending {
  int32_t id = 0;
  std::string name;
  bool required = false;
  const json* schema = nullptr;
  std::string pointer;
};

class Mapper {
 public:
  explicit Mapper(const JsonSchemaOptions& options) : options_(options) {}

  Result<ConvertibleSchema> Run(const json& root) {
    if (!root.is_object()) return InvalidArgument("JSON Schema must be an object");
    ASSIGN_OR_RETURN(auto kind, TypeOf(root, ""));
    if (kind.first != "object" || !root.contains("properties")) {
      return InvalidArgument("the root of the JSON Schema must be an object with properties");
    }
    ConvertibleSchema out;
    ASSIGN_OR_RETURN(Type t, Struct(root, "", 0));
    out.schema.fields = std::move(t.fields);
    out.constraints = std::move(constraints_);
    RETURN_IF_ERROR(iceberg::Validate(out.schema));
    return out;
  }

 private:
  // The JSON type name and whether null is allowed.
  Result<std::pair<std::string, bool>> TypeOf(const json& s, const std::string& ptr) {
    for (const char* kw : {"$ref", "oneOf", "anyOf", "allOf", "not"}) {
      if (s.contains(kw)) return Unimplemented(ptr + ": \"" + kw + "\" is not supported");
    }
    // An enum that lists null makes the field nullable like a [T, "null"] type does.
    bool enum_null = false;
    if (auto e = s.find("enum"); e != s.end() && e->is_array()) {
      for (const auto& v : *e) enum_null = enum_null || v.is_null();
    }
    auto t = s.find("type");
    if (t == s.end()) {
      if (s.contains("enum")) return std::pair<std::string, bool>{"enum", enum_null};
      return InvalidArgument(ptr + ": missing \"type\"");
    }
    if (t->is_string()) {
      std::string name = t->get<std::string>();
      if (s.contains("enum")) return std::pair<std::string, bool>{"enum", enum_null};
      return std::pair<std::string, bool>{name, false};
    }
    if (t->is_array()) {
      std::string name;
      bool nullable = false;
      for (const auto& e : *t) {
        if (!e.is_string()) return InvalidArgument(ptr + ": \"type\" entries must be strings");
        if (e == "null") {
          nullable = true;
        } else if (name.empty()) {
          name = e.get<std::string>();
        } else {
          return Unimplemented(ptr + ": union types other than [T, \"null\"] are not supported");
        }
      }
      if (name.empty()) return InvalidArgument(ptr + ": a field cannot only be null");
      if (s.contains("enum")) name = "enum";
      return std::pair<std::string, bool>{name, nullable || enum_null};
    }
    return InvalidArgument(ptr + ": \"type\" must be a string or an array");
  }

  static std::optional<double> Num(const json& s, const char* kw) {
    auto it = s.find(kw);
    if (it == s.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  }

  // Like Num, but integers keep all their digits (long double holds every int64).
  static std::optional<long double> NumExact(const json& s, const char* kw) {
    auto it = s.find(kw);
    if (it == s.end() || !it->is_number()) return std::nullopt;
    if (it->is_number_unsigned()) return static_cast<long double>(it->get<uint64_t>());
    if (it->is_number_integer()) return static_cast<long double>(it->get<int64_t>());
    return it->get<double>();
  }

  // A positive multipleOf as unscaled / 10^scale, read from the shortest decimal text
  // that gives back the same double (0.01 -> 1 / 10^2, 1.5 -> 15 / 10^1, 5 -> 5 / 10^0).
  static Status DecimalOf(double m, const std::string& ptr, int128* unscaled, int32_t* scale) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, m);
    if (ec != std::errc()) return InvalidArgument(ptr + ": \"multipleOf\" is not a number");
    std::string_view text(buf, static_cast<size_t>(end - buf));
    for (int32_t sc = 0; sc < 38; ++sc) {
      if (ParseDecimal(text, 38, sc, unscaled) == ParseOutcome::kOk) {
        *scale = sc;
        return Status::OK();
      }
    }
    return InvalidArgument(ptr + ": \"multipleOf\" needs more than 37 decimal places or 38 digits");
  }

  // Integer bounds, draft-04 (boolean exclusive*) and draft-07 (numeric exclusive*).
  Status IntegerBounds(const json& s, FieldConstraints* c, bool* fits_int) {
    std::optional<long double> lo = NumExact(s, "minimum"), hi = NumExact(s, "maximum");
    std::optional<long double> xlo = NumExact(s, "exclusiveMinimum"),
                               xhi = NumExact(s, "exclusiveMaximum");
    auto is_true = [&](const char* kw) {
      auto it = s.find(kw);
      return it != s.end() && it->is_boolean() && it->get<bool>();
    };
    std::optional<long double> min, max;  // inclusive integer bounds
    if (lo) min = is_true("exclusiveMinimum") ? std::floor(*lo) + 1 : std::ceil(*lo);
    if (xlo) min = std::max<long double>(min.value_or(-INFINITY), std::floor(*xlo) + 1);
    if (hi) max = is_true("exclusiveMaximum") ? std::ceil(*hi) - 1 : std::floor(*hi);
    if (xhi) max = std::min<long double>(max.value_or(INFINITY), std::ceil(*xhi) - 1);
    // An empty range (minimum 2, maximum 1) is kept as such: every value is refused.
    auto clamp = [](long double v) -> int64_t {
      if (v <= static_cast<long double>(INT64_MIN)) return INT64_MIN;
      if (v >= static_cast<long double>(INT64_MAX)) return INT64_MAX;
      return static_cast<int64_t>(v);
    };
    if (min) c->min_int = clamp(*min);
    if (max) c->max_int = clamp(*max);
    // §2.5: an integer whose maximum fits in 32 bits maps to int; a lower bound below
    // the int range makes it long.
    *fits_int = c->max_int && *c->max_int <= kInt32Max && (!c->min_int || *c->min_int >= kInt32Min);
    return Status::OK();
  }

  Result<Type> Primitive(const json& s, const std::string& kind, int32_t id,
                         const std::string& ptr) {
    FieldConstraints& c = constraints_[id];
    if (kind == "enum") {
      const json& e = s["enum"];
      if (!e.is_array() || e.empty())
        return InvalidArgument(ptr + ": \"enum\" must be a non-empty array");
      c.has_enum = true;
      for (const auto& v : e) {
        if (v.is_null()) {
          c.nullable = true;
          continue;
        }
        if (v.is_object() || v.is_array())
          return Unimplemented(ptr + ": enum values must be scalars");
        if (v.is_string()) {
          c.enum_values.push_back(v.get<std::string>());
        } else if (v.is_number()) {
          c.enum_numbers.push_back(v.get<double>());
        } else {
          c.enum_json_values.push_back(v.dump());
        }
      }
      // The declared type, if any ("type": T or [T, "null"]), still holds for the values.
      if (auto t = s.find("type"); t != s.end()) {
        if (t->is_string()) {
          c.enum_type = t->get<std::string>();
        } else if (t->is_array()) {
          for (const auto& member : *t) {
            if (member.is_string() && member != "null") c.enum_type = member.get<std::string>();
          }
        }
      }
      return iceberg::Primitive(TypeId::kString);
    }
    if (kind == "string") {
      std::string format = s.value("format", "");
      std::string encoding = s.value("contentEncoding", "");
      if (format == "date-time") return iceberg::Primitive(TypeId::kTimestampTz);
      if (format == "date") return iceberg::Primitive(TypeId::kDate);
      if (format == "time") return iceberg::Primitive(TypeId::kTime);
      if (format == "uuid") return iceberg::Primitive(TypeId::kUuid);
      if (format == "byte" || format == "base64" || encoding == "base64") {
        return iceberg::Primitive(TypeId::kBinary);
      }
      return iceberg::Primitive(TypeId::kString);
    }
    if (kind == "integer") {
      bool fits_int = false;
      RETURN_IF_ERROR(IntegerBounds(s, &c, &fits_int));
      if (auto m = Num(s, "multipleOf")) {
        if (!(*m > 0)) return InvalidArgument(ptr + ": \"multipleOf\" must be positive");
        if (*m == std::floor(*m) && *m < 9.2e18) {
          if (*m > 1) c.int_multiple_of = static_cast<int64_t>(*m);
        } else {
          int128 unscaled = 0;
          int32_t scale = 0;
          RETURN_IF_ERROR(DecimalOf(*m, ptr, &unscaled, &scale));
          if (scale > 18) {
            return InvalidArgument(
                ptr + ": \"multipleOf\" of an integer needs more than 18 decimal places");
          }
          c.int_multiple_of_unscaled = unscaled;
          c.int_multiple_of_scale = scale;
        }
      }
      return iceberg::Primitive(fits_int ? TypeId::kInt : TypeId::kLong);
    }
    if (kind == "number") {
      // Bounds hold for decimals and doubles alike.
      c.min_number = Num(s, "minimum");
      c.max_number = Num(s, "maximum");
      auto flag = [&](const char* kw) {
        auto it = s.find(kw);
        return it != s.end() && it->is_boolean() && it->get<bool>();
      };
      c.exclusive_min_number = flag("exclusiveMinimum");
      c.exclusive_max_number = flag("exclusiveMaximum");
      if (auto x = Num(s, "exclusiveMinimum")) {
        c.min_number = x;
        c.exclusive_min_number = true;
      }
      if (auto x = Num(s, "exclusiveMaximum")) {
        c.max_number = x;
        c.exclusive_max_number = true;
      }
      if (auto m = Num(s, "multipleOf")) {
        if (!(*m > 0)) return InvalidArgument(ptr + ": \"multipleOf\" must be positive");
        // The scale is the number of decimal places of multipleOf (0.001 -> 3).
        int32_t scale = 0;
        int128 unscaled = 0;
        RETURN_IF_ERROR(DecimalOf(*m, ptr, &unscaled, &scale));
        c.multiple_of = unscaled;
        return iceberg::Decimal(38, scale);
      }
      return iceberg::Primitive(TypeId::kDouble);
    }
    if (kind == "boolean") return iceberg::Primitive(TypeId::kBoolean);
    return InvalidArgument(ptr + ": unsupported type \"" + kind + "\"");
  }

  // The type of node `s` whose own id is `id` (ids of nested children are assigned here).
  Result<Type> TypeFor(const json& s, int32_t id, const std::string& ptr, int depth) {
    ASSIGN_OR_RETURN(auto kind, TypeOf(s, ptr));
    if (kind.first == "object") {
      if (depth + 1 > options_.max_depth) {
        return InvalidArgument(ptr + ": nesting deeper than " + std::to_string(options_.max_depth));
      }
      if (s.contains("properties")) return Struct(s, ptr, depth + 1);
      auto ap = s.find("additionalProperties");
      if (ap == s.end() || !ap->is_object()) {
        return InvalidArgument(
            ptr + ": an object needs \"properties\" or an \"additionalProperties\" schema");
      }
      int32_t key_id = next_id_++;
      int32_t value_id = next_id_++;
      ASSIGN_OR_RETURN(auto vkind, TypeOf(*ap, ptr + "/additionalProperties"));
      constraints_[key_id].must_be_present = true;
      constraints_[value_id].nullable = vkind.second;
      ASSIGN_OR_RETURN(Type value,
                       TypeFor(*ap, value_id, ptr + "/additionalProperties", depth + 1));
      return iceberg::Map(key_id, iceberg::Primitive(TypeId::kString), value_id, !vkind.second,
                          std::move(value));
    }
    if (kind.first == "array") {
      if (depth + 1 > options_.max_depth) {
        return InvalidArgument(ptr + ": nesting deeper than " + std::to_string(options_.max_depth));
      }
      auto items = s.find("items");
      if (items == s.end() || !items->is_object()) {
        return InvalidArgument(ptr + ": an array needs an \"items\" schema");
      }
      int32_t element_id = next_id_++;
      ASSIGN_OR_RETURN(auto ekind, TypeOf(*items, ptr + "/items"));
      constraints_[element_id].nullable = ekind.second;
      ASSIGN_OR_RETURN(Type element, TypeFor(*items, element_id, ptr + "/items", depth + 1));
      return iceberg::List(element_id, !ekind.second, std::move(element));
    }
    return Primitive(s, kind.first, id, ptr);
  }

  Result<Type> Struct(const json& s, const std::string& ptr, int depth) {
    const json& props = s["properties"];
    if (!props.is_object() || props.empty()) {
      return InvalidArgument(ptr + ": \"properties\" must be a non-empty object");
    }
    std::vector<std::string> required;
    if (auto r = s.find("required"); r != s.end() && r->is_array()) {
      for (const auto& n : *r) {
        if (n.is_string()) required.push_back(n.get<std::string>());
      }
    }
    std::vector<Pending> pending;
    for (const auto& [name, sub] : props.items()) {
      if (!sub.is_object())
        return InvalidArgument(ptr + "/properties/" + name + ": must be an object");
      Pending p;
      p.id = next_id_++;
      p.name = name;
      p.schema = &sub;
      p.pointer = ptr + "/properties/" + name;
      bool listed = std::find(required.begin(), required.end(), name) != required.end();
      ASSIGN_OR_RETURN(auto kind, TypeOf(sub, p.pointer));
      FieldConstraints& c = constraints_[p.id];
      c.must_be_present = listed;
      c.nullable = !listed || kind.second;
      p.required = listed && !kind.second;
      pending.push_back(std::move(p));
    }
    std::vector<NestedField> fields;
    for (auto& p : pending) {
      ASSIGN_OR_RETURN(Type t, TypeFor(*p.schema, p.id, p.pointer, depth));
      std::string doc;
      if (auto d = p.schema->find("description"); d != p.schema->end() && d->is_string()) {
        doc = d->get<std::string>();
      }
      fields.push_back(NestedField{p.id, p.name, p.required, std::move(t), std::move(doc)});
    }
    return iceberg::Struct(std::move(fields));
  }

  const JsonSchemaOptions& options_;
  int32_t next_id_ = 1;
  std::unordered_map<int32_t, FieldConstraints> constraints_;
};

void DefaultConstraints(const std::vector<NestedField>& fields,
                        std::unordered_map<int32_t, FieldConstraints>* out) {
  for (const auto& f : fields) {
    FieldConstraints& c = (*out)[f.id];
    c.nullable = !f.required;
    c.must_be_present = f.required;
    DefaultConstraints(f.type.fields, out);
  }
}

}  // namespace

Result<ConvertibleSchema> JsonSchemaToIceberg(std::string_view text,
                                              const JsonSchemaOptions& options) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("JSON Schema is not valid JSON");
  Mapper m(options);
  return m.Run(j);
}

Result<ConvertibleSchema> IcebergSchemaToConvertible(std::string_view text) {
  ConvertibleSchema out;
  ASSIGN_OR_RETURN(out.schema, iceberg::SchemaFromJson(text));
  DefaultConstraints(out.schema.fields, &out.constraints);
  return out;
}

Result<ConvertibleSchema> LoadConvertibleSchema(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("schema is not valid JSON");
  if (j.is_object() && j.value("type", json()) == "struct" && j.contains("fields")) {
    return IcebergSchemaToConvertible(text);
  }
  return JsonSchemaToIceberg(text);
}

}  // namespace icestream::schema
