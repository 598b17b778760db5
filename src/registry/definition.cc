// Registry schema definitions: syntax checks per data format.
#include "registry/definition.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "common/json_depth.h"
#include "format/avro/schema.h"
#include "registry/ecma_pattern.h"

namespace icestream::registry {

using nlohmann::json;

std::string_view DataFormatName(DataFormat f) {
  switch (f) {
    case DataFormat::kAvro: return "AVRO";
    case DataFormat::kJson: return "JSON";
    case DataFormat::kProtobuf: return "PROTOBUF";
  }
  return "";
}

bool ParseDataFormat(std::string_view s, DataFormat* out) {
  if (s == "AVRO") *out = DataFormat::kAvro;
  else if (s == "JSON") *out = DataFormat::kJson;
  else if (s == "PROTOBUF") *out = DataFormat::kProtobuf;
  else return false;
  return true;
}

namespace {

Status Invalid(DataFormat f, const std::string& detail) {
  return InvalidArgument(fmt::format("Schema definition of {} data format is invalid: {}", DataFormatName(f), detail));
}

// ---------------------------------------------------------------- JSON Schema
class JsonSchemaChecker {
 public:
  // Empty string = fine; else the first problem found.
  std::string Check(const json& s, const std::string& path, int depth) {
    if (depth > 64) return path + ": nested too deeply";
    if (s.is_boolean()) return "";
    if (!s.is_object()) return path + ": a schema must be an object or a boolean";
    static const std::set<std::string> kTypes = {"null", "boolean", "object", "array", "number", "string", "integer"};
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      const json& v = it.value();
      std::string at = path + "/" + k;
      if (k == "type") {
        if (v.is_string()) {
          if (!kTypes.count(v.get<std::string>())) return at + ": '" + v.get<std::string>() + "' is not a JSON Schema type";
        } else if (v.is_array() && !v.empty()) {
          std::set<std::string> seen;
          for (const auto& t : v) {
            if (!t.is_string() || !kTypes.count(t.get<std::string>())) return at + ": every entry must be a JSON Schema type";
            if (!seen.insert(t.get<std::string>()).second) return at + ": type names must be unique";
          }
        } else {
          return at + ": must be a type name or a non-empty array of type names";
        }
      } else if (k == "properties" || k == "patternProperties" || k == "definitions" || k == "$defs") {
        if (!v.is_object()) return at + ": must be an object";
        for (auto p = v.begin(); p != v.end(); ++p) {
          if (k == "patternProperties") {
            if (auto why = CheckEcmaPattern(p.key()); !why.empty()) {
              return at + ": a key is not a valid regular expression (" + why + ")";
            }
          }
          if (auto e = Check(p.value(), at + "/" + p.key(), depth + 1); !e.empty()) return e;
        }
      } else if (k == "dependencies") {
        if (!v.is_object()) return at + ": must be an object";
        for (auto p = v.begin(); p != v.end(); ++p) {
          if (p.value().is_array()) {
            for (const auto& d : p.value()) {
              if (!d.is_string()) return at + ": property dependencies must be strings";
            }
          } else if (auto e = Check(p.value(), at + "/" + p.key(), depth + 1); !e.empty()) {
            return e;
          }
        }
      } else if (k == "required") {
        if (!v.is_array()) return at + ": must be an array of strings";
        std::set<std::string> seen;
        for (const auto& r : v) {
          if (!r.is_string()) return at + ": must be an array of strings";
          if (!seen.insert(r.get<std::string>()).second) return at + ": entries must be unique";
        }
      } else if (k == "items") {
        if (v.is_array()) {
          for (size_t i = 0; i < v.size(); ++i) {
            if (auto e = Check(v[i], at + "/" + std::to_string(i), depth + 1); !e.empty()) return e;
          }
        } else if (auto e = Check(v, at, depth + 1); !e.empty()) {
          return e;
        }
      } else if (k == "additionalItems" || k == "additionalProperties" || k == "not" || k == "contains" ||
                 k == "propertyNames" || k == "if" || k == "then" || k == "else") {
        if (auto e = Check(v, at, depth + 1); !e.empty()) return e;
      } else if (k == "allOf" || k == "anyOf" || k == "oneOf") {
        if (!v.is_array() || v.empty()) return at + ": must be a non-empty array of schemas";
        for (size_t i = 0; i < v.size(); ++i) {
          if (auto e = Check(v[i], at + "/" + std::to_string(i), depth + 1); !e.empty()) return e;
        }
      } else if (k == "enum") {
        if (!v.is_array() || v.empty()) return at + ": must be a non-empty array";
      } else if (k == "multipleOf") {
        if (!v.is_number() || v.get<double>() <= 0) return at + ": must be a number greater than 0";
      } else if (k == "minimum" || k == "maximum") {
        if (!v.is_number()) return at + ": must be a number";
      } else if (k == "exclusiveMinimum" || k == "exclusiveMaximum") {
        if (!v.is_number() && !v.is_boolean()) return at + ": must be a number (draft 6+) or a boolean (draft 4)";
      } else if (k == "minLength" || k == "maxLength" || k == "minItems" || k == "maxItems" ||
                 k == "minProperties" || k == "maxProperties") {
        if (!v.is_number_integer() || v.get<int64_t>() < 0) return at + ": must be a non-negative integer";
      } else if (k == "uniqueItems") {
        if (!v.is_boolean()) return at + ": must be a boolean";
      } else if (k == "pattern") {
        if (!v.is_string()) return at + ": must be a string";
        if (auto why = CheckEcmaPattern(v.get<std::string>()); !why.empty()) {
          return at + ": must be a valid regular expression (" + why + ")";
        }
      } else if (k == "$schema" || k == "$ref" || k == "$id" || k == "id" || k == "title" || k == "description" ||
                 k == "format" || k == "$comment" || k == "contentEncoding" || k == "contentMediaType") {
        if (!v.is_string()) return at + ": must be a string";
      }
      // Other keywords (default, examples, const, vendor extensions) are free-form.
    }
    return "";
  }
};

// ---------------------------------------------------------------- Avro
bool ValidAvroName(const std::string& full) {
  size_t start = 0;
  while (true) {
    size_t dot = full.find('.', start);
    std::string part = full.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (part.empty() || !(std::isalpha(static_cast<unsigned char>(part[0])) || part[0] == '_')) return false;
    for (char c : part) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    }
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

std::string CheckAvroNode(const format::avro::Node& n, std::set<const format::avro::Node*>* seen) {
  using format::avro::AvroType;
  if (!seen->insert(&n).second) return "";
  switch (n.type) {
    case AvroType::kRecord:
      if (!ValidAvroName(n.name)) return "'" + n.name + "' is not a valid Avro name";
      for (const auto& f : n.fields) {
        if (!ValidAvroName(f.name) || f.name.find('.') != std::string::npos) {
          return "field name '" + f.name + "' is not a valid Avro name";
        }
        if (auto e = CheckAvroNode(*f.type, seen); !e.empty()) return e;
      }
      return "";
    case AvroType::kEnum: {
      if (!ValidAvroName(n.name)) return "'" + n.name + "' is not a valid Avro name";
      std::set<std::string> symbols;
      for (const auto& s : n.symbols) {
        if (!ValidAvroName(s) || s.find('.') != std::string::npos) return "enum symbol '" + s + "' is not a valid name";
        if (!symbols.insert(s).second) return "enum symbol '" + s + "' appears twice";
      }
      return "";
    }
    case AvroType::kFixed: return ValidAvroName(n.name) ? "" : "'" + n.name + "' is not a valid Avro name";
    case AvroType::kArray: return CheckAvroNode(*n.items, seen);
    case AvroType::kMap: return CheckAvroNode(*n.values, seen);
    case AvroType::kUnion: {
      std::set<std::string> kinds;
      for (const auto* b : n.branches) {
        std::string kind = b->name.empty() ? std::string(format::avro::AvroTypeName(b->type)) : b->name;
        if (!kinds.insert(kind).second) return "a union may not hold two branches of type " + kind;
        if (auto e = CheckAvroNode(*b, seen); !e.empty()) return e;
      }
      return "";
    }
    default: return "";
  }
}

// ---------------------------------------------------------------- Protobuf
std::string CheckProto(std::string_view text) {
  int braces = 0, parens = 0, brackets = 0;
  bool in_string = false, line_comment = false, block_comment = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (line_comment) {
      if (c == '\n') line_comment = false;
      continue;
    }
    if (block_comment) {
      if (c == '*' && next == '/') {
        block_comment = false;
        ++i;
      }
      continue;
    }
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == quote) in_string = false;
      continue;
    }
    if (c == '/' && next == '/') line_comment = true;
    else if (c == '/' && next == '*') block_comment = true;
    else if (c == '"' || c == '\'') {
      in_string = true;
      quote = c;
    } else if (c == '{') ++braces;
    else if (c == '}') --braces;
    else if (c == '(') ++parens;
    else if (c == ')') --parens;
    else if (c == '[') ++brackets;
    else if (c == ']') --brackets;
    if (braces < 0 || parens < 0 || brackets < 0) return "unbalanced closing bracket";
  }
  if (in_string || block_comment) return "unterminated string or comment";
  if (braces || parens || brackets) return "unbalanced brackets";
  // A declaration "message|enum|service <identifier> {" at a word boundary (scanned by
  // hand: std::regex recursion is unsafe on 170 000-character inputs).
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::string_view kw : {"message", "enum", "service"}) {
    for (size_t pos = text.find(kw); pos != std::string_view::npos; pos = text.find(kw, pos + 1)) {
      if (pos > 0 && ident(text[pos - 1])) continue;
      size_t i = pos + kw.size();
      size_t ws = i;
      while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
      if (i == ws || i >= text.size() || !(std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '_')) continue;
      while (i < text.size() && ident(text[i])) ++i;
      while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
      if (i < text.size() && text[i] == '{') return "";
    }
  }
  return "no message, enum or service declaration";
}

}  // namespace

namespace {
// Definitions are untrusted text; their walkers (and json::dump) recurse once per level.
constexpr size_t kMaxDefinitionNesting = 256;
}  // namespace

Status CheckDefinition(DataFormat format, std::string_view def) {
  if (format != DataFormat::kProtobuf &&
      JsonNestingDepth(def, kMaxDefinitionNesting) > kMaxDefinitionNesting) {
    return Invalid(format,
                   "nests more than " + std::to_string(kMaxDefinitionNesting) + " levels deep");
  }
  switch (format) {
    case DataFormat::kJson: {
      json j = json::parse(def, nullptr, false);
      if (j.is_discarded()) return Invalid(format, "not valid JSON");
      JsonSchemaChecker c;
      if (auto e = c.Check(j, "#", 0); !e.empty()) return Invalid(format, e);
      return Status::OK();
    }
    case DataFormat::kAvro: {
      auto schema = format::avro::Schema::Parse(def);
      if (!schema.ok()) return Invalid(format, schema.status().message());
      std::set<const format::avro::Node*> seen;
      if (auto e = CheckAvroNode((*schema)->root(), &seen); !e.empty()) return Invalid(format, e);
      return Status::OK();
    }
    case DataFormat::kProtobuf:
      if (auto e = CheckProto(def); !e.empty()) return Invalid(format, e);
      return Status::OK();
  }
  return Invalid(format, "unknown data format");
}

std::string CanonicalDefinition(DataFormat format, std::string_view def) {
  if (format == DataFormat::kProtobuf) return std::string(def);
  if (JsonNestingDepth(def, kMaxDefinitionNesting) > kMaxDefinitionNesting) return std::string(def);
  json j = json::parse(def, nullptr, false);
  return j.is_discarded() ? std::string(def) : j.dump();
}

}  // namespace icestream::registry
